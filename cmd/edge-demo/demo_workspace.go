package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"

	"github.com/coder/websocket"

	"gitlab.com/edge/edge/internal/testkit/devlogin"
)

// demoDomain is the demo's workspace domain: browsers resolve *.localhost to loopback by
// themselves, so workspace URLs work without DNS or /etc/hosts.
const demoDomain = "ws.localhost"

// demoWorkspaces is the static authorizer file of the demo: user demo may use workspace demo,
// served by the demo agent.
const demoWorkspaces = `workspaces:
  - {name: demo, agent_id: demo-agent, users: [demo]}
`

// startDemoLogin runs the development login: a real OpenID provider (internal/testkit/devlogin) with one
// user, demo / demo, that knows edge's redirect URI.
func startDemoLogin(ctx context.Context, redirect string) (*devlogin.Provider, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("demo login: %w", err)
	}
	p, srv := devlogin.Serve(ln, devlogin.Options{RedirectURIs: []string{redirect},
		Users: []devlogin.User{{Username: "demo", Password: "demo"}}})
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	return p, nil
}

// demoWorkspaceApp is what the demo workspace serves: a page whose WebSocket echoes what is
// typed, and a plain answer on any other path.
func demoWorkspaceApp() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, demoPage)
	})
	mux.HandleFunc("/ws", func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		for {
			typ, b, err := c.Read(r.Context())
			if err != nil || c.Write(r.Context(), typ, append([]byte("echo: "), b...)) != nil {
				return
			}
		}
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello from the demo workspace, through the agent's tunnel: %s %s\n", r.Method, r.URL.Path)
	})
	return mux
}

const demoPage = `<!doctype html><meta charset="utf-8"><title>demo workspace</title>
<h1>demo workspace</h1>
<p>Served through the agent's tunnel, behind edge's login. Type: the WebSocket echoes it.</p>
<input id="msg" autofocus><pre id="log"></pre>
<script>
const log = document.getElementById("log");
const ws = new WebSocket((location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/ws");
ws.onopen = () => log.textContent += "connected\n";
ws.onmessage = (e) => log.textContent += e.data + "\n";
ws.onclose = () => log.textContent += "closed\n";
document.getElementById("msg").onkeydown = (e) => {
  if (e.key === "Enter") { ws.send(e.target.value); e.target.value = ""; }
};
</script>
`
