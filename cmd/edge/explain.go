package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	"gitlab.com/edge/edge/server"
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
	cfg, err := server.LoadConfig(*path)
	if err != nil {
		return err
	}
	decision, err := server.Explain(cfg, req, server.NewLogger(cfg.Log, stderr).With("command", "explain"))
	if err != nil {
		return err
	}
	out, err := json.MarshalIndent(decision, "", "  ")
	if err != nil {
		return fmt.Errorf("explain: %w", err)
	}
	_, err = stdout.Write(append(out, '\n'))
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
