package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"gitlab.com/edge/edge/config"
	"gitlab.com/edge/edge/tunnel"
)

// cmdAgent runs an agent: it dials the edge, holds a multiplexed connection and serves each
// request that arrives on it from a local upstream.
func cmdAgent(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("agent", "agent --edge URL --token-file F --allow-port N [--allow-port N]... [flags]", stderr)
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
	if *edgeURL == "" || *tokenFile == "" {
		return usagef("agent: --edge and --token-file are required")
	}
	upstreams, err := agentUpstreams(ports, maps)
	if err != nil {
		return err
	}
	log := newLogger(config.Log{Level: *level, Format: "json"}, stderr)
	var tlsConfig *tls.Config
	if *caFile != "" || *insecure {
		tlsConfig = &tls.Config{InsecureSkipVerify: *insecure}
		if *caFile != "" {
			pem, err := os.ReadFile(*caFile)
			if err != nil {
				return usageError{err}
			}
			tlsConfig.RootCAs = x509.NewCertPool()
			if !tlsConfig.RootCAs.AppendCertsFromPEM(pem) {
				return usagef("agent: --ca-file %s holds no PEM certificate", *caFile)
			}
		}
	}
	b := readBuildInfo()
	reg := newRegistry()
	agent, err := tunnel.NewAgent(tunnel.AgentOptions{
		EdgeURL:          *edgeURL,
		Token:            tunnel.TokenFile(*tokenFile),
		Info:             tunnel.AgentInfo{Version: b.Version, Commit: b.Commit, PodNamespace: os.Getenv("POD_NAMESPACE"), PodName: os.Getenv("POD_NAME")},
		Upstreams:        upstreams,
		TLSConfig:        tlsConfig,
		Connections:      *conns,
		MaxConnectionAge: *maxAge,
		Logger:           log,
		Metrics:          reg,
	})
	if err != nil {
		return usageError{err}
	}
	if *opsAddr != "" {
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
			if agent.Status().Connected == 0 {
				w.WriteHeader(http.StatusServiceUnavailable)
			}
			fmt.Fprintf(w, "connected %d\n", agent.Status().Connected)
		})
		srv := &http.Server{Addr: *opsAddr, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		go func() {
			if err := srv.ListenAndServe(); err != nil && err != http.ErrServerClosed {
				log.Error("agent ops listener failed", "error", err)
			}
		}()
		defer srv.Close()
	}
	log.Info("agent starting", "edge", *edgeURL, "ports", len(upstreams))
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
