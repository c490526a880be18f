package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

type buildInfo struct {
	Version, Commit, GoVersion string
}

// readBuildInfo takes what the Go toolchain stamped into the binary, so no link-time flags or
// package variables are needed.
func readBuildInfo() buildInfo {
	b := buildInfo{Version: "devel", Commit: "unknown", GoVersion: runtime.Version()}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		b.Version = v
	}
	dirty := false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Commit = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if dirty {
		b.Commit += "-dirty"
	}
	return b
}

func cmdVersion(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("version", "version", stderr)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	b := readBuildInfo()
	fmt.Fprintf(stdout, "edge %s\ncommit %s\n%s\n", b.Version, b.Commit, b.GoVersion)
	return nil
}
