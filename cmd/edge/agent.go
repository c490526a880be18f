package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"gitlab.com/edge/edge/config"
	"gitlab.com/edge/edge/hop"
	"gitlab.com/edge/edge/internal/guard"
	"gitlab.com/edge/edge/server"
	"gitlab.com/edge/edge/tunnel"
)

// cmdAgent runs an agent: it dials the edge, holds a multiplexed connection and serves each
// request that arrives on it from a local upstream.
func cmdAgent(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("agent", "agent [--config agent.yaml] | --edge URL --token-file F --allow-port N [--allow-port N]... [flags]", stderr)
	cfgPath := fs.String("config", "", "agent config file (flags given as well override it)")
	edgeURL := fs.String("edge", "", "base URL of the edge (the agent appends "+tunnel.ConnectPath+")")
	tokenFile := fs.String("token-file", "", "file holding the agent token (read at every connect)")
	var ports, maps multiFlag
	fs.Var(&ports, "allow-port", "an upstream port the agent serves at 127.0.0.1:<port> (repeatable)")
	fs.Var(&maps, "map-port", "PORT=HOST:PORT: serve a port from another address (repeatable)")
	conns := fs.Int("connections", 1, "connections to keep up at once")
	maxAge := fs.Duration("max-age", 0, "replace a connection after about this long (0: never)")
	caFile := fs.String("ca-file", "", "PEM file of the CA that signed the edge's certificate")
	insecure := fs.Bool("insecure-skip-verify", false, "do not verify the edge's certificate (development only)")
	opsAddr := fs.String("ops", "", "address for /metrics and /healthz (empty: none)")
	level := fs.String("log-level", "info", "debug, info, warn or error")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	a := &config.AgentFile{Connections: 1, Log: config.Log{Level: "info", Format: "json"}, Upstreams: map[int]string{}}
	if *cfgPath != "" {
		loaded, err := config.LoadAgent(*cfgPath)
		if err != nil {
			return usageError{Err: err}
		}
		a = loaded
	}
	var err error
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "edge":
			a.Edge = *edgeURL
		case "token-file":
			a.TokenFile = *tokenFile
		case "connections":
			a.Connections = *conns
		case "max-age":
			a.MaxAge.Duration = *maxAge
		case "insecure-skip-verify":
			a.InsecureSkipVerify = *insecure
		case "ops":
			a.Ops = *opsAddr
		case "log-level":
			a.Log.Level = *level
		case "ca-file":
			if a.CA, err = os.ReadFile(*caFile); err != nil {
				err = usagef("agent: --ca-file: %w", err)
			}
		}
	})
	if err != nil {
		return err
	}
	if len(ports) > 0 || len(maps) > 0 {
		if a.Upstreams, err = agentUpstreams(ports, maps); err != nil {
			return err
		}
	}
	if a.Connections < 1 {
		return usagef("agent: --connections must be at least 1")
	}
	if a.Edge == "" || a.TokenFile == "" || len(a.Upstreams) == 0 {
		return usagef("agent: an edge URL, a token file and at least one port are required (--config, or --edge, --token-file and --allow-port)")
	}
	if msg := tokenFileProblem(a.TokenFile); msg != "" {
		return usagef("agent: token file: %s", msg)
	}
	return runAgent(ctx, a, stderr)
}

// tokenFileProblem tells what is wrong with the agent's token file, or "" when nothing is. It is
// read at every connect (so a rotated token is picked up), but one that is missing, unreadable or
// empty at the start is a mistake to report at once, not a reason to dial and retry forever. The
// message names the file, never what it holds.
func tokenFileProblem(path string) string {
	data, err := os.ReadFile(path)
	var pe *fs.PathError
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Sprintf("%s does not exist", path)
	case errors.As(err, &pe):
		return fmt.Sprintf("cannot read %s: %v", path, pe.Err)
	case err != nil:
		return fmt.Sprintf("cannot read %s: %v", path, err)
	case len(bytes.TrimSpace(data)) == 0:
		return fmt.Sprintf("%s is empty", path)
	}
	return ""
}

func runAgent(ctx context.Context, a *config.AgentFile, stderr io.Writer) error {
	log := server.NewLogger(a.Log, stderr)
	var tlsConfig *tls.Config
	if len(a.CA) > 0 || a.InsecureSkipVerify {
		tlsConfig = &tls.Config{InsecureSkipVerify: a.InsecureSkipVerify}
		if len(a.CA) > 0 {
			tlsConfig.RootCAs = x509.NewCertPool()
			if !tlsConfig.RootCAs.AppendCertsFromPEM(a.CA) {
				return usagef("agent: the CA file holds no PEM certificate")
			}
		}
	}
	b := server.ReadBuildInfo()
	reg := server.NewMetricsRegistry(b)
	g, err := guard.New(log, reg)
	if err != nil {
		return err
	}
	tracer, err := server.NewAgentTracer(a.Tracing, b)
	if err != nil {
		return err
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = tracer.Shutdown(ctx)
	}()
	// Each call to an upstream is a client span, the child of the span edge sent down the tunnel.
	wrap := func(t *http.Transport) tunnel.RoundTripCloser {
		return tracer.Transport(server.InlineTransport(t), "upstream", nil).(tunnel.RoundTripCloser)
	}
	agent, err := tunnel.NewAgent(tunnel.AgentOptions{
		EdgeURL:    a.Edge,
		WriteError: hop.Write, RemoveEdgeHeaders: hop.StripEdgeHeaders,
		Token:            tunnel.TokenFile(a.TokenFile),
		Info:             tunnel.AgentInfo{Version: b.Version, Commit: b.Commit, PodNamespace: os.Getenv("POD_NAMESPACE"), PodName: os.Getenv("POD_NAME")},
		Upstreams:        a.Upstreams,
		TLSConfig:        tlsConfig,
		Connections:      a.Connections,
		MaxConnectionAge: a.MaxAge.Duration,
		WrapTransport:    wrap,
		// With a tracing block the agent makes a span of each call to an upstream: it keeps
		// parsing requests. Without one it offers splice streams, and edge's requests pass it
		// as bytes.
		PerRequest: tracer != nil,
		Logger:     log,
		Metrics:    reg,
		Guard:      g,
	})
	if err != nil {
		return usageError{Err: err}
	}
	if a.Ops != "" {
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
			connected := agent.Status().Connected
			if connected == 0 {
				w.WriteHeader(http.StatusServiceUnavailable)
			}
			fmt.Fprintf(w, "connected %d\n", connected)
		})
		srv := &http.Server{Addr: a.Ops, Handler: g.Handler("ops", mux), ReadHeaderTimeout: 5 * time.Second}
		go func() {
			defer g.Recover("listener", nil)
			if err := srv.ListenAndServe(); err != nil && err != http.ErrServerClosed {
				log.Error("agent ops listener failed", "error", err)
			}
		}()
		defer srv.Close()
	}
	log.Info("agent starting", "edge", a.Edge, "ports", len(a.Upstreams))
	return agent.Run(ctx)
}

func agentUpstreams(ports, maps []string) (map[int]string, error) {
	out := map[int]string{}
	for _, p := range ports {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return nil, usagef("agent: --allow-port %q is not a port", p)
		}
		out[n] = "127.0.0.1:" + p
	}
	for _, m := range maps {
		p, addr, ok := strings.Cut(m, "=")
		n, err := strconv.Atoi(p)
		if !ok || err != nil || n < 1 || n > 65535 || addr == "" {
			return nil, usagef("agent: --map-port %q: want PORT=HOST:PORT", m)
		}
		out[n] = addr
	}
	if len(out) == 0 {
		return nil, usagef("agent: at least one --allow-port or --map-port is required")
	}
	return out, nil
}
