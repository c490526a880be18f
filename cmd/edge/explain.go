package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"gitlab.com/edge/edge/proxy"
	"gitlab.com/edge/edge/tunnel"
)

func cmdExplain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("explain", "explain --config edge.yaml [-X METHOD] [-H 'K: V']... [-d BODY|@FILE] URL", stderr)
	path := fs.String("config", "edge.yaml", "config file")
	method := fs.String("X", "", "request method (default GET, or POST with -d)")
	data := fs.String("d", "", "request body, or @FILE to read it from a file (as curl does)")
	var headers multiFlag
	fs.Var(&headers, "H", "request header 'Name: value' (repeatable)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("explain takes exactly one URL, got %d arguments", fs.NArg())
	}
	req, err := explainRequest(ctx, *method, fs.Arg(0), headers, *data)
	if err != nil {
		return err
	}
	cfg, err := loadConfig(*path)
	if err != nil {
		return err
	}
	rt, err := buildRouter(cfg, newLogger(cfg.Log, stderr).With("command", "explain"), prometheus.NewRegistry())
	if err != nil {
		return err
	}
	if out, ok := explainEdgeOwn(req); ok {
		_, err = stdout.Write(out)
		return err
	}
	d, decideErr := rt.runner.Load().Explain(req)
	out, err := explainJSON(req, d, decideErr)
	if err != nil {
		return err
	}
	_, err = stdout.Write(out)
	return err
}

func explainRequest(ctx context.Context, method, target string, headers []string, data string) (*http.Request, error) {
	var body io.Reader
	if data != "" {
		if name, ok := strings.CutPrefix(data, "@"); ok {
			b, err := os.ReadFile(name)
			if err != nil {
				return nil, usagef("-d: %w", err)
			}
			data = string(b)
		}
		body = strings.NewReader(data)
		if method == "" {
			method = http.MethodPost
		}
	}
	if method == "" {
		method = http.MethodGet
	}
	req, err := http.NewRequestWithContext(ctx, method, target, body)
	if err != nil {
		return nil, usagef("URL: %w", err)
	}
	req.RemoteAddr = "127.0.0.1:0"
	for _, h := range headers {
		name, value, ok := strings.Cut(h, ":")
		if !ok || strings.TrimSpace(name) == "" {
			return nil, usagef("-H %q: want 'Name: value'", h)
		}
		req.Header.Add(strings.TrimSpace(name), strings.TrimSpace(value))
	}
	if body != nil && req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	return req, nil
}

// explainJSON prints the decision; a refused request shows the status edge would answer.
func explainJSON(req *http.Request, d proxy.Decision, decideErr error) ([]byte, error) {
	raw, err := json.Marshal(d)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, err
	}
	out["method"], out["path"] = req.Method, req.URL.Path
	if decideErr != nil {
		out["status"] = proxy.ErrorStatus(decideErr)
		out["error"] = decideErr.Error()
		delete(out, "cell")
		delete(out, "cell_url")
		delete(out, "rule")
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("explain: %w", err)
	}
	return append(b, '\n'), nil
}

// explainEdgeOwn explains the paths edge serves itself rather than routing to a cell: the agent
// connect endpoint and the API for GitLab (which says which agent and port a proxy path names).
func explainEdgeOwn(req *http.Request) ([]byte, bool) {
	path := req.URL.Path
	out := map[string]any{"method": req.Method, "path": path}
	switch {
	case path == tunnel.ConnectPath:
		out["traffic"] = "agent_connect"
		out["rule"] = "agent token verified; the agent id comes from the token"
	case strings.HasPrefix(path, "/-/api/v1/"):
		out["traffic"] = "gitlab_api"
		parts := strings.Split(strings.TrimPrefix(path, "/-/api/v1/"), "/")
		if len(parts) >= 4 && parts[0] == "agents" && parts[2] == "connections" && len(parts) >= 6 && parts[4] == "proxy" {
			out["agent_id"], out["connection_id"], out["port"], out["upstream_path"] = parts[1], parts[3], parts[5], "/"+strings.Join(parts[6:], "/")
			out["rule"] = "one named connection of the agent: local tunnel, else its holder's internal listener"
		} else if len(parts) >= 3 && parts[0] == "agents" && parts[2] == "proxy" && len(parts) >= 4 {
			out["agent_id"], out["port"], out["upstream_path"] = parts[1], parts[3], "/"+strings.Join(parts[4:], "/")
			out["rule"] = "any connection of the agent: local tunnel, else a holder from the registry, waiting up to agents.wait"
		} else {
			out["rule"] = "registry query"
		}
	default:
		return nil, false
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return nil, false
	}
	return append(b, '\n'), true
}
