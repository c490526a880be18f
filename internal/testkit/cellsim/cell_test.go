package cellsim_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"gitlab.com/edge/edge/internal/testkit/cellsim"
	"gitlab.com/edge/edge/internal/testkit/poll"
	"gitlab.com/edge/edge/tokens"
)

func newCell(t *testing.T, opts cellsim.Options) (*cellsim.Cell, *httptest.Server) {
	t.Helper()
	c, err := cellsim.New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	srv := httptest.NewServer(c.Handler())
	t.Cleanup(srv.Close)
	return c, srv
}

func routable(t *testing.T, keys tokens.Keys) string {
	t.Helper()
	var random [16]byte
	tok, err := tokens.MintRoutable("glrt-t1_", random, keys)
	if err != nil {
		t.Fatalf("MintRoutable: %v", err)
	}
	return tok
}

func cellKeys(cell uint64) tokens.Keys {
	return tokens.Keys{}.Set(tokens.KeyCell, cell).Set(tokens.KeyOrganization, 1)
}

type call struct {
	method, path string
	header       map[string]string
	body         string
}

func do(t *testing.T, srv *httptest.Server, c call) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(c.method, srv.URL+c.path, strings.NewReader(c.body))
	if err != nil {
		t.Fatalf("NewRequest: %v", err)
	}
	if c.body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range c.header {
		req.Header.Set(k, v)
	}
	res, err := srv.Client().Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", c.method, c.path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	return res, b
}

func lastRecord(t *testing.T, c *cellsim.Cell) cellsim.Record {
	t.Helper()
	rs := c.Records()
	if len(rs) == 0 {
		t.Fatalf("cell %d has no records", c.ID())
	}
	return rs[len(rs)-1]
}

func TestAuthentication(t *testing.T) {
	legacy, legacySrv := newCell(t, cellsim.Options{CellID: 1, Legacy: true})
	cell2, cell2Srv := newCell(t, cellsim.Options{CellID: 2})
	tests := []struct {
		name           string
		cell           *cellsim.Cell
		srv            *httptest.Server
		header, body   string
		wantStatus     int
		wantMisrouted  bool
		wantAuthorized bool
		wantSource     string
	}{
		{"names this cell", cell2, cell2Srv, routable(t, cellKeys(2)), "", 200, false, true, "RUNNER-TOKEN"},
		{"names another cell", cell2, cell2Srv, routable(t, cellKeys(3)), "", 403, true, false, "RUNNER-TOKEN"},
		{"names no cell at a cell", cell2, cell2Srv, "legacytoken123456789", "", 403, true, false, "RUNNER-TOKEN"},
		{"names no cell at the legacy cell", legacy, legacySrv, "legacytoken123456789", "", 200, false, true, "RUNNER-TOKEN"},
		{"token only in the body", cell2, cell2Srv, "", routable(t, cellKeys(2)), 200, false, true, "body"},
		{"no token", legacy, legacySrv, "", "", 400, false, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := call{method: "POST", path: "/api/v4/runners/verify", body: `{"system_id":"s_1"}`}
			if tt.header != "" {
				c.header = map[string]string{"RUNNER-TOKEN": tt.header}
			}
			if tt.body != "" {
				c.body = `{"token":"` + tt.body + `","system_id":"s_1"}`
			}
			res, _ := do(t, tt.srv, c)
			if res.StatusCode != tt.wantStatus {
				t.Errorf("status: got %d, want %d", res.StatusCode, tt.wantStatus)
			}
			r := lastRecord(t, tt.cell)
			if r.Misrouted != tt.wantMisrouted {
				t.Errorf("misrouted: got %v, want %v", r.Misrouted, tt.wantMisrouted)
			}
			if r.Authorized != tt.wantAuthorized {
				t.Errorf("authorized: got %v, want %v", r.Authorized, tt.wantAuthorized)
			}
			if r.TokenSource != tt.wantSource {
				t.Errorf("token source: got %q, want %q", r.TokenSource, tt.wantSource)
			}
			if got := r.Header.Get("Runner-Token"); tt.header != "" && got != "[redacted]" {
				t.Errorf("recorded RUNNER-TOKEN header: got %q, want it redacted", got)
			}
		})
	}
}

func TestRegisterIssuesTokenNamingTheCell(t *testing.T) {
	cell, srv := newCell(t, cellsim.Options{CellID: 3})
	res, body := do(t, srv, call{method: "POST", path: "/api/v4/runners",
		header: map[string]string{"RUNNER-TOKEN": routable(t, cellKeys(3))}, body: `{"description":"r"}`})
	if res.StatusCode != http.StatusCreated {
		t.Fatalf("status: got %d, want 201", res.StatusCode)
	}
	var got struct {
		ID    int64  `json:"id"`
		Token string `json:"token"`
	}
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatalf("answer: %v", err)
	}
	r, err := tokens.ParseRoutable(got.Token)
	if err != nil {
		t.Fatalf("issued token is not routable: %v", err)
	}
	if c, _ := r.Keys.Get(tokens.KeyCell); c != 3 {
		t.Errorf("issued token names cell %d, want 3", c)
	}
	for _, path := range []string{"/api/v4/runners/verify", "/api/v4/runners/router/discovery"} {
		method := "POST"
		if strings.HasSuffix(path, "discovery") {
			method = "GET"
		}
		res, _ := do(t, srv, call{method: method, path: path, header: map[string]string{"RUNNER-TOKEN": got.Token}})
		if res.StatusCode != http.StatusOK {
			t.Errorf("%s with the issued token: got %d, want 200", path, res.StatusCode)
		}
	}
	for _, c := range []call{
		{method: "DELETE", path: "/api/v4/runners/managers", body: `{"token":"` + got.Token + `","system_id":"s_1"}`},
		{method: "DELETE", path: "/api/v4/runners", body: `{"token":"` + got.Token + `"}`},
	} {
		if res, _ := do(t, srv, c); res.StatusCode != http.StatusNoContent {
			t.Errorf("%s %s: got %d, want 204", c.method, c.path, res.StatusCode)
		}
	}
	res, _ = do(t, srv, call{method: "POST", path: "/api/v4/runners/reset_authentication_token", body: `{"token":"` + got.Token + `"}`})
	if res.StatusCode != http.StatusCreated {
		t.Errorf("reset token: got %d, want 201", res.StatusCode)
	}
	if n := cell.Count(func(r cellsim.Record) bool { return r.Misrouted }); n != 0 {
		t.Errorf("misrouted records: got %d, want 0", n)
	}
}

func TestJobRequestLongPoll(t *testing.T) {
	const longPoll = 300 * time.Millisecond
	cell, srv := newCell(t, cellsim.Options{CellID: 2, JobIDBase: 2000001, LongPoll: longPoll})
	runner := map[string]string{"RUNNER-TOKEN": routable(t, cellKeys(2))}

	res, _ := do(t, srv, call{method: "POST", path: "/api/v4/jobs/request", header: runner, body: `{"info":{}}`})
	value := res.Header.Get("X-GitLab-Last-Update")
	if res.StatusCode != http.StatusNoContent || value == "" {
		t.Fatalf("first request: got %d with last update %q, want 204 with a value", res.StatusCode, value)
	}

	start := time.Now()
	res, _ = do(t, srv, call{method: "POST", path: "/api/v4/jobs/request", header: runner, body: `{"last_update":"` + value + `"}`})
	if res.StatusCode != http.StatusNoContent {
		t.Fatalf("held request: got %d, want 204", res.StatusCode)
	}
	if d := time.Since(start); d < longPoll {
		t.Errorf("held request answered after %v, want at least %v", d, longPoll)
	}
	if got := res.Header.Get("X-GitLab-Last-Update"); got != value {
		t.Errorf("last update after the hold: got %q, want %q", got, value)
	}
	if r := lastRecord(t, cell); r.LastUpdate != value || r.Held < longPoll {
		t.Errorf("record: last update %q held %v, want %q held >= %v", r.LastUpdate, r.Held, value, longPoll)
	}

	res, _ = do(t, srv, call{method: "POST", path: "/api/v4/jobs/request", header: runner, body: `{"last_update":"stale"}`})
	if res.StatusCode != http.StatusNoContent || res.Header.Get("X-GitLab-Last-Update") != value {
		t.Errorf("stale last update: got %d %q, want 204 %q at once", res.StatusCode, res.Header.Get("X-GitLab-Last-Update"), value)
	}

	// A job queued while a runner is held is handed to it at once.
	added := make(chan struct{})
	go func() {
		defer close(added)
		poll.Wait(t, 10*time.Second, "the runner's request held", func() bool { return cell.Held() == 1 })
		if _, err := cell.AddJob(); err != nil {
			t.Errorf("AddJob: %v", err)
		}
	}()
	res, body := do(t, srv, call{method: "POST", path: "/api/v4/jobs/request", header: runner, body: `{"last_update":"` + value + `"}`})
	<-added
	if res.StatusCode != http.StatusCreated {
		t.Fatalf("request after AddJob: got %d, want 201", res.StatusCode)
	}
	var job struct {
		ID    uint64 `json:"id"`
		Token string `json:"token"`
	}
	if err := json.Unmarshal(body, &job); err != nil {
		t.Fatalf("job JSON: %v", err)
	}
	if job.ID != 2000001 || job.Token == "" {
		t.Errorf("job: got id %d (token present %v), want id 2000001 and a token", job.ID, job.Token != "")
	}
	if got := res.Header.Get("X-GitLab-Last-Update"); got == value || got == "" {
		t.Errorf("last update after a job was queued: got %q, want a new value", got)
	}
	if r := lastRecord(t, cell); r.JobID != job.ID {
		t.Errorf("record job id: got %d, want %d", r.JobID, job.ID)
	}
}

func TestJobCalls(t *testing.T) {
	cell, srv := newCell(t, cellsim.Options{CellID: 2, JobIDBase: 2000001})
	id, err := cell.AddJob()
	if err != nil {
		t.Fatalf("AddJob: %v", err)
	}
	j, _ := cell.Job(id)
	jobToken := map[string]string{"JOB-TOKEN": j.Token}
	path := "/api/v4/jobs/2000001"

	res, _ := do(t, srv, call{method: "PUT", path: path, body: `{"token":"` + j.Token + `","state":"running"}`})
	if res.StatusCode != http.StatusOK || res.Header.Get("Job-Status") != "running" {
		t.Errorf("PUT with the job token in the body: got %d Job-Status %q, want 200 running", res.StatusCode, res.Header.Get("Job-Status"))
	}

	patches := []struct {
		contentRange, body string
		wantStatus         int
		wantRange          string
	}{
		{"0-5", "hello\n", 202, "0-6"},
		{"6-11", "world\n", 202, "0-12"},
		{"3-5", "lo\n", 416, "0-12"},
	}
	for _, p := range patches {
		req, _ := http.NewRequest("PATCH", srv.URL+path+"/trace?debug_trace=false", strings.NewReader(p.body))
		req.Header.Set("Content-Type", "text/plain")
		req.Header.Set("Content-Range", p.contentRange)
		req.Header.Set("JOB-TOKEN", j.Token)
		res, err := srv.Client().Do(req)
		if err != nil {
			t.Fatalf("PATCH: %v", err)
		}
		res.Body.Close()
		if res.StatusCode != p.wantStatus || res.Header.Get("Range") != p.wantRange {
			t.Errorf("PATCH %s: got %d Range %q, want %d %q", p.contentRange, res.StatusCode, res.Header.Get("Range"), p.wantStatus, p.wantRange)
		}
	}
	if got, _ := cell.Job(id); string(got.Trace) != "hello\nworld\n" {
		t.Errorf("trace: got %q", got.Trace)
	}

	res, _ = do(t, srv, call{method: "PUT", path: "/api/v4/jobs/42", header: jobToken, body: `{"state":"success"}`})
	if r := lastRecord(t, cell); res.StatusCode != http.StatusNotFound || !r.Misrouted {
		t.Errorf("PUT of a job the cell does not own: got %d misrouted %v, want 404 true", res.StatusCode, r.Misrouted)
	}
	res, _ = do(t, srv, call{method: "PUT", path: path, header: map[string]string{"JOB-TOKEN": "glcbt-wrong"}, body: `{"state":"success"}`})
	if res.StatusCode != http.StatusForbidden {
		t.Errorf("PUT with a wrong job token: got %d, want 403", res.StatusCode)
	}
}

func TestArtifactsStreamed(t *testing.T) {
	cell, srv := newCell(t, cellsim.Options{CellID: 2, JobIDBase: 7})
	id, _ := cell.AddJob()
	j, _ := cell.Job(id)

	const size = 8 << 20
	pr, pw := io.Pipe()
	fileHash := sha256.New()
	bodyHash := sha256.New()
	boundary := "b0undary"
	go func() {
		w := io.MultiWriter(pw, bodyHash)
		io.WriteString(w, "--"+boundary+"\r\nContent-Disposition: form-data; name=\"file\"; filename=\"artifacts.zip\"\r\nContent-Type: application/octet-stream\r\n\r\n")
		chunk := bytes.Repeat([]byte("0123456789abcdef"), 4096)
		for n := 0; n < size; n += len(chunk) {
			fileHash.Write(chunk)
			w.Write(chunk)
		}
		io.WriteString(w, "\r\n--"+boundary+"--\r\n")
		pw.Close()
	}()
	req, _ := http.NewRequest("POST", srv.URL+"/api/v4/jobs/7/artifacts?artifact_format=zip&artifact_type=archive", pr)
	req.Header.Set("Content-Type", "multipart/form-data; boundary="+boundary)
	req.Header.Set("JOB-TOKEN", j.Token)
	res, err := srv.Client().Do(req)
	if err != nil {
		t.Fatalf("upload: %v", err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusCreated {
		t.Fatalf("upload: got %d, want 201", res.StatusCode)
	}
	r := lastRecord(t, cell)
	if want := hex.EncodeToString(fileHash.Sum(nil)); r.FileSHA256 != want || r.FileSize != size {
		t.Errorf("file part: got %s (%d bytes), want %s (%d bytes)", r.FileSHA256, r.FileSize, want, size)
	}
	if want := hex.EncodeToString(bodyHash.Sum(nil)); r.BodySHA256 != want {
		t.Errorf("body sha256: got %s, want %s", r.BodySHA256, want)
	}
	if r.ContentLength != -1 || len(r.TransferEncoding) != 1 || r.TransferEncoding[0] != "chunked" {
		t.Errorf("framing: got Content-Length %d Transfer-Encoding %v, want -1 [chunked]", r.ContentLength, r.TransferEncoding)
	}

	client := *srv.Client()
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	req, _ = http.NewRequest("GET", srv.URL+"/api/v4/jobs/7/artifacts?direct_download=true", nil)
	req.Header.Set("JOB-TOKEN", j.Token)
	res, err = client.Do(req)
	if err != nil {
		t.Fatalf("download: %v", err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusFound || res.Header.Get("Location") != cell.ArtifactURL(7) {
		t.Errorf("download: got %d Location %q, want 302 %q", res.StatusCode, res.Header.Get("Location"), cell.ArtifactURL(7))
	}
}

// TestArtifactDownload: a download is 302 only for a job with an artifact, with its job token,
// or with no token at all when the cell's artifacts are public.
func TestArtifactDownload(t *testing.T) {
	tests := []struct {
		name       string
		public     bool
		artifact   bool
		token      string // "job": the job's own token
		wantStatus int
	}{
		{"job token", false, true, "job", http.StatusFound},
		{"job token, no artifact", false, false, "job", http.StatusNotFound},
		{"no token", false, true, "", http.StatusForbidden},
		{"no token, public artifacts", true, true, "", http.StatusFound},
		{"wrong token, public artifacts", true, true, "glcbt-wrong", http.StatusForbidden},
		{"job token, public artifacts", true, true, "job", http.StatusFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cell, srv := newCell(t, cellsim.Options{CellID: 2, JobIDBase: 2000000, PublicArtifacts: tt.public})
			id, err := cell.AddJob()
			if err != nil {
				t.Fatalf("AddJob: %v", err)
			}
			if tt.artifact {
				if err := cell.PutArtifact(id, []byte("zip")); err != nil {
					t.Fatalf("PutArtifact: %v", err)
				}
			}
			token := tt.token
			if token == "job" {
				j, _ := cell.Job(id)
				token = j.Token
			}
			client := *srv.Client()
			client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
			req, _ := http.NewRequest("GET", srv.URL+"/api/v4/jobs/2000000/artifacts", nil)
			if token != "" {
				req.Header.Set("JOB-TOKEN", token)
			}
			res, err := client.Do(req)
			if err != nil {
				t.Fatalf("download: %v", err)
			}
			res.Body.Close()
			if res.StatusCode != tt.wantStatus {
				t.Errorf("status: got %d, want %d", res.StatusCode, tt.wantStatus)
			}
			if tt.wantStatus == http.StatusFound && res.Header.Get("Location") != cell.ArtifactURL(id) {
				t.Errorf("Location: got %q, want %q", res.Header.Get("Location"), cell.ArtifactURL(id))
			}
			if r := lastRecord(t, cell); r.Authorized != (tt.wantStatus != http.StatusForbidden) {
				t.Errorf("authorized: got %v, want %v", r.Authorized, tt.wantStatus != http.StatusForbidden)
			}
		})
	}
	cell, _ := newCell(t, cellsim.Options{CellID: 2})
	if err := cell.PutArtifact(99, nil); !errors.Is(err, cellsim.ErrNoJob) {
		t.Errorf("PutArtifact of an unknown job: got %v, want ErrNoJob", err)
	}
}

func TestBodyRecordedExactly(t *testing.T) {
	cell, srv := newCell(t, cellsim.Options{CellID: 1, Legacy: true})
	body := `{"token":"legacytoken123456789","info":{"name":"gitlab-runner"}}`
	res, _ := do(t, srv, call{method: "POST", path: "/api/v4/runners/verify", body: body})
	if res.StatusCode != http.StatusOK {
		t.Fatalf("status: got %d, want 200", res.StatusCode)
	}
	r := lastRecord(t, cell)
	sum := sha256.Sum256([]byte(body))
	if r.BodySHA256 != hex.EncodeToString(sum[:]) || r.BodyLen != int64(len(body)) || r.ContentLength != int64(len(body)) {
		t.Errorf("body: got %s %d bytes (Content-Length %d), want %x %d", r.BodySHA256, r.BodyLen, r.ContentLength, sum, len(body))
	}
	if r.BodyToken != "legacytoken123456789" || r.TokenSource != "body" {
		t.Errorf("token: got source %q, body token set %v", r.TokenSource, r.BodyToken != "")
	}

	res, _ = do(t, srv, call{method: "GET", path: "/nowhere", header: map[string]string{"X-Forwarded-For": "192.0.2.1"}})
	r = lastRecord(t, cell)
	if res.StatusCode != http.StatusNotFound || r.Route != cellsim.RouteUnknown || r.Misrouted || r.Header.Get("X-Forwarded-For") != "192.0.2.1" {
		t.Errorf("unknown path: got %d route %q misrouted %v XFF %q", res.StatusCode, r.Route, r.Misrouted, r.Header.Get("X-Forwarded-For"))
	}
}

func TestCanceledRequestsAreRecorded(t *testing.T) {
	cell, srv := newCell(t, cellsim.Options{CellID: 2, LongPoll: time.Minute})
	token := routable(t, cellKeys(2))
	value := cell.QueueValue()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/api/v4/jobs/request", strings.NewReader(`{"last_update":"`+value+`"}`))
	req.Header.Set("RUNNER-TOKEN", token)
	errc := make(chan error, 1)
	go func() {
		res, err := srv.Client().Do(req)
		if err == nil {
			res.Body.Close()
		}
		errc <- err
	}()
	poll.Until(t, 10*time.Second, "the request held", func() bool { return cell.Held() == 1 })
	cancel()
	if err := <-errc; err == nil {
		t.Errorf("canceled request: got an answer, want an error")
	}
	wctx, wcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer wcancel()
	r, err := cell.Wait(wctx, func(r cellsim.Record) bool { return r.Route == cellsim.RouteJobRequest })
	if err != nil {
		t.Fatalf("Wait: %v", err)
	}
	if !r.Canceled || r.Status != 499 {
		t.Errorf("record: got canceled %v status %d, want true 499", r.Canceled, r.Status)
	}
	if cell.Held() != 0 {
		t.Errorf("held after cancel: got %d, want 0", cell.Held())
	}

	// The client gives up on a stalled request once the cell is serving it: the first request
	// is gone, then one is in flight again.
	poll.Until(t, 10*time.Second, "no request in flight", func() bool { return cell.InFlight() == 0 })
	cell.SetStall(time.Minute)
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	go func() {
		poll.Wait(t, 10*time.Second, "the upload in flight", func() bool { return cell.InFlight() == 1 })
		cancel()
	}()
	req, _ = http.NewRequestWithContext(ctx, "POST", srv.URL+"/api/v4/runners/verify", strings.NewReader(`{}`))
	req.Header.Set("RUNNER-TOKEN", token)
	if res, err := srv.Client().Do(req); err == nil {
		res.Body.Close()
		t.Errorf("stalled request: got %d, want it canceled", res.StatusCode)
	}
	r, err = cell.Wait(wctx, func(r cellsim.Record) bool { return r.Route == cellsim.RouteVerify })
	if err != nil {
		t.Fatalf("Wait: %v", err)
	}
	if !r.Canceled {
		t.Errorf("stalled record: got canceled false, want true")
	}
}

func TestJWTJobTokens(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatalf("key: %v", err)
	}
	for _, legacy := range []bool{false, true} {
		cell, srv := newCell(t, cellsim.Options{CellID: 3, JobToken: &cellsim.JobTokenSigner{
			Key: key, Algorithm: "RS256", KID: "k1", Issuer: "https://gitlab.example.com",
			Audience: "gitlab-authz-token", LegacyCellID: legacy,
		}})
		id, _ := cell.AddJob()
		j, _ := cell.Job(id)
		raw, ok := tokens.JobJWT(j.Token)
		if !ok {
			t.Fatalf("legacy form %v: job token is not a JWT", legacy)
		}
		claims, err := tokens.ParseJobClaimsUnverified(raw)
		if err != nil {
			t.Fatalf("claims: %v", err)
		}
		if c, _ := claims.Keys.Get(tokens.KeyCell); c != 3 || claims.JobID != id {
			t.Errorf("legacy form %v: claims name cell %d job %d, want 3 and %d", legacy, c, claims.JobID, id)
		}
		res, _ := do(t, srv, call{method: "PUT", path: "/api/v4/jobs/1", header: map[string]string{"JOB-TOKEN": j.Token}, body: `{"state":"success"}`})
		if res.StatusCode != http.StatusOK {
			t.Errorf("PUT with the JWT job token: got %d, want 200", res.StatusCode)
		}
	}
}

func TestNewServer(t *testing.T) {
	s, err := cellsim.NewServer("", cellsim.Options{CellID: 5, LongPoll: time.Minute})
	if err != nil {
		t.Fatalf("NewServer: %v", err)
	}
	held := make(chan error, 1)
	go func() {
		req, _ := http.NewRequest("POST", s.URL+"/api/v4/jobs/request", strings.NewReader(`{"last_update":"`+s.QueueValue()+`"}`))
		req.Header.Set("RUNNER-TOKEN", routable(t, cellKeys(5)))
		res, err := http.DefaultClient.Do(req)
		if err == nil {
			res.Body.Close()
		}
		held <- err
	}()
	poll.Until(t, 10*time.Second, "the request held", func() bool { return s.Held() == 1 })
	if err := s.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := <-held; err == nil {
		t.Errorf("held request after Close: got an answer, want an error")
	}
}

// The calls that fail a job as a runner would (runner-api.md, admission): a trace line, then
// state failed with runner_system_failure, both checked by job id; a job that ended answers a
// later state 403 with its status.
func TestFailJobAsARunner(t *testing.T) {
	cell, srv := newCell(t, cellsim.Options{CellID: 2, JobIDBase: 2000001})
	id, err := cell.AddJob()
	if err != nil {
		t.Fatal(err)
	}
	j, _ := cell.Job(id)
	path := "/api/v4/jobs/" + strconv.FormatUint(id, 10)
	line := "edge: admission controller policy rejected this job: image not allowed\n"
	req, _ := http.NewRequest("PATCH", srv.URL+path+"/trace", strings.NewReader(line))
	req.Header.Set("JOB-TOKEN", j.Token)
	req.Header.Set("Content-Range", "0-"+strconv.Itoa(len(line)-1))
	res, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusAccepted {
		t.Fatalf("trace: %d", res.StatusCode)
	}
	fail := `{"token":"` + j.Token + `","state":"failed","failure_reason":"runner_system_failure","exit_code":1}`
	if res, _ := do(t, srv, call{method: "PUT", path: path, body: fail}); res.StatusCode != http.StatusOK || res.Header.Get("Job-Status") != "failed" {
		t.Fatalf("PUT failed: %d %q", res.StatusCode, res.Header.Get("Job-Status"))
	}
	got, _ := cell.Job(id)
	if got.State != "failed" || got.FailureReason != "runner_system_failure" || string(got.Trace) != line {
		t.Errorf("job %d: state %q reason %q trace %q", id, got.State, got.FailureReason, got.Trace)
	}
	if res, _ := do(t, srv, call{method: "PUT", path: path, body: fail}); res.StatusCode != http.StatusOK {
		t.Errorf("the same state again: %d, want 200", res.StatusCode)
	}
	res, _ = do(t, srv, call{method: "PUT", path: path, body: `{"token":"` + j.Token + `","state":"success"}`})
	if res.StatusCode != http.StatusForbidden || res.Header.Get("Job-Status") != "failed" {
		t.Errorf("success after failed: %d Job-Status %q, want 403 failed", res.StatusCode, res.Header.Get("Job-Status"))
	}
}
