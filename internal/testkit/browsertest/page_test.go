package browsertest_test

import (
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/coder/websocket"

	"gitlab.com/edge/edge/internal/testkit/browsertest"
)

const formPage = `<!DOCTYPE html>
<html><body>
<form method="POST" action="/greet">
  <input id="name" name="name">
  <button id="go" type="submit">Greet</button>
</form>
</body></html>`

// app is a page with a form and a WebSocket echo.
func app(t *testing.T) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, formPage)
	})
	mux.HandleFunc("POST /greet", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `<!DOCTYPE html><html><body><p id="greeting">Hello, %s</p><p id="host">%s</p></body></html>`,
			html.EscapeString(r.FormValue("name")), html.EscapeString(r.Host))
	})
	mux.HandleFunc("GET /echo", func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			t.Errorf("websocket accept: %v", err)
			return
		}
		defer c.CloseNow()
		for {
			typ, msg, err := c.Read(r.Context())
			if err != nil {
				return
			}
			if err := c.Write(r.Context(), typ, append([]byte("echo: "), msg...)); err != nil {
				return
			}
		}
	})
	return mux
}

func TestFormAndWebSocketOnALocalhostName(t *testing.T) {
	srv := httptest.NewServer(app(t))
	t.Cleanup(srv.Close)
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	// Chromium resolves every *.localhost name to loopback by itself.
	host := "app.localhost:" + u.Port()
	ctx := browsertest.New(t)

	browsertest.Open(t, ctx, "http://"+host+"/", "#name")
	browsertest.Type(t, ctx, "#name", "Ada")
	browsertest.Click(t, ctx, "#go")
	if got, want := browsertest.Text(t, ctx, "#greeting"), "Hello, Ada"; got != want {
		t.Errorf("greeting: got %q, want %q", got, want)
	}
	if got := browsertest.Text(t, ctx, "#host"); got != host {
		t.Errorf("Host the server saw: got %q, want %q", got, host)
	}

	got := browsertest.Eval[string](t, ctx, `new Promise((resolve, reject) => {
		const ws = new WebSocket("ws://" + location.host + "/echo");
		ws.onopen = () => ws.send("ping from " + location.host);
		ws.onmessage = (e) => { resolve(e.data); ws.close(); };
		ws.onerror = () => reject(new Error("websocket failed"));
	})`)
	if want := "echo: ping from " + host; got != want {
		t.Errorf("websocket: got %q, want %q", got, want)
	}
}
