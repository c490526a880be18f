package integration

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// smuggled is the request the payloads try to hide from edge and show to a cell.
const smuggled = "GET /api/v4/smuggled HTTP/1.1\r\nHost: edge\r\n\r\n"

// TestSmugglingFamily sends the published request-smuggling techniques (CL.TE, TE.CL, TE.TE
// obfuscations, duplicate and odd lengths, obsolete folding, h2c upgrades, bare LF) to edge's
// public listener, each followed by a plain request. Whoever reads them (edge's engine or
// net/http after a hand-off), edge and its cells agree: every request a cell receives is one
// edge answered, and the hidden request reaches a cell only as a request of its own that edge
// answered.
func TestSmugglingFamily(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	addr := strings.TrimPrefix(e.edge.PublicURL, "http://")
	head := "POST /api/v4/projects/1/issues HTTP/1.1\r\nHost: edge\r\n"
	for name, payload := range map[string]string{
		"CL.TE":               head + "Content-Length: 6\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + smuggled,
		"TE.CL":               head + "Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n5c\r\n" + smuggled + "\r\n0\r\n\r\n",
		"TE space colon":      head + "Transfer-Encoding : chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n" + smuggled,
		"TE xchunked":         head + "Transfer-Encoding: xchunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n" + smuggled,
		"TE twice":            head + "Transfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n\r\n0\r\n\r\n" + smuggled,
		"TE list":             head + "Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n" + smuggled,
		"TE tab":              head + "Transfer-Encoding:\tchunked\r\n\r\n0\r\n\r\n" + smuggled,
		"TE folded":           head + "Transfer-Encoding:\r\n chunked\r\n\r\n0\r\n\r\n" + smuggled,
		"TE in HTTP/1.0":      strings.Replace(head, "HTTP/1.1", "HTTP/1.0", 1) + "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + smuggled,
		"CL twice":            head + "Content-Length: 0\r\nContent-Length: 46\r\n\r\n" + smuggled,
		"CL list":             head + "Content-Length: 0, 46\r\n\r\n" + smuggled,
		"CL plus":             head + "Content-Length: +46\r\n\r\n" + smuggled,
		"CL space":            head + "Content-Length : 46\r\n\r\n" + smuggled,
		"chunk size overflow": head + "Transfer-Encoding: chunked\r\n\r\nFFFFFFFFFFFFFFFF1\r\n" + smuggled + "\r\n0\r\n\r\n",
		"chunk extension":     head + "Transfer-Encoding: chunked\r\n\r\n2e;x=y\r\n" + smuggled + "\r\n0\r\n\r\n",
		"bare LF":             strings.ReplaceAll(head+"Content-Length: 46\r\n\r\n", "\r\n", "\n") + smuggled,
		"h2c upgrade":         "GET /api/v4/projects/1 HTTP/1.1\r\nHost: edge\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAAP__\r\nConnection: Upgrade, HTTP2-Settings\r\n\r\n" + smuggled,
		"h2 preface":          "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + smuggled,
		"absolute form":       "GET http://cell3.internal/api/v4/projects/1 HTTP/1.1\r\nHost: edge\r\n\r\n" + smuggled,
	} {
		settle(e)
		e.mark()
		answers := exchangeRaw(t, addr, payload+"GET /api/v4/projects/2 HTTP/1.1\r\nHost: edge\r\nConnection: close\r\n\r\n")
		settle(e)
		got := e.newRecords()
		atCells := 0
		for _, rs := range got {
			for _, r := range rs {
				atCells++
				if strings.Contains(r.Path, "smuggled") && len(answers) < 2 {
					t.Errorf("%s: the hidden request reached cell %d, and edge answered %d request(s)", name, r.Cell, len(answers))
				}
			}
		}
		if atCells > len(answers) {
			t.Errorf("%s: the cells got %d request(s), edge answered %d: %v; the cells got %v", name, atCells, len(answers), statuses(answers), got)
		}
	}
}

// exchangeRaw writes raw on one connection and reads every answer until edge closes it.
func exchangeRaw(t *testing.T, addr, raw string) []*http.Response {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	var answers []*http.Response
	for {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			return answers
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		answers = append(answers, resp)
	}
}

func statuses(answers []*http.Response) []int {
	out := make([]int, len(answers))
	for i, a := range answers {
		out[i] = a.StatusCode
	}
	return out
}

// settle waits until the cells' records stop growing (a cell records a request as it answers
// it, so the last one of a connection may land after the client read its answer).
func settle(e *env) {
	count := func() int {
		n := 0
		for _, c := range e.cells {
			n += len(c.Records())
		}
		return n
	}
	last := count()
	for range 20 {
		time.Sleep(50 * time.Millisecond)
		if n := count(); n == last {
			return
		} else {
			last = n
		}
	}
}
