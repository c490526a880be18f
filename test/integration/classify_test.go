package integration

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"gitlab.com/edge/edge/tokens"
)

// classifyServer is a Topology-Service-style classify endpoint: POST /v1/classify with
// {"type","value"}; it knows one project, in cell 3.
type classifyServer struct {
	*httptest.Server
	mu       sync.Mutex
	requests []classifyRequest
}

type classifyRequest struct {
	header http.Header
	body   string
}

func newClassifyServer(t *testing.T, cellURL func() string) *classifyServer {
	t.Helper()
	s := &classifyServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.requests = append(s.requests, classifyRequest{header: r.Header.Clone(), body: string(b)})
		s.mu.Unlock()
		var q struct{ Type, Value string }
		if r.Method != http.MethodPost || r.URL.Path != "/v1/classify" || json.Unmarshal(b, &q) != nil {
			http.Error(w, `{"error":"bad request"}`, http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "max-age=60")
		if q.Type != "PROJECT_ID" || q.Value != "1000" {
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"action":"reject"}`)
			return
		}
		fmt.Fprintf(w, `{"action":"proxy","proxy":{"address":%q}}`, cellURL())
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *classifyServer) seen() []classifyRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]classifyRequest(nil), s.requests...)
}

// TestClassificationRules checks each rule of tokens.md section 4 with a request that only that
// rule routes to the right cell (every other rule would pick the legacy cell or another one).
func TestClassificationRules(t *testing.T) {
	t.Parallel()
	var cell3URL string
	classify := newClassifyServer(t, func() string { return cell3URL })
	e := newEnv(t, envOptions{config: func(c *edgeConfig) {
		c.Routing.ClassifyURL = classify.URL
		cell3URL = c.Cells[2].URL
	}})
	r := runner1711()
	key := demoPrivateKey(t)
	jobJWT := func(t *testing.T, cell, job uint64, legacy bool) string {
		t.Helper()
		now := time.Now()
		raw, err := tokens.MintJobJWT(tokens.MintJobOptions{
			Key: key, Algorithm: "RS256", KID: jwtKID, Issuer: jwtIssuer, Audience: jwtAudience,
			Keys:         tokens.Keys{}.Set(tokens.KeyCell, cell).Set(tokens.KeyOrganization, 1),
			LegacyCellID: legacy, JobID: job, IssuedAt: now, ExpiresAt: now.Add(time.Hour),
		})
		if err != nil {
			t.Fatalf("MintJobJWT: %v", err)
		}
		return "glcbt-" + raw
	}
	e.mark()

	t.Run("routable token with c", func(t *testing.T) {
		e.mark()
		a := e.send(t, r.verify(runnerToken(t, 3)))
		wantStatus(t, a, http.StatusOK)
		checkDelivered(t, e.expectAt(t, 3), a)
	})

	t.Run("job id learned from a job request answer", func(t *testing.T) {
		e.mark()
		const id = outsideRanges + 22
		if err := e.cell(2).AddJobWithID(id); err != nil {
			t.Fatalf("AddJobWithID: %v", err)
		}
		a := e.send(t, r.requestJob(runnerToken(t, 2), ""))
		wantStatus(t, a, http.StatusCreated)
		e.expectAt(t, 2)
		job := decodeJob(t, a)
		if job.ID != id {
			t.Fatalf("handed out job %d, want %d", job.ID, id)
		}
		// The opaque job token names no cell and no range covers the id: only the learned id
		// routes it.
		a = e.send(t, r.updateJob(id, job.Token, "running", 0))
		wantStatus(t, a, http.StatusOK)
		checkDelivered(t, e.expectAt(t, 2), a)
	})

	for _, form := range []struct {
		name   string
		cell   uint64
		legacy bool
	}{{"job JWT with cell_id (older form)", 3, true}, {"job JWT with c (newer form)", 2, false}} {
		t.Run(form.name, func(t *testing.T) {
			e.mark()
			id := outsideRanges + form.cell*10 + 1
			cell := e.cell(form.cell)
			if err := cell.AddJobWithID(id); err != nil {
				t.Fatalf("AddJobWithID: %v", err)
			}
			tok := jobJWT(t, form.cell, id, form.legacy)
			cell.AcceptToken(tok)
			a := e.send(t, r.updateJob(id, tok, "running", 0))
			wantStatus(t, a, http.StatusOK)
			checkDelivered(t, e.expectAt(t, form.cell), a)
		})
	}

	t.Run("routable token without c asks the classify service", func(t *testing.T) {
		e.mark()
		tok := routableToken(t, "glrt-t3_", 40, tokens.Keys{}.Set(tokens.KeyOrganization, 7).Set(tokens.KeyProject, 1000))
		e.cell(3).AcceptToken(tok)
		for i := range 2 {
			a := e.send(t, r.verify(tok))
			wantStatus(t, a, http.StatusOK)
			checkDelivered(t, e.expectAt(t, 3), a)
			if n := len(classify.seen()); n != 1 {
				t.Errorf("classify requests after %d runner request(s): got %d, want 1 (answers are cached for max-age)", i+1, n)
			}
		}
		for _, q := range classify.seen() {
			if q.body != `{"type":"PROJECT_ID","value":"1000"}` {
				t.Errorf("classify request body: got %s, want project 1000 (p wins over o)", q.body)
			}
			leaked := strings.Contains(q.body, tok)
			for _, vs := range q.header {
				for _, v := range vs {
					leaked = leaked || strings.Contains(v, tok) || strings.Contains(v, tok[len("glrt-t3_"):len(tok)-20])
				}
			}
			if leaked {
				t.Errorf("the classify service received the token")
			}
		}
	})

	t.Run("job id inside a cell's range", func(t *testing.T) {
		e.mark()
		id, err := e.cell(3).AddJob()
		if err != nil {
			t.Fatalf("AddJob: %v", err)
		}
		j, _ := e.cell(3).Job(id)
		a := e.send(t, r.updateJob(id, j.Token, "running", 0))
		wantStatus(t, a, http.StatusOK)
		checkDelivered(t, e.expectAt(t, 3), a)
	})

	t.Run("unknown token goes to the legacy cell", func(t *testing.T) {
		e.mark()
		a := e.send(t, r.verify("glrt-a1b2c3d4e5f6g7h8i9j0"))
		wantStatus(t, a, http.StatusOK)
		checkDelivered(t, e.expectAt(t, 1), a)
	})

	t.Run("malformed routable token goes to the legacy cell", func(t *testing.T) {
		e.mark()
		tok := runnerToken(t, 3)
		last := tok[len(tok)-1]
		bad := tok[:len(tok)-1] + string("0123456789abcdefghijklmnopqrstuvwxyz"[(strings.IndexByte("0123456789abcdefghijklmnopqrstuvwxyz", last)+1)%36])
		a := e.send(t, r.verify(bad))
		wantStatus(t, a, http.StatusOK)
		checkDelivered(t, e.expectAt(t, 1), a)
	})

	t.Run("tokens naming different cells are refused", func(t *testing.T) {
		e.mark()
		mixed := r.requestJob(runnerToken(t, 3), "")
		mixed.header.Set("Runner-Token", runnerToken(t, 2))
		twoHeaders := r.verify(runnerToken(t, 2))
		twoHeaders.header.Set("Private-Token", routableToken(t, "glpat-", 50, tokens.Keys{}.Set(tokens.KeyCell, 3).Set(tokens.KeyOrganization, 1)))
		for _, o := range []outgoing{mixed, twoHeaders} {
			a := e.send(t, o)
			wantStatus(t, a, http.StatusBadRequest)
			wantJSONError(t, a)
			e.expectNowhere(t)
		}
	})
}

func wantStatus(t *testing.T, a answer, want int) {
	t.Helper()
	if a.status != want {
		t.Fatalf("%s %s: got %d, want %d (%s)", a.sent.method, a.sent.path, a.status, want, redactTokens(a.body))
	}
}

// redactTokens hides the values of "token" fields in an answer before it is printed.
func redactTokens(body []byte) string {
	return regexp.MustCompile(`"token"\s*:\s*"[^"]*"`).ReplaceAllString(string(body), `"token":"[redacted]"`)
}

// wantJSONError checks that edge explained itself with a JSON object holding a message.
func wantJSONError(t *testing.T, a answer) {
	t.Helper()
	if ct := a.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("error answer Content-Type: got %q, want application/json", ct)
	}
	var m map[string]any
	if err := json.Unmarshal(a.body, &m); err != nil {
		t.Errorf("error answer is not a JSON object: %s", redactTokens(a.body))
		return
	}
	msg, _ := m["message"].(string)
	if msg == "" {
		msg, _ = m["error"].(string)
	}
	if msg == "" {
		t.Errorf("error answer has no message: %s", redactTokens(a.body))
	}
}
