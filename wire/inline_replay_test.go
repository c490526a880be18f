package wire

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"sync"
	"testing"
	"time"

	"gitlab.com/edge/edge/internal/testkit/testnet"
)

// A jobs/request with no body but an Idempotency-Key is still a job claim: a cell that drops it
// on a kept-alive connection does not get it a second time.
func TestInlineNeverReplaysAKeyedJobClaim(t *testing.T) {
	addr, seen := testnet.FlakyCell(t)
	rt := newCellTransport(time.Second, 5*time.Second)
	claim := func() (*http.Response, error) {
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+JobsRequestPath, nil)
		req.Header.Set("Idempotency-Key", "k1")
		return rt.RoundTrip(req)
	}
	resp, err := claim()
	if err != nil {
		t.Fatal(err)
	}
	io.ReadAll(resp.Body)
	resp.Body.Close()
	if _, err := claim(); err == nil {
		t.Fatal("a job claim the cell dropped unanswered succeeded")
	}
	if n := seen(http.MethodPost); n != 2 {
		t.Errorf("the cell read %d claims, want 2 (one each, never a replay)", n)
	}
	// Another keyed POST is still replayed, as http.Transport would.
	addr, seen = testnet.FlakyCell(t)
	for range 2 {
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/api/v4/runners/verify", nil)
		req.Header.Set("Idempotency-Key", "k2")
		resp, err := rt.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	if n := seen(http.MethodPost); n != 3 {
		t.Errorf("keyed verify: the cell read %d, want 3 (the dropped one once more)", n)
	}
}

// An interim 103 then the connection closed: the cell saw the request and the client got the
// 103, so the request is not sent again (which would pass the 103 on twice).
func TestInlineInterimAnswerThenCloseIsNotReplayed(t *testing.T) {
	var mu sync.Mutex
	gets := 0
	addr := testnet.ServeRaw(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		for i := 0; ; i++ {
			if _, err := http.ReadRequest(br); err != nil {
				return
			}
			mu.Lock()
			gets++
			mu.Unlock()
			if i == 1 {
				io.WriteString(c, "HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n")
				return
			}
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		}
	})
	rt := newCellTransport(time.Second, 5*time.Second)
	resp, err := get(t, rt, context.Background(), "http://"+addr+"/")
	if err != nil {
		t.Fatal(err)
	}
	io.ReadAll(resp.Body)
	resp.Body.Close()
	interims := 0
	ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
		Got1xxResponse: func(int, textproto.MIMEHeader) error { interims++; return nil },
	})
	if _, err := get(t, rt, ctx, "http://"+addr+"/"); err == nil {
		t.Fatal("a request the cell closed after a 103 succeeded")
	}
	if interims != 1 {
		t.Errorf("the 103 was passed on %d times, want once", interims)
	}
	mu.Lock()
	defer mu.Unlock()
	if gets != 2 {
		t.Errorf("the cell read %d GETs, want 2 (no replay after an interim answer)", gets)
	}
}
