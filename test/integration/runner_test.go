package integration

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"io"
	"math/rand/v2"
	"mime/multipart"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"gitlab.com/edge/edge/internal/testkit/cellsim"
	"gitlab.com/edge/edge/tokens"
)

// runnerVersion is what one gitlab-runner release puts on the wire (network/gitlab.go,
// network/client.go, common/network.go).
type runnerVersion struct {
	version, branch, goVersion string
	// tokenHeaders: 17.11 added RUNNER-TOKEN and JOB-TOKEN headers (for Cells routing) to the
	// calls that before carried the token only in the JSON body.
	tokenHeaders bool
}

func runner1711() runnerVersion { return runnerVersion{"17.11.0", "17-11-stable", "go1.23.6", true} }
func runner169() runnerVersion  { return runnerVersion{"16.9.1", "16-9-stable", "go1.21.7", false} }

// userAgent is common.AppVersion.UserAgent().
func (v runnerVersion) userAgent() string {
	return fmt.Sprintf("gitlab-runner %s (%s; %s; linux/amd64)", v.version, v.branch, v.goVersion)
}

// The JSON bodies, field for field as gitlab-runner's structs marshal them.
type featuresInfo struct {
	Variables               bool `json:"variables"`
	Image                   bool `json:"image"`
	Services                bool `json:"services"`
	Artifacts               bool `json:"artifacts"`
	Cache                   bool `json:"cache"`
	FallbackCacheKeys       bool `json:"fallback_cache_keys"`
	Shared                  bool `json:"shared"`
	UploadMultipleArtifacts bool `json:"upload_multiple_artifacts"`
	UploadRawArtifacts      bool `json:"upload_raw_artifacts"`
	Session                 bool `json:"session"`
	Terminal                bool `json:"terminal"`
	Refspecs                bool `json:"refspecs"`
	Masking                 bool `json:"masking"`
	Proxy                   bool `json:"proxy"`
	RawVariables            bool `json:"raw_variables"`
	ArtifactsExclude        bool `json:"artifacts_exclude"`
	MultiBuildSteps         bool `json:"multi_build_steps"`
	TraceReset              bool `json:"trace_reset"`
	TraceChecksum           bool `json:"trace_checksum"`
	TraceSize               bool `json:"trace_size"`
	VaultSecrets            bool `json:"vault_secrets"`
	Cancelable              bool `json:"cancelable"`
	ReturnExitCode          bool `json:"return_exit_code"`
	ServiceVariables        bool `json:"service_variables"`
	ServiceMultipleAliases  bool `json:"service_multiple_aliases"`
	ImageExecutorOpts       bool `json:"image_executor_opts"`
	ServiceExecutorOpts     bool `json:"service_executor_opts"`
	CancelGracefully        bool `json:"cancel_gracefully"`
	NativeStepsIntegration  bool `json:"native_steps_integration"`
}

type versionInfo struct {
	Name         string       `json:"name,omitempty"`
	Version      string       `json:"version,omitempty"`
	Revision     string       `json:"revision,omitempty"`
	Platform     string       `json:"platform,omitempty"`
	Architecture string       `json:"architecture,omitempty"`
	Executor     string       `json:"executor,omitempty"`
	Shell        string       `json:"shell,omitempty"`
	Features     featuresInfo `json:"features"`
	Config       struct {
		Gpus string `json:"gpus"`
	} `json:"config,omitempty"`
}

type verifyRunnerRequest struct {
	Token    string `json:"token,omitempty"`
	SystemID string `json:"system_id,omitempty"`
}

type jobRequest struct {
	Info       versionInfo `json:"info,omitempty"`
	Token      string      `json:"token,omitempty"`
	SystemID   string      `json:"system_id,omitempty"`
	LastUpdate string      `json:"last_update,omitempty"`
}

type jobTraceOutput struct {
	Checksum string `json:"checksum,omitempty"`
	Bytesize int    `json:"bytesize,omitempty"`
}

type updateJobRequest struct {
	Info          versionInfo    `json:"info,omitempty"`
	Token         string         `json:"token,omitempty"`
	State         string         `json:"state,omitempty"`
	FailureReason string         `json:"failure_reason,omitempty"`
	Checksum      string         `json:"checksum,omitempty"`
	Output        jobTraceOutput `json:"output,omitempty"`
	ExitCode      int            `json:"exit_code,omitempty"`
}

type tokenOnlyRequest struct {
	Token    string `json:"token,omitempty"`
	SystemID string `json:"system_id,omitempty"`
}

const systemID = "s_8990f2d9e3c1"

func (v runnerVersion) info() versionInfo {
	return versionInfo{
		Name: "gitlab-runner", Version: v.version, Revision: "0f67ff19", Platform: "linux",
		Architecture: "amd64", Executor: "shell", Shell: "bash",
		Features: featuresInfo{
			Variables: true, Artifacts: true, Cache: true, FallbackCacheKeys: true, Shared: true,
			UploadMultipleArtifacts: true, UploadRawArtifacts: true, Refspecs: true, Masking: true,
			RawVariables: true, ArtifactsExclude: true, MultiBuildSteps: true, TraceReset: true,
			TraceChecksum: true, TraceSize: true, VaultSecrets: true, Cancelable: true,
			ReturnExitCode: true, CancelGracefully: true,
		},
	}
}

// outgoing is one request as a runner sends it. A body is sent with Content-Length; a stream
// is generated while it is sent, chunked, and never held in memory.
type outgoing struct {
	method, path string
	header       http.Header
	body         []byte
	stream       func(w io.Writer) error
}

// doJSON is network/client.go's doJSON: JSON body, Accept when an answer is decoded.
func (v runnerVersion) doJSON(method, path string, body any, wantsAnswer bool, tokenHeader, token string) outgoing {
	b, err := json.Marshal(body)
	if err != nil {
		panic(err) // the request types always marshal
	}
	h := http.Header{"User-Agent": {v.userAgent()}, "Content-Type": {"application/json"}}
	if wantsAnswer {
		h.Set("Accept", "application/json")
	}
	if v.tokenHeaders && tokenHeader != "" && token != "" {
		h.Set(tokenHeader, token)
	}
	return outgoing{method: method, path: path, header: h, body: b}
}

func (v runnerVersion) verify(token string) outgoing {
	return v.doJSON("POST", "/api/v4/runners/verify", verifyRunnerRequest{Token: token, SystemID: systemID}, true, "RUNNER-TOKEN", token)
}

func (v runnerVersion) register(token string) outgoing {
	body := struct {
		Description string      `json:"description,omitempty"`
		RunUntagged bool        `json:"run_untagged"`
		Locked      bool        `json:"locked"`
		Paused      bool        `json:"paused"`
		Info        versionInfo `json:"info,omitempty"`
		Token       string      `json:"token,omitempty"`
	}{Description: "integration", RunUntagged: true, Info: v.info(), Token: token}
	return v.doJSON("POST", "/api/v4/runners", body, true, "RUNNER-TOKEN", token)
}

func (v runnerVersion) unregister(token string) outgoing {
	return v.doJSON("DELETE", "/api/v4/runners", tokenOnlyRequest{Token: token}, false, "RUNNER-TOKEN", token)
}

func (v runnerVersion) unregisterManager(token string) outgoing {
	return v.doJSON("DELETE", "/api/v4/runners/managers", tokenOnlyRequest{Token: token, SystemID: systemID}, false, "RUNNER-TOKEN", token)
}

// resetToken carries the token only in the body, in every runner version.
func (v runnerVersion) resetToken(token string) outgoing {
	return v.doJSON("POST", "/api/v4/runners/reset_authentication_token", tokenOnlyRequest{Token: token}, true, "", "")
}

// discovery is GetRouterDiscovery: RUNNER-TOKEN only, no body.
func (v runnerVersion) discovery(token string) outgoing {
	return outgoing{method: "GET", path: "/api/v4/runners/router/discovery", header: http.Header{
		"User-Agent": {v.userAgent()}, "Accept": {"application/json"}, "Runner-Token": {token},
	}}
}

func (v runnerVersion) requestJob(token, lastUpdate string) outgoing {
	body := jobRequest{Info: v.info(), Token: token, SystemID: systemID, LastUpdate: lastUpdate}
	return v.doJSON("POST", "/api/v4/jobs/request", body, true, "RUNNER-TOKEN", token)
}

func (v runnerVersion) updateJob(id uint64, jobToken, state string, traceSize int) outgoing {
	body := updateJobRequest{Info: v.info(), Token: jobToken, State: state, Output: jobTraceOutput{Checksum: "crc32:0badc0de", Bytesize: traceSize}}
	return v.doJSON("PUT", fmt.Sprintf("/api/v4/jobs/%d", id), body, false, "JOB-TOKEN", jobToken)
}

// patchTrace has used JOB-TOKEN for a long time; Content-Range end is inclusive.
func (v runnerVersion) patchTrace(id uint64, jobToken string, start int, chunk []byte) outgoing {
	return outgoing{method: "PATCH", path: fmt.Sprintf("/api/v4/jobs/%d/trace?debug_trace=false", id), body: chunk, header: http.Header{
		"User-Agent":    {v.userAgent()},
		"Content-Type":  {"text/plain"},
		"Content-Range": {fmt.Sprintf("%d-%d", start, start+len(chunk)-1)},
		"Job-Token":     {jobToken},
	}}
}

// artifactFile is the file part of an upload, generated from a seed while it is sent.
type artifactFile struct {
	size int64
	seed uint64
	h    hash.Hash
}

func (f *artifactFile) sum() string { return hex.EncodeToString(f.h.Sum(nil)) }

// uploadArtifacts streams a multipart form with one "file" part of f.size pseudo-random bytes,
// as UploadRawArtifacts does through an io.Pipe.
func (v runnerVersion) uploadArtifacts(id uint64, jobToken string, f *artifactFile) outgoing {
	boundary := "2f9cb1e7d5a0c4b3a1d0e6f7c8b9a0d1e2f3a4b5c6d7e8f9a0b1c2d3e4f5"
	q := url.Values{"artifact_format": {"zip"}, "artifact_type": {"archive"}, "expire_in": {"1 day"}}
	return outgoing{
		method: "POST",
		path:   fmt.Sprintf("/api/v4/jobs/%d/artifacts?%s", id, q.Encode()),
		header: http.Header{
			"User-Agent":   {v.userAgent()},
			"Content-Type": {"multipart/form-data; boundary=" + boundary},
			"Job-Token":    {jobToken},
		},
		stream: func(w io.Writer) error {
			mw := multipart.NewWriter(w)
			if err := mw.SetBoundary(boundary); err != nil {
				return err
			}
			part, err := mw.CreateFormFile("file", "artifacts.zip")
			if err != nil {
				return err
			}
			f.h = sha256.New()
			rng := rand.NewChaCha8([32]byte{byte(f.seed), byte(f.seed >> 8), 7})
			buf := make([]byte, 64<<10)
			for left := f.size; left > 0; {
				n := min(int64(len(buf)), left)
				_, _ = rng.Read(buf[:n])
				f.h.Write(buf[:n])
				if _, err := part.Write(buf[:n]); err != nil {
					return err
				}
				left -= n
			}
			return mw.Close()
		},
	}
}

func (v runnerVersion) downloadArtifacts(id uint64, jobToken string) outgoing {
	return outgoing{method: "GET", path: fmt.Sprintf("/api/v4/jobs/%d/artifacts?direct_download=true", id), header: http.Header{
		"User-Agent": {v.userAgent()}, "Job-Token": {jobToken},
	}}
}

// answer is what came back, and a summary of what was sent.
type answer struct {
	status  int
	header  http.Header
	body    []byte
	sent    outgoing
	sentSHA string
	sentLen int64
	chunked bool
}

// send sends o to the edge and reads the whole answer.
func (e *env) send(t *testing.T, o outgoing) answer {
	t.Helper()
	e.noteTokens(o)
	return sendTo(t, e.client, e.edge.PublicURL, o)
}

func sendTo(t *testing.T, client *http.Client, base string, o outgoing) answer {
	t.Helper()
	a, err := trySend(context.Background(), client, base, o)
	if err != nil {
		t.Fatalf("%s %s: %v", o.method, o.path, err)
	}
	return a
}

func trySend(ctx context.Context, client *http.Client, base string, o outgoing) (answer, error) {
	a := answer{sent: o}
	var body io.Reader
	var streamDone chan streamResult
	h := sha256.New()
	switch {
	case o.stream != nil:
		pr, pw := io.Pipe()
		body, a.chunked = pr, true
		streamDone = make(chan streamResult, 1)
		go func() {
			counter := &countingWriter{}
			err := o.stream(io.MultiWriter(pw, h, counter))
			pw.CloseWithError(err)
			streamDone <- streamResult{counter.n, err}
		}()
		defer pr.Close()
	case o.body != nil:
		body = bytes.NewReader(o.body)
		h.Write(o.body)
		a.sentLen = int64(len(o.body))
	}
	req, err := http.NewRequestWithContext(ctx, o.method, base+o.path, body)
	if err != nil {
		return a, err
	}
	for k, vs := range o.header {
		req.Header[k] = vs
	}
	res, err := client.Do(req)
	if err != nil {
		return a, err
	}
	defer res.Body.Close()
	a.status, a.header = res.StatusCode, res.Header
	if a.body, err = io.ReadAll(res.Body); err != nil {
		return a, fmt.Errorf("read answer: %w", err)
	}
	if streamDone != nil {
		r := <-streamDone
		if r.err != nil {
			return a, fmt.Errorf("stream body: %w", r.err)
		}
		a.sentLen = r.n
	}
	a.sentSHA = hex.EncodeToString(h.Sum(nil))
	return a, nil
}

type streamResult struct {
	n   int64
	err error
}

type countingWriter struct{ n int64 }

func (c *countingWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

// checkDelivered checks that the cell got the request exactly as the runner sent it: the same
// body bytes, framed the same way, and the same headers that matter to GitLab.
func checkDelivered(t *testing.T, rec cellsim.Record, a answer) {
	t.Helper()
	if rec.Method != a.sent.method {
		t.Errorf("method at the cell: got %s, want %s", rec.Method, a.sent.method)
	}
	path, query, _ := strings.Cut(a.sent.path, "?")
	if rec.Path != path || rec.Query != query {
		t.Errorf("URL at the cell: got %s?%s, want %s", rec.Path, rec.Query, a.sent.path)
	}
	if rec.BodySHA256 != a.sentSHA || rec.BodyLen != a.sentLen {
		t.Errorf("body at the cell: got %d bytes sha256 %s, want %d bytes sha256 %s", rec.BodyLen, rec.BodySHA256, a.sentLen, a.sentSHA)
	}
	switch {
	case a.chunked:
		if rec.ContentLength != -1 || !slices.Equal(rec.TransferEncoding, []string{"chunked"}) {
			t.Errorf("framing at the cell: got Content-Length %d Transfer-Encoding %v, want chunked as sent", rec.ContentLength, rec.TransferEncoding)
		}
	case a.sentLen > 0:
		if rec.ContentLength != a.sentLen || len(rec.TransferEncoding) != 0 {
			t.Errorf("framing at the cell: got Content-Length %d Transfer-Encoding %v, want Content-Length %d as sent", rec.ContentLength, rec.TransferEncoding, a.sentLen)
		}
	}
	for _, k := range []string{"User-Agent", "Content-Type", "Content-Range", "Accept"} {
		if got, want := rec.Header.Get(k), a.sent.header.Get(k); got != want {
			t.Errorf("%s at the cell: got %q, want %q", k, got, want)
		}
	}
	for _, k := range []string{"Runner-Token", "Job-Token", "Private-Token"} {
		_, sent := a.sent.header[k]
		if present := rec.Header.Get(k) != ""; present != sent {
			t.Errorf("%s header at the cell: present %v, sent %v", k, present, sent)
		}
	}
}

// routableToken mints a runner token (glrt-) with the given keys and a random part from seed.
func routableToken(t *testing.T, prefix string, seed byte, keys tokens.Keys) string {
	t.Helper()
	var random [16]byte
	for i := range random {
		random[i] = seed + byte(i)
	}
	tok, err := tokens.MintRoutable(prefix, random, keys)
	if err != nil {
		t.Fatalf("MintRoutable: %v", err)
	}
	return tok
}

// runnerToken is an instance runner token naming cell (organization 1).
func runnerToken(t *testing.T, cell uint64) string {
	t.Helper()
	return routableToken(t, "glrt-t1_", byte(cell*16), tokens.Keys{}.Set(tokens.KeyCell, cell).Set(tokens.KeyOrganization, 1).Set(tokens.KeyRunnerType, 1))
}

// jobAnswer is the part of a 201 job request answer the tests read.
type jobAnswer struct {
	ID    uint64 `json:"id"`
	Token string `json:"token"`
}

func decodeJob(t *testing.T, a answer) jobAnswer {
	t.Helper()
	var j jobAnswer
	if err := json.Unmarshal(a.body, &j); err != nil {
		t.Fatalf("job answer: %v (%q)", err, redactTokens(a.body))
	}
	if j.ID == 0 || j.Token == "" {
		t.Fatalf("job answer without id or token: %s", redactTokens(a.body))
	}
	return j
}
