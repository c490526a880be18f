package integration

import (
	"context"
	"net/http"
	"strconv"
	"testing"
	"time"

	"gitlab.com/edge/edge/internal/testkit/poll"
)

// TestRunner1711Flow plays a gitlab-runner 17.11 through edge from verify to artifact download,
// checking at every step that the request reached the cell its token names, intact.
func TestRunner1711Flow(t *testing.T) {
	t.Parallel()
	const longPoll = time.Second
	e := newEnv(t, envOptions{longPoll: longPoll, jwtJobTokens: true})
	r := runner1711()
	token := runnerToken(t, 2)
	cell := e.cell(2)
	e.mark()

	a := e.send(t, r.verify(token))
	if a.status != http.StatusOK {
		t.Fatalf("verify: got %d, want 200 (%s)", a.status, redactTokens(a.body))
	}
	checkDelivered(t, e.expectAt(t, 2), a)

	// No last_update yet: the cell answers at once with its queue value.
	a = e.send(t, r.requestJob(token, ""))
	value := a.header.Get("X-GitLab-Last-Update")
	if a.status != http.StatusNoContent || value == "" {
		t.Fatalf("first job request: got %d with X-GitLab-Last-Update %q, want 204 with a value", a.status, value)
	}
	checkDelivered(t, e.expectAt(t, 2), a)

	// The runner sends that value back and is held for the long poll, then gets 204 again.
	start := time.Now()
	a = e.send(t, r.requestJob(token, value))
	if a.status != http.StatusNoContent {
		t.Fatalf("long-polled job request: got %d, want 204", a.status)
	}
	if d := time.Since(start); d < longPoll {
		t.Errorf("long-polled job request answered after %v, want it held at least %v", d, longPoll)
	}
	if got := a.header.Get("X-GitLab-Last-Update"); got != value {
		t.Errorf("X-GitLab-Last-Update after the hold: got %q, want %q", got, value)
	}
	rec := e.expectAt(t, 2)
	checkDelivered(t, rec, a)
	if rec.LastUpdate != value || rec.Held < longPoll {
		t.Errorf("cell saw last_update %q and held %v, want %q held >= %v", rec.LastUpdate, rec.Held, value, longPoll)
	}

	// A job queued while the runner is held is handed out at once.
	type result struct {
		a   answer
		err error
	}
	done := make(chan result, 1)
	e.noteTokens(r.requestJob(token, value))
	go func() {
		a, err := trySend(context.Background(), e.client, e.edge.PublicURL, r.requestJob(token, value))
		done <- result{a, err}
	}()
	poll.Until(t, 10*time.Second, "the job request held at cell 2", func() bool { return cell.Held() == 1 })
	jobID, err := cell.AddJob()
	if err != nil {
		t.Fatalf("AddJob: %v", err)
	}
	res := <-done
	if res.err != nil {
		t.Fatalf("job request: %v", res.err)
	}
	a = res.a
	if a.status != http.StatusCreated {
		t.Fatalf("job request after AddJob: got %d, want 201 (%s)", a.status, redactTokens(a.body))
	}
	if got := a.header.Get("X-GitLab-Last-Update"); got == "" || got == value {
		t.Errorf("X-GitLab-Last-Update with the job: got %q, want the new queue value", got)
	}
	checkDelivered(t, e.expectAt(t, 2), a)
	job := decodeJob(t, a)
	if job.ID != jobID {
		t.Fatalf("job id: got %d, want %d", job.ID, jobID)
	}

	a = e.send(t, r.updateJob(job.ID, job.Token, "running", 0))
	if a.status != http.StatusOK || a.header.Get("Job-Status") != "running" {
		t.Errorf("PUT job: got %d Job-Status %q, want 200 running", a.status, a.header.Get("Job-Status"))
	}
	checkDelivered(t, e.expectAt(t, 2), a)

	chunks := [][]byte{[]byte("Running with gitlab-runner 17.11.0\n"), []byte("$ echo hello\nhello\n")}
	offset := 0
	for _, chunk := range chunks {
		a = e.send(t, r.patchTrace(job.ID, job.Token, offset, chunk))
		offset += len(chunk)
		if want := "0-" + strconv.Itoa(offset); a.status != http.StatusAccepted || a.header.Get("Range") != want {
			t.Errorf("PATCH trace: got %d Range %q, want 202 %q", a.status, a.header.Get("Range"), want)
		}
		if a.header.Get("Job-Status") != "running" || a.header.Get("X-GitLab-Trace-Update-Interval") == "" {
			t.Errorf("PATCH trace headers: Job-Status %q X-GitLab-Trace-Update-Interval %q", a.header.Get("Job-Status"), a.header.Get("X-GitLab-Trace-Update-Interval"))
		}
		checkDelivered(t, e.expectAt(t, 2), a)
	}
	if j, _ := cell.Job(job.ID); string(j.Trace) != string(chunks[0])+string(chunks[1]) {
		t.Errorf("trace at the cell: got %q", j.Trace)
	}

	file := &artifactFile{size: 50 << 20, seed: 1}
	a = e.send(t, r.uploadArtifacts(job.ID, job.Token, file))
	if a.status != http.StatusCreated {
		t.Fatalf("artifact upload: got %d, want 201 (%s)", a.status, redactTokens(a.body))
	}
	rec = e.expectAt(t, 2)
	checkDelivered(t, rec, a)
	if rec.FileSHA256 != file.sum() || rec.FileSize != file.size {
		t.Errorf("artifact at the cell: got %d bytes sha256 %s, want %d bytes sha256 %s", rec.FileSize, rec.FileSHA256, file.size, file.sum())
	}

	a = e.send(t, r.downloadArtifacts(job.ID, job.Token))
	if a.status != http.StatusFound {
		t.Fatalf("artifact download: got %d, want 302", a.status)
	}
	if got, want := a.header.Get("Location"), cell.ArtifactURL(job.ID); got != want {
		t.Errorf("Location: got %q, want %q unchanged", got, want)
	}
	checkDelivered(t, e.expectAt(t, 2), a)

	a = e.send(t, r.updateJob(job.ID, job.Token, "success", offset))
	if a.status != http.StatusOK || a.header.Get("Job-Status") != "success" {
		t.Errorf("final PUT job: got %d Job-Status %q, want 200 success", a.status, a.header.Get("Job-Status"))
	}
	checkDelivered(t, e.expectAt(t, 2), a)
}
