package main

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"gitlab.com/edge/edge/bench"
)

const (
	startTimeout = 30 * time.Second // a process, from its start to ready
	agentWait    = 40 * time.Second // an agent, from its (or its edge's) start to listed: its reconnect back-off is 1 to 20 s
)

// slot is one process of the cluster across its restarts: the ports stay, the process changes.
type slot struct {
	name   string
	proc   *bench.Proc
	runs   []*procRun // every process started, proc the last
	starts int        // processes started so far
	kills  int        // killed by the fault script
	down   bool       // the fault script killed it (or had it exit) and has not seen it ready again
}

// How the fault script ended a process.
const (
	endKill = "kill -9"
	endCut  = "exited after cutting an answer, as asked"
)

// procRun is one process of a slot and how it ended.
type procRun struct {
	proc     *bench.Proc
	started  time.Time
	ended    string    // endKill, endCut; "" when the fault script did not end it
	exitedAt time.Time // zero while it runs
}

type cellSlot struct {
	slot
	id                    uint64
	addr, control, ledger string
	accept                string // the file of other cells' runner tokens it takes as its own; "": none
}

type edgeSlot struct {
	slot
	idx                   int // 0..2
	public, ops, internal string
	conf                  string
}

type agentSlot struct {
	slot
	id        string
	home      int // the edge it dials
	upstream  *upstream
	tokenFile string
}

// cluster is every process of the soak and how to start each one again.
type cluster struct {
	dir              string
	out              io.Writer
	sup              *bench.Supervisor
	edgeBin, cellBin string
	longPoll         time.Duration
	jwtKey, jwtPub   string
	agentKey, apiKey string
	internalKey      string
	apiToken         string
	http             *http.Client
	stopping         bool // the soak is stopping every process: exits are no longer news
	// accept are, by cell index, the runner tokens of other cells a cell takes as its own: those
	// of the organization the soak moves there.
	accept [3][]string

	mu        sync.Mutex // guards the slots' proc, runs, starts, kills and down, and stopping
	redisAddr string
	redis     *slot
	cells     [3]*cellSlot
	edges     [3]*edgeSlot
	agents    [2]*agentSlot
	upstreams [2]*upstream
}

func logf(out io.Writer, format string, a ...any) {
	fmt.Fprintf(out, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, a...)...)
}

// start builds the binaries, writes keys and configs, and starts Redis, the cells, the edges, the
// upstreams and the agents, each ready before the next.
func (c *cluster) start(ctx context.Context, edgeBin string) error {
	var err error
	if c.edgeBin = edgeBin; c.edgeBin == "" {
		logf(c.out, "building edge (./cmd/edge)")
		if c.edgeBin, err = bench.GoBuild(ctx, c.dir, "./cmd/edge", "edge"); err != nil {
			return err
		}
	}
	logf(c.out, "building the soak cell (./bench/cmd/soakcell)")
	if c.cellBin, err = bench.GoBuild(ctx, c.dir, "./bench/cmd/soakcell", "soakcell"); err != nil {
		return err
	}
	if err := c.writeKeys(); err != nil {
		return err
	}
	addr, err := bench.FreeAddr("127.0.0.1")
	if err != nil {
		return err
	}
	c.redisAddr = addr
	c.redis = &slot{name: "redis"}
	if err := c.startRedis(ctx); err != nil {
		return err
	}
	for i := range c.cells {
		cs := &cellSlot{slot: slot{name: fmt.Sprintf("cell%d", i+1)}, id: uint64(i + 1), ledger: filepath.Join(c.dir, fmt.Sprintf("cell%d.ledger", i+1))}
		if len(c.accept[i]) > 0 {
			cs.accept = filepath.Join(c.dir, fmt.Sprintf("cell%d.accept", i+1))
			if err := os.WriteFile(cs.accept, []byte(strings.Join(c.accept[i], "\n")+"\n"), 0o600); err != nil {
				return err
			}
		}
		if cs.addr, err = bench.FreeAddr("127.0.0.1"); err != nil {
			return err
		}
		if cs.control, err = bench.FreeAddr("127.0.0.1"); err != nil {
			return err
		}
		c.cells[i] = cs
		if err := c.startCell(ctx, i); err != nil {
			return err
		}
	}
	for i := range c.edges {
		es := &edgeSlot{slot: slot{name: fmt.Sprintf("edge%d", i+1)}, idx: i, conf: filepath.Join(c.dir, fmt.Sprintf("edge%d.yaml", i+1))}
		for _, p := range []*string{&es.public, &es.ops, &es.internal} {
			if *p, err = bench.FreeAddr("127.0.0.1"); err != nil {
				return err
			}
		}
		spec := edgeSpec{public: es.public, ops: es.ops, internal: es.internal, redis: c.redisAddr, jwtPub: c.jwtPub,
			agentKey: c.agentKey, apiKey: c.apiKey, internalKey: c.internalKey}
		for j, cs := range c.cells {
			spec.cells[j] = cs.addr
		}
		if err := os.WriteFile(es.conf, []byte(edgeConfig(spec)), 0o644); err != nil {
			return err
		}
		c.edges[i] = es
		if err := c.startEdge(ctx, i); err != nil {
			return err
		}
	}
	if c.apiToken, err = c.mint(ctx, "gitlab-api", "--secret-file", c.apiKey, "--ttl", "48h"); err != nil {
		return err
	}
	for j := range c.agents {
		id := fmt.Sprintf("a%d", j+1)
		up, err := startUpstream(id)
		if err != nil {
			return err
		}
		c.upstreams[j] = up
		tok, err := c.mint(ctx, "agent", "--key", c.agentKey, "--agent-id", id, "--ttl", "48h")
		if err != nil {
			return err
		}
		as := &agentSlot{slot: slot{name: "agent-" + id}, id: id, home: j, upstream: up, tokenFile: filepath.Join(c.dir, id+".tok")}
		if err := os.WriteFile(as.tokenFile, []byte(tok+"\n"), 0o600); err != nil {
			return err
		}
		c.agents[j] = as
		if err := c.startAgent(ctx, j); err != nil {
			return err
		}
	}
	// Everything is up when every edge sees every cell up and lists every agent.
	for i := range c.edges {
		if err := c.waitEdgeSeesAll(ctx, i, startTimeout); err != nil {
			return err
		}
	}
	return nil
}

// writeKeys makes the job tokens' RSA key (the cells sign, edge verifies the public half) and
// the HS256 secrets, in the temporary directory.
func (c *cluster) writeKeys() error {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	c.jwtKey = filepath.Join(c.dir, "jwt.key")
	if err := os.WriteFile(c.jwtKey, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600); err != nil {
		return err
	}
	pub, err := bench.PublicKeyPEM(key)
	if err != nil {
		return err
	}
	c.jwtPub = filepath.Join(c.dir, "jwt.pub")
	if err := os.WriteFile(c.jwtPub, pub, 0o644); err != nil {
		return err
	}
	for _, p := range []*string{&c.agentKey, &c.apiKey, &c.internalKey} {
		var b [32]byte
		if _, err := rand.Read(b[:]); err != nil {
			return err
		}
		f, err := os.CreateTemp(c.dir, "secret-*.key")
		if err != nil {
			return err
		}
		_, err = f.WriteString(hex.EncodeToString(b[:]))
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
		*p = f.Name()
	}
	return nil
}

// mint runs `edge token mint KIND ARGS...` and returns the token.
func (c *cluster) mint(ctx context.Context, kind string, args ...string) (string, error) {
	return bench.EdgeToken(ctx, c.edgeBin, kind, args...)
}

// launch starts the next process of a slot, named name, name.2, name.3, ... so each keeps its log.
func (c *cluster) launch(s *slot, argv []string, o bench.StartOptions) (*bench.Proc, error) {
	c.mu.Lock()
	s.starts++
	name := s.name
	if s.starts > 1 {
		name += "." + strconv.Itoa(s.starts)
	}
	c.mu.Unlock()
	p, err := c.sup.Start(name, argv, o)
	if err != nil {
		return nil, err
	}
	run := &procRun{proc: p, started: time.Now()}
	c.mu.Lock()
	s.proc = p
	s.runs = append(s.runs, run)
	c.mu.Unlock()
	go c.watchExit(run)
	return p, nil
}

// watchExit notes when a process exits and says so at once when the fault script did not end it.
func (c *cluster) watchExit(run *procRun) {
	<-run.proc.Done()
	c.mu.Lock()
	run.exitedAt = time.Now()
	unasked := run.ended == "" && !c.stopping
	c.mu.Unlock()
	if unasked {
		logf(c.out, "%s EXITED UNASKED (%v)", run.proc.Name, run.proc.Err())
	}
}

// stopAll stops every process, after which an exit is expected.
func (c *cluster) stopAll() {
	c.mu.Lock()
	c.stopping = true
	c.mu.Unlock()
	c.sup.StopAll()
}

func (c *cluster) startRedis(ctx context.Context) error {
	_, port, _ := net.SplitHostPort(c.redisAddr)
	// The organization moves are kept in Redis with no copy elsewhere: it keeps an append-only
	// file, synced before each answer, so a kill -9 loses none of them (as an operator's Redis
	// holding moves must).
	p, err := c.launch(c.redis, []string{"redis-server", "--bind", "127.0.0.1", "--port", port, "--save", "", "--appendonly", "yes",
		"--appendfsync", "always", "--dir", c.dir, "--daemonize", "no", "--loglevel", "warning"}, bench.StartOptions{})
	if err != nil {
		return err
	}
	return p.WaitReady(ctx, startTimeout, func() (bool, error) { return bench.RedisPing(c.redisAddr) == nil, nil })
}

// startCell starts cell i (again): same ports, same ledger, one more incarnation. Ready when it
// printed ready and answers its readiness endpoint.
func (c *cluster) startCell(ctx context.Context, i int) error {
	cs := c.cells[i]
	c.mu.Lock()
	incarnation := cs.starts
	c.mu.Unlock()
	argv := []string{c.cellBin, "-id", strconv.FormatUint(cs.id, 10), "-listen", cs.addr, "-control", cs.control,
		"-ledger", cs.ledger, "-jwt-key", c.jwtKey, "-kid", jwtKid, "-issuer", jwtIssuer, "-audience", jwtAudience,
		"-long-poll", c.longPoll.String(), "-incarnation", strconv.Itoa(incarnation)}
	if cs.id == 1 {
		argv = append(argv, "-legacy")
	}
	if cs.accept != "" {
		argv = append(argv, "-accept", cs.accept)
	}
	p, err := c.launch(&cs.slot, argv, bench.StartOptions{Stdout: true})
	if err != nil {
		return err
	}
	return p.WaitReady(ctx, startTimeout, func() (bool, error) {
		b, _ := os.ReadFile(p.Out)
		if !strings.Contains(string(b), "\nready\n") {
			return false, nil
		}
		return c.getOK(ctx, "http://"+cs.addr+"/-/readiness"), nil
	})
}

// startEdge starts edge i (again) on its config; ready when /readyz is 200.
func (c *cluster) startEdge(ctx context.Context, i int) error {
	es := c.edges[i]
	p, err := c.launch(&es.slot, []string{c.edgeBin, "serve", "--config", es.conf}, bench.StartOptions{})
	if err != nil {
		return err
	}
	return p.WaitReady(ctx, startTimeout, func() (bool, error) { return c.getOK(ctx, "http://"+es.ops+"/readyz"), nil })
}

// startAgent starts agent j (again) against its edge; ready when that edge lists a connection of
// it held there.
func (c *cluster) startAgent(ctx context.Context, j int) error {
	as := c.agents[j]
	es := c.edges[as.home]
	p, err := c.launch(&as.slot, []string{c.edgeBin, "agent", "--edge", "http://" + es.public, "--token-file", as.tokenFile,
		"--allow-port", strconv.Itoa(as.upstream.port), "--log-level", "info"}, bench.StartOptions{})
	if err != nil {
		return err
	}
	return p.WaitReady(ctx, agentWait, func() (bool, error) { return c.agentHeldBy(ctx, j, as.home), nil })
}
