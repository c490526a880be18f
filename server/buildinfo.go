package server

import (
	"runtime"
	"runtime/debug"
)

// BuildInfo is what this binary is: its version, commit and Go version.
type BuildInfo struct {
	Version, Commit, GoVersion string
}

// ReadBuildInfo takes what the Go toolchain stamped into the binary, so no link-time flags or
// package variables are needed.
func ReadBuildInfo() BuildInfo {
	b := BuildInfo{Version: "devel", Commit: "unknown", GoVersion: runtime.Version()}
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
