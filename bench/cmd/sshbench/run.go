package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"

	"gitlab.com/edge/edge/bench"
)

// path is one way to the workspace's sshd.
type path struct {
	name string
	c    *client
}

func run(ctx context.Context, o options, stdout io.Writer) (int, error) {
	for _, tool := range []string{"/usr/sbin/sshd", "ssh", "scp", "ssh-keygen"} {
		if _, err := exec.LookPath(tool); err != nil {
			return 1, fmt.Errorf("%s not found (make deps: openssh-server): %w", tool, err)
		}
	}
	dir, err := os.MkdirTemp("", "sshbench-")
	if err != nil {
		return 1, err
	}
	if o.keep {
		fmt.Fprintln(os.Stderr, "keeping", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	sup := &bench.Supervisor{Dir: dir, Name: "sshbench"}
	defer sup.StopAll()

	fmt.Fprintln(os.Stderr, "building edge")
	bin, err := bench.GoBuild(ctx, dir, "./cmd/edge", "edge")
	if err != nil {
		return 1, err
	}
	ws, err := startSSHD(ctx, sup, filepath.Join(dir, "sshd"))
	if err != nil {
		return 1, err
	}
	e, err := startEdge(ctx, sup, filepath.Join(dir, "edge.d"), bin, ws)
	if err != nil {
		return 1, err
	}
	clientDir := filepath.Join(dir, "client")
	if err := os.Mkdir(clientDir, 0o700); err != nil {
		return 1, err
	}
	direct, err := newClient(filepath.Join(clientDir, "direct"), ws.port, ws.user, ws.hostKey, ws.clientKeyFile, "")
	if err != nil {
		return 1, err
	}
	through, err := newClient(filepath.Join(clientDir, "edge"), e.sshPort, "bench", e.hostKey, "", e.token)
	if err != nil {
		return 1, err
	}
	// OpenSSH 9.2's client prefers sntrup761x25519-sha512, which edge's SSH server (Go's
	// x/crypto/ssh) does not offer: through edge the client gets curve25519-sha256. The third
	// latency case is the direct login with that key exchange, to tell edge's cost from the
	// key exchange's.
	directX := *direct
	directX.extra = []string{"-o", "KexAlgorithms=curve25519-sha256"}
	b := &benchmark{o: o, dir: dir, ws: ws, edge: e,
		paths: []path{{"direct to sshd", direct}, {"through edge", through}}}
	b.latPaths = []path{b.paths[0], b.paths[1], {"direct to sshd, curve25519-sha256", &directX}}
	notes, err := b.probe(ctx)
	if err != nil {
		return 1, err
	}
	res, err := b.measure(ctx)
	if err != nil {
		return 1, err
	}
	report(stdout, o, notes, res)
	return 0, nil
}
