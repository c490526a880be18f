package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"time"
)

// workspaceBody is the POST body of a workspace request; the upstream answers how many bytes it
// read, which must be all of them.
var workspaceBody = bytes.Repeat([]byte("chaossoak workspace body\n"), 41) // 1025 bytes

// runWorkspace sends requests through the API for GitLab to a random agent's upstream via a random
// edge (so two thirds of them cross from edge to edge) until until: a GET and a POST with a 1 KiB
// body in turn, 50 to 150 ms apart.
func (s *soak) runWorkspace(ctx context.Context, w int, rng *rand.Rand, until time.Time) {
	for n := 1; ctx.Err() == nil && time.Now().Before(until); n++ {
		edge, j := rng.IntN(3), rng.IntN(2)
		as := s.c.agents[j]
		path := fmt.Sprintf("/-/api/v1/agents/%s/proxy/%d/soak/w%d/%d", as.id, as.upstream.port, w, n)
		method, body := http.MethodGet, []byte(nil)
		if n%2 == 0 {
			method, body = http.MethodPost, workspaceBody
		}
		rctx, cancel := context.WithTimeout(ctx, 40*time.Second) // agents.wait is 15 s
		req, _ := http.NewRequestWithContext(rctx, method, s.edgeURL(edge, path), bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+s.c.apiToken)
		ex := send(s.client, s.rec, kindWorkspace, edge+1, req)
		cancel()
		a := ex.a
		if a.Source == sourceUpstream && a.Status == http.StatusOK {
			var got upstreamAnswer
			err := json.Unmarshal(ex.body, &got)
			switch {
			case err != nil:
				a.Detail = "upstream answer: " + err.Error()
			case got.Agent != as.id:
				a.Detail = fmt.Sprintf("answered by %s's upstream, sent to %s", got.Agent, as.id)
			case got.Bytes != int64(len(body)):
				a.Detail = fmt.Sprintf("upstream read %d body bytes of %d", got.Bytes, len(body))
			case got.Path != fmt.Sprintf("/soak/w%d/%d", w, n):
				a.Detail = "upstream saw path " + got.Path
			default:
				a.OK = true
			}
			if !a.OK {
				a.Cause = "wrong answer"
			}
		}
		s.rec.add(a)
		wait := time.Duration(50+rng.IntN(100)) * time.Millisecond
		if !a.OK {
			wait = max(wait, backoff(ex))
		}
		_ = sleep(ctx, wait)
	}
}
