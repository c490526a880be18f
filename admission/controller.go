package admission

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"

	"gitlab.com/edge/edge/internal/guard"
)

// Controller is one admission controller.
type Controller struct {
	Name string
	URL  string // where to POST the request; through Transport
	// Transport reaches the controller (an agent's tunnel for a controller in a cluster).
	Transport http.RoundTripper
	Timeout   time.Duration // default 2 s
	// AdmitOnError: a controller that times out or fails admits the job (on_error: admit);
	// otherwise it rejects it.
	AdmitOnError bool
	Cells        []uint64 // empty: every cell
	// Sign, when set, makes the bearer token of each call (an HS256 JWT for this controller).
	Sign func(audience string) (string, error)
	// Guard contains a panic of the call (nil: contained, logged to standard error, not
	// counted): the controller counts as failed, as its AdmitOnError says.
	Guard *guard.Guard
}

// Decision is a controller's answer.
type Decision struct {
	Admitted bool   `json:"admitted"`
	Reason   string `json:"reason"`
}

// Result is one controller's part of a verdict.
type Result struct {
	Controller string
	Decision
	Err  error // the call failed: Decision follows AdmitOnError
	Took time.Duration
}

// Verdict is all controllers' answer: admitted when every one admits.
type Verdict struct {
	Admitted bool
	Results  []Result
}

// Rejection is the first result that rejected, for the trace line and the log.
func (v Verdict) Rejection() (Result, bool) {
	for _, r := range v.Results {
		if !r.Admitted {
			return r, true
		}
	}
	return Result{}, false
}

// InScope tells whether the controller is asked about jobs of cell.
func (c *Controller) InScope(cell uint64) bool {
	return len(c.Cells) == 0 || slices.Contains(c.Cells, cell)
}

// Ask asks every controller in scope of req's cell, in parallel; the verdict comes when the
// slowest has answered or timed out.
func Ask(ctx context.Context, controllers []*Controller, req Request) Verdict {
	body, err := json.Marshal(req)
	if err != nil {
		return Verdict{Results: []Result{{Controller: "edge", Err: err, Decision: Decision{Reason: "request not encodable"}}}}
	}
	var asked []*Controller
	for _, c := range controllers {
		if c.InScope(req.Cell) {
			asked = append(asked, c)
		}
	}
	results := make([]Result, len(asked))
	var wg sync.WaitGroup
	for i, c := range asked {
		wg.Go(func() {
			defer c.Guard.Recover("admission", func(bool) { results[i] = c.failed(errCrashed, 0) })
			results[i] = c.ask(ctx, body)
		})
	}
	wg.Wait()
	v := Verdict{Admitted: true, Results: results}
	for _, r := range results {
		v.Admitted = v.Admitted && r.Admitted
	}
	return v
}

// Unread is the verdict on a job edge could not read whole: every controller in scope of cell
// counts as failed, as its on_error says.
func Unread(controllers []*Controller, cell uint64, cause error) Verdict {
	v := Verdict{Admitted: true}
	for _, c := range controllers {
		if c.InScope(cell) {
			r := Result{Controller: c.Name, Err: cause, Decision: Decision{Admitted: c.AdmitOnError, Reason: cause.Error()}}
			v.Results = append(v.Results, r)
			v.Admitted = v.Admitted && r.Admitted
		}
	}
	return v
}

// maxAnswer bounds a controller's answer.
const maxAnswer = 64 << 10

func (c *Controller) ask(ctx context.Context, body []byte) Result {
	start := time.Now()
	d, err := c.call(ctx, body)
	if err != nil {
		return c.failed(err, time.Since(start))
	}
	return Result{Controller: c.Name, Decision: d, Took: time.Since(start)}
}

// failed is the result of a call that failed: the decision AdmitOnError says.
func (c *Controller) failed(err error, took time.Duration) Result {
	return Result{Controller: c.Name, Err: err, Took: took,
		Decision: Decision{Admitted: c.AdmitOnError, Reason: fmt.Sprintf("controller %s failed: %v", c.Name, err)}}
}

func (c *Controller) call(ctx context.Context, body []byte) (Decision, error) {
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = 2 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.URL, bytes.NewReader(body))
	if err != nil {
		return Decision{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	if c.Sign != nil {
		tok, err := c.Sign(c.Name)
		if err != nil {
			return Decision{}, fmt.Errorf("sign: %w", err)
		}
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	transport := c.Transport
	if transport == nil {
		transport = http.DefaultTransport
	}
	resp, err := transport.RoundTrip(req)
	if err != nil {
		return Decision{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Decision{}, fmt.Errorf("answered %s", resp.Status)
	}
	var d Decision
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer+1))
	switch {
	case err != nil:
		return Decision{}, err
	case len(raw) > maxAnswer:
		return Decision{}, errors.New("answer larger than 64 KiB")
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		return Decision{}, fmt.Errorf("answer: %w", err)
	}
	return d, nil
}
