package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"gitlab.com/edge/edge/bench"
)

func startEdge(ctx context.Context, sup *bench.Supervisor, o *options, id, label string, upPort int, c certFiles, withTLS, access bool) (*target, error) {
	pub, err := bench.FreePort()
	if err != nil {
		return nil, err
	}
	ops, err := bench.FreePort()
	if err != nil {
		return nil, err
	}
	conf := filepath.Join(o.dir, id+".yaml")
	if err := os.WriteFile(conf, []byte(edgeConfig(pub, ops, upPort, c, withTLS, access)), 0o644); err != nil {
		return nil, err
	}
	p, err := sup.Start(id, o.server(o.edgeBin, "serve", "--config", conf), bench.StartOptions{})
	if err != nil {
		return nil, err
	}
	if err := p.WaitHTTP(ctx, startTimeout, fmt.Sprintf("http://127.0.0.1:%d/readyz", ops)); err != nil {
		return nil, err
	}
	t := &target{id: id, label: label, proc: p}
	if !withTLS {
		t.urls = map[string]string{"plain": fmt.Sprintf("http://127.0.0.1:%d/", pub)}
		if err := checkPlain(t.urls["plain"]); err != nil {
			return nil, fmt.Errorf("%s (plain HTTP): %w", label, err)
		}
		return t, nil
	}
	url := fmt.Sprintf("https://127.0.0.1:%d/", pub)
	t.urls = map[string]string{"h1": url, "h2": url}
	if err := checkTLS(url, c.CA); err != nil {
		return nil, fmt.Errorf("%s: %w", label, err)
	}
	return t, nil
}

func startNginx(ctx context.Context, sup *bench.Supervisor, o *options, upPort int, c certFiles) (*target, error) {
	version, err := nginxVersion(o.nginx)
	if err != nil {
		return nil, err
	}
	prefix := filepath.Join(o.dir, "nginx")
	if err := os.MkdirAll(prefix, 0o755); err != nil {
		return nil, err
	}
	port, err := bench.FreePort()
	if err != nil {
		return nil, err
	}
	plainPort := 0
	if o.plain {
		if plainPort, err = bench.FreePort(); err != nil {
			return nil, err
		}
	}
	conf := filepath.Join(prefix, "nginx.conf")
	if err := os.WriteFile(conf, []byte(nginxConfig(prefix, port, plainPort, upPort, c, version, !o.nginxClientCiphers)), 0o644); err != nil {
		return nil, err
	}
	p, err := sup.Start("nginx", o.server(o.nginx, "-p", prefix, "-e", filepath.Join(prefix, "error.log"), "-c", conf, "-g", "daemon off;"), bench.StartOptions{})
	if err != nil {
		return nil, err
	}
	url := fmt.Sprintf("https://127.0.0.1:%d/", port)
	t := &target{id: "nginx", label: fmt.Sprintf("nginx %d.%d.%d", version[0], version[1], version[2]), proc: p,
		urls: map[string]string{"h1": url, "h2": url}}
	if err := p.WaitOK(ctx, startTimeout, func() error { return checkTLS(url, c.CA) }); err != nil {
		return nil, fmt.Errorf("%w (error log: %s)", err, filepath.Join(prefix, "error.log"))
	}
	if plainPort != 0 {
		t.urls["plain"] = fmt.Sprintf("http://127.0.0.1:%d/", plainPort)
		if err := checkPlain(t.urls["plain"]); err != nil {
			return nil, fmt.Errorf("nginx (plain HTTP): %w", err)
		}
	}
	return t, nil
}
