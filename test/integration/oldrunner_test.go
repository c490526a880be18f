package integration

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"gitlab.com/edge/edge/tokens"
)

// TestRunnerBefore1610 plays a gitlab-runner 16.9 whose token is only in the JSON body: edge
// must read the body to route, and the cell must get it byte for byte with the same length.
func TestRunnerBefore1610(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{longPoll: 200 * time.Millisecond, jwtJobTokens: true})
	r := runner169()
	token := runnerToken(t, 2)
	e.mark()

	a := e.send(t, r.verify(token))
	if a.status != http.StatusOK {
		t.Fatalf("verify: got %d, want 200 (%s)", a.status, redactTokens(a.body))
	}
	rec := e.expectAt(t, 2)
	checkDelivered(t, rec, a)
	if rec.TokenSource != "body" {
		t.Errorf("the cell found the token in %q, want only the body", rec.TokenSource)
	}

	a = e.send(t, r.requestJob(token, ""))
	value := a.header.Get("X-GitLab-Last-Update")
	if a.status != http.StatusNoContent || value == "" {
		t.Fatalf("job request: got %d with X-GitLab-Last-Update %q, want 204 with a value", a.status, value)
	}
	checkDelivered(t, e.expectAt(t, 2), a)

	if _, err := e.cell(2).AddJob(); err != nil {
		t.Fatalf("AddJob: %v", err)
	}
	a = e.send(t, r.requestJob(token, value))
	if a.status != http.StatusCreated {
		t.Fatalf("job request with a queued job: got %d, want 201 (%s)", a.status, redactTokens(a.body))
	}
	checkDelivered(t, e.expectAt(t, 2), a)
	job := decodeJob(t, a)

	a = e.send(t, r.updateJob(job.ID, job.Token, "running", 0))
	if a.status != http.StatusOK {
		t.Errorf("PUT job: got %d, want 200", a.status)
	}
	checkDelivered(t, e.expectAt(t, 2), a)

	// A job whose id no range covers and edge never saw handed out: only the job token in the
	// body can route it.
	const orphan = outsideRanges + 3
	cell3 := e.cell(3)
	if err := cell3.AddJobWithID(orphan); err != nil {
		t.Fatalf("AddJobWithID: %v", err)
	}
	j, _ := cell3.Job(orphan)
	a = e.send(t, r.updateJob(orphan, j.Token, "running", 0))
	if a.status != http.StatusOK {
		t.Errorf("PUT job with the job token only in the body: got %d, want 200 (%s)", a.status, redactTokens(a.body))
	}
	rec = e.expectAt(t, 3)
	checkDelivered(t, rec, a)
	if rec.TokenSource != "body" {
		t.Errorf("the cell found the job token in %q, want only the body", rec.TokenSource)
	}

	// reset_authentication_token carries the token only in the body in every runner version.
	a = e.send(t, runner1711().resetToken(runnerToken(t, 3)))
	if a.status != http.StatusCreated {
		t.Errorf("reset token: got %d, want 201 (%s)", a.status, redactTokens(a.body))
	}
	checkDelivered(t, e.expectAt(t, 3), a)
}

// TestFormEncodedBodyToken sends the token as application/x-www-form-urlencoded token=...,
// as curl -d or older clients do.
func TestFormEncodedBodyToken(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	r := runner169()
	token := runnerToken(t, 3)
	e.mark()
	for _, path := range []string{"/api/v4/runners/verify", "/api/v4/jobs/request"} {
		t.Run(path, func(t *testing.T) {
			e.mark()
			body := url.Values{"token": {token}, "system_id": {systemID}}.Encode()
			a := e.send(t, outgoing{method: "POST", path: path, body: []byte(body), header: http.Header{
				"User-Agent": {r.userAgent()}, "Content-Type": {"application/x-www-form-urlencoded"},
			}})
			if a.status >= 300 {
				t.Errorf("got %d, want success (%s)", a.status, redactTokens(a.body))
			}
			rec := e.expectAt(t, 3)
			checkDelivered(t, rec, a)
			if rec.TokenSource != "body" || rec.Token != token {
				t.Errorf("the cell did not authenticate the form token (source %q)", rec.TokenSource)
			}
		})
	}
}

// TestRunnerEndpoints routes every runner endpoint, in both runner generations, by the token.
func TestRunnerEndpoints(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	e.mark()
	registration := routableToken(t, "glrt-", 9, tokens.Keys{}.Set(tokens.KeyCell, 3).Set(tokens.KeyOrganization, 1))
	for _, v := range []runnerVersion{runner169(), runner1711()} {
		calls := []struct {
			name string
			out  outgoing
			cell uint64
			want int
		}{
			{"register", v.register(registration), 3, http.StatusCreated},
			{"verify", v.verify(runnerToken(t, 2)), 2, http.StatusOK},
			{"unregister manager", v.unregisterManager(runnerToken(t, 3)), 3, http.StatusNoContent},
			{"unregister", v.unregister(runnerToken(t, 2)), 2, http.StatusNoContent},
			{"reset token", v.resetToken(runnerToken(t, 2)), 2, http.StatusCreated},
			{"job request", v.requestJob(runnerToken(t, 3), ""), 3, http.StatusNoContent},
		}
		if v.tokenHeaders {
			calls = append(calls, struct {
				name string
				out  outgoing
				cell uint64
				want int
			}{"router discovery", v.discovery(runnerToken(t, 3)), 3, http.StatusOK})
		}
		for _, c := range calls {
			t.Run(v.version+"/"+c.name, func(t *testing.T) {
				e.mark()
				a := e.send(t, c.out)
				if a.status != c.want {
					t.Errorf("status: got %d, want %d (%s)", a.status, c.want, redactTokens(a.body))
				}
				checkDelivered(t, e.expectAt(t, c.cell), a)
			})
		}
	}
}
