package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"gitlab.com/edge/edge/bench"
)

// benchmark is what the rounds run on: the ways to sshd, and the processes whose CPU they count.
type benchmark struct {
	o        options
	dir      string
	ws       *sshd
	edge     *edgeSide
	paths    []path // scp: direct, through edge
	latPaths []path // ssh true: those, and direct with edge's key exchange
}

type transfer struct {
	mbps     float64 // over the whole scp, login included
	dataMBps float64 // in the data phase
	wall     time.Duration
	cpu      [4]time.Duration // by cpuParts
}

// cpuParts are the processes whose CPU a transfer counts.
func cpuParts() [4]string {
	return [4]string{"client (scp + ssh)", "sshd (its processes for the connection)", "edge", "agent"}
}

// results are the rounds' samples: up and down by path, lat by latency path.
type results struct {
	up, down [][]transfer
	lat      [][]time.Duration
}

// probe logs in once each way to check every path works and is quiet, and notes the
// algorithms negotiated.
func (b *benchmark) probe(ctx context.Context) ([]string, error) {
	notes := make([]string, len(b.latPaths))
	for i, p := range b.latPaths {
		before := len(b.ws.proc.Output())
		out, stderr, err := p.c.ssh(ctx, []string{"-v"}, "echo", "ok")
		if err != nil || out != "ok\n" {
			return nil, fmt.Errorf("%s: ssh echo ok: %v %q\n%s\n%s\nsshd:\n%s", p.name, err, out, stderr,
				b.edge.tails(), b.ws.proc.Tail(4000))
		}
		// The measured runs write nothing: no prompt, banner or server log line.
		if out, stderr, err := p.c.ssh(ctx, nil, "true"); err != nil || out != "" || stderr != "" {
			return nil, fmt.Errorf("%s: ssh true: %v, stdout %q, stderr %q", p.name, err, out, stderr)
		}
		notes[i] = p.name + ": the client negotiated " + negotiated(stderr)
		if i == 1 {
			// sshd (LogLevel DEBUG1) logs what edge's client negotiated with it.
			time.Sleep(200 * time.Millisecond)
			notes[i] += "; edge with sshd: " + negotiated(b.ws.proc.Output()[before:])
		}
	}
	return notes, nil
}

// serverCPU is the CPU of the server side: sshd's listener with its reaped children (each
// connection's sshd processes, which have exited and been waited for by then), edge, the agent.
func (b *benchmark) serverCPU() [4]time.Duration {
	var v [4]time.Duration
	for i, p := range []*bench.Proc{b.ws.proc, b.edge.edge, b.edge.agent} {
		if st, err := bench.ReadProcStat("/proc", p.PID()); err == nil {
			v[i+1] = st.CPUWithChildren()
		}
	}
	return v
}

// measure runs the interleaved rounds.
func (b *benchmark) measure(ctx context.Context) (results, error) {
	res := results{up: make([][]transfer, len(b.paths)), down: make([][]transfer, len(b.paths)),
		lat: make([][]time.Duration, len(b.latPaths))}
	// The file scp copies: random bytes, so no layer can compress it.
	src := filepath.Join(b.dir, "src.bin")
	want, err := writeRandom(src, int64(b.o.sizeMiB)<<20)
	if err != nil {
		return res, err
	}
	remoteDir := filepath.Join(b.dir, "remote")
	localDir := filepath.Join(b.dir, "local")
	for _, d := range []string{remoteDir, localDir} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return res, err
		}
	}
	for r := range b.o.rounds {
		order := []int{0, 1}
		if r%2 == 1 {
			order = []int{1, 0}
		}
		for _, i := range order {
			remote := filepath.Join(remoteDir, "up.bin")
			local := filepath.Join(localDir, "down.bin")
			for _, dirn := range []string{"up", "down"} {
				from, to, check := src, "REMOTE:"+remote, remote
				if dirn == "down" {
					from, to, check = "REMOTE:"+remote, local, local
				}
				t, err := b.transfer(ctx, r, b.paths[i], dirn, from, to, check, want)
				if err != nil {
					return res, err
				}
				if dirn == "up" {
					res.up[i] = append(res.up[i], t)
				} else {
					res.down[i] = append(res.down[i], t)
				}
			}
			os.Remove(remote)
			os.Remove(local)
		}
		if err := b.latency(ctx, r, res.lat); err != nil {
			return res, err
		}
	}
	return res, nil
}

// transfer is one scp of the file, checked whole by its sha256.
func (b *benchmark) transfer(ctx context.Context, r int, p path, dirn, from, to, check, want string) (transfer, error) {
	bytesN := float64(int64(b.o.sizeMiB) << 20)
	cpu0 := b.serverCPU()
	res, out, err := p.c.scp(ctx, from, to, check, int64(bytesN))
	if err != nil {
		return transfer{}, fmt.Errorf("%s: scp %s: %w\n%s\n%s", p.name, dirn, err, out, b.edge.tails())
	}
	// Let sshd's listener reap the connection's processes, whose CPU it then counts.
	time.Sleep(300 * time.Millisecond)
	t := transfer{mbps: bytesN / res.wall.Seconds() / 1e6, wall: res.wall,
		dataMBps: float64(res.dataBytes) / res.data.Seconds() / 1e6}
	cpu1 := b.serverCPU()
	t.cpu[0] = res.cpu
	for k := 1; k < len(t.cpu); k++ {
		t.cpu[k] = cpu1[k] - cpu0[k]
	}
	if got, err := fileSHA(check); err != nil || got != want {
		return t, fmt.Errorf("%s: scp %s: %s has sha256 %s (%v), want %s", p.name, dirn, check, got, err, want)
	}
	fmt.Fprintf(os.Stderr, "round %d %s scp %s: %.1f MB/s in the data phase, %.1f MB/s over the whole scp (%s); CPU client %s, sshd %s, edge %s, agent %s\n",
		r+1, p.name, dirn, t.dataMBps, t.mbps, res.wall.Round(time.Millisecond), t.cpu[0], t.cpu[1], t.cpu[2], t.cpu[3])
	return t, nil
}

// latency times n `ssh ... true` each way, the order rotating, into lat.
func (b *benchmark) latency(ctx context.Context, r int, lat [][]time.Duration) error {
	n := b.o.n
	for k := range n {
		for j := range b.latPaths {
			i := (j + k + r) % len(b.latPaths) // rotate the order
			start := time.Now()
			out, stderr, err := b.latPaths[i].c.ssh(ctx, nil, "true")
			d := time.Since(start)
			if err != nil {
				return fmt.Errorf("%s: ssh true: %w %q %s", b.latPaths[i].name, err, out, stderr)
			}
			lat[i] = append(lat[i], d)
		}
	}
	msg := fmt.Sprintf("round %d ssh true, medians of %d:", r+1, n)
	for i, p := range b.latPaths {
		msg += fmt.Sprintf(" %s %s;", p.name, bench.MedianDuration(lat[i][len(lat[i])-n:]).Round(10*time.Microsecond))
	}
	fmt.Fprintln(os.Stderr, msg)
	return nil
}
