package integration

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"testing"
	"time"
)

const bigBody = 100_000_000

// bigJSON is a JSON body of exactly size bytes, generated as it is read: a huge "info" string,
// then the token, so a token reader has to go past the body token limit to find it.
type bigJSON struct {
	head, tail []byte
	size, off  int64
}

func newBigJSON(token string, size int64) *bigJSON {
	head := []byte(`{"info":{"name":"`)
	tail := []byte(`"},"token":"` + token + `"}`)
	return &bigJSON{head: head, tail: tail, size: size}
}

func (b *bigJSON) Read(p []byte) (int, error) {
	if b.off >= b.size {
		return 0, io.EOF
	}
	n := 0
	for n < len(p) && b.off < b.size {
		fill := b.size - int64(len(b.tail))
		switch {
		case b.off < int64(len(b.head)):
			c := copy(p[n:], b.head[b.off:])
			n += c
			b.off += int64(c)
		case b.off < fill:
			c := int(min(int64(len(p)-n), fill-b.off))
			for i := range c {
				p[n+i] = 'a'
			}
			n += c
			b.off += int64(c)
		default:
			c := copy(p[n:], b.tail[b.off-fill:])
			n += c
			b.off += int64(c)
		}
	}
	return n, nil
}

// TestBodyTokenLimit sends 100 MB job requests. Without a token header edge must look for the
// token in the body: it reads at most body_token_limit and answers 413, like Workhorse, and its
// memory stays flat. With a RUNNER-TOKEN header the body is streamed to the cell, not read.
func TestBodyTokenLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	client := newClient(4)
	token := runnerToken(t, 2)
	e.noteTokens(outgoing{header: http.Header{"Runner-Token": {token}}})
	e.mark()

	// Warm up so the baseline includes edge's steady state.
	a := e.send(t, runner169().requestJob(token, ""))
	wantStatus(t, a, http.StatusNoContent)
	e.expectAt(t, 2)

	hwm := func() int64 {
		t.Helper()
		v, err := e.edge.memKB("VmHWM")
		if err != nil {
			t.Fatalf("edge memory: %v", err)
		}
		return v
	}
	const maxGrowthKB = 30 << 10

	for _, chunked := range []bool{false, true} {
		name := "content-length"
		if chunked {
			name = "chunked"
		}
		t.Run("no token header/"+name, func(t *testing.T) {
			before := hwm()
			res, err := postBig(client, e.edge.PublicURL, newBigJSON(token, bigBody), chunked, nil)
			if err != nil {
				t.Fatalf("100 MB job request: %v", err)
			}
			if res != http.StatusRequestEntityTooLarge {
				t.Errorf("status: got %d, want 413", res)
			}
			e.expectNowhere(t)
			growth := hwm() - before
			t.Logf("edge peak memory (VmHWM) grew by %d kB", growth)
			if growth > maxGrowthKB {
				t.Errorf("edge peak memory grew by %d kB reading a 100 MB body, want < %d kB", growth, maxGrowthKB)
			}
		})
	}

	t.Run("RUNNER-TOKEN header", func(t *testing.T) {
		before := hwm()
		body := newBigJSON(token, bigBody)
		h := sha256.New()
		status, err := postBig(client, e.edge.PublicURL, io.TeeReader(body, h), false, http.Header{"Runner-Token": {token}})
		if err != nil {
			t.Fatalf("100 MB job request: %v", err)
		}
		rec := e.expectAt(t, 2)
		if rec.BodyLen != bigBody || rec.BodySHA256 != hex.EncodeToString(h.Sum(nil)) || rec.ContentLength != bigBody {
			t.Errorf("the cell got %d bytes (Content-Length %d) sha256 %s, want all %d bytes as sent", rec.BodyLen, rec.ContentLength, rec.BodySHA256, bigBody)
		}
		if status != rec.Status {
			t.Errorf("status: got %d, want the cell's %d", status, rec.Status)
		}
		growth := hwm() - before
		t.Logf("edge peak memory (VmHWM) grew by %d kB", growth)
		if growth > maxGrowthKB {
			t.Errorf("edge peak memory grew by %d kB streaming a 100 MB body, want < %d kB", growth, maxGrowthKB)
		}
	})
}

// postBig posts body to /api/v4/jobs/request and returns the status. A server that answers
// before reading everything may close the connection under the client; the answer still counts.
func postBig(client *http.Client, base string, body io.Reader, chunked bool, header http.Header) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "POST", base+"/api/v4/jobs/request", io.NopCloser(body))
	if err != nil {
		return 0, err
	}
	if !chunked {
		req.ContentLength = bigBody
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", runner169().userAgent())
	for k, vs := range header {
		req.Header[k] = vs
	}
	res, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, res.Body)
	return res.StatusCode, nil
}
