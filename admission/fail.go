package admission

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Failer fails a rejected job at its cell as a runner that gives up on it would: a trace line
// saying why, then the failed state. Both calls are idempotent, so each is retried.
type Failer struct {
	// Transport reaches the cell; requests are made against Base.
	Transport http.RoundTripper
	// Backoff is the pause before each retry (nil: 250 ms doubling to 4 s, five retries).
	Backoff []time.Duration
	// CallTimeout bounds each call (default 10 s).
	CallTimeout time.Duration
}

var defaultBackoff = []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second}

// Fail writes line to the job's trace and sets it failed with runner_system_failure. A job that
// already ended (403 with Job-Status) is left as it is.
func (f *Failer) Fail(ctx context.Context, base *url.URL, id uint64, token, line string) error {
	jobURL := base.JoinPath("api/v4/jobs", strconv.FormatUint(id, 10))
	traceErr := f.retry(ctx, func() (bool, error) { return f.appendTrace(ctx, jobURL.JoinPath("trace"), token, line) })
	state, _ := json.Marshal(map[string]any{"token": token, "state": "failed", "failure_reason": "runner_system_failure", "exit_code": 1})
	stateErr := f.retry(ctx, func() (bool, error) {
		resp, err := f.call(ctx, http.MethodPut, jobURL, token, state, func(h http.Header) { h.Set("Content-Type", "application/json") })
		if err != nil {
			return true, err
		}
		switch {
		case resp.StatusCode == http.StatusOK:
			return false, nil
		case resp.StatusCode == http.StatusForbidden && resp.Header.Get("Job-Status") != "":
			return false, nil // the job ended already: nothing more to do
		}
		return retryable(resp.StatusCode), fmt.Errorf("%w: PUT state answered %s", ErrJobCall, resp.Status)
	})
	if stateErr != nil {
		return stateErr
	}
	if traceErr != nil {
		return fmt.Errorf("the job failed, without its trace line: %w", traceErr)
	}
	return nil
}

// appendTrace sends line at the end of the trace; a 416 names where the trace ends, and the
// next attempt starts there.
func (f *Failer) appendTrace(ctx context.Context, traceURL *url.URL, token, line string) (bool, error) {
	var start int64
	for range 3 {
		body := []byte(line)
		resp, err := f.call(ctx, http.MethodPatch, traceURL, token, body, func(h http.Header) {
			h.Set("Content-Type", "text/plain")
			h.Set("Content-Range", fmt.Sprintf("%d-%d", start, start+int64(len(body))-1))
		})
		if err != nil {
			return true, err
		}
		switch resp.StatusCode {
		case http.StatusAccepted:
			return false, nil
		case http.StatusRequestedRangeNotSatisfiable:
			end, ok := rangeEnd(resp.Header.Get("Range"))
			if !ok {
				return false, fmt.Errorf("%w: trace answered 416 without a Range", ErrJobCall)
			}
			start = end
			continue
		case http.StatusForbidden:
			if resp.Header.Get("Job-Status") != "" {
				return false, nil // the job ended already
			}
		}
		return retryable(resp.StatusCode), fmt.Errorf("%w: PATCH trace answered %s", ErrJobCall, resp.Status)
	}
	return true, fmt.Errorf("%w: the trace kept moving", ErrJobCall)
}

// rangeEnd reads "0-<n>", the length of the stored trace.
func rangeEnd(v string) (int64, bool) {
	_, n, ok := strings.Cut(v, "-")
	if !ok {
		return 0, false
	}
	end, err := strconv.ParseInt(n, 10, 64)
	return end, err == nil && end >= 0
}

func retryable(status int) bool { return status >= 500 || status == http.StatusTooManyRequests }

func (f *Failer) retry(ctx context.Context, attempt func() (bool, error)) error {
	backoff := f.Backoff
	if backoff == nil {
		backoff = defaultBackoff
	}
	for i := 0; ; i++ {
		again, err := attempt()
		if err == nil || !again || i == len(backoff) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (%w)", err, ctx.Err())
		case <-time.After(backoff[i]):
		}
	}
}

// call makes one request and reads its answer (bounded), so the connection can be reused.
func (f *Failer) call(ctx context.Context, method string, u *url.URL, token string, body []byte, set func(http.Header)) (*http.Response, error) {
	timeout := f.CallTimeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Job-Token", token)
	req.Header.Set("User-Agent", "edge admission")
	set(req.Header)
	resp, err := f.Transport.RoundTrip(req)
	if err != nil {
		return nil, fmt.Errorf("%w: %s %s: %w", ErrJobCall, method, u.Path, err)
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	return resp, nil
}
