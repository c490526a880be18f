package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"gitlab.com/edge/edge/bench"
)

// ledgerWriter writes the ledger line of an answer before the answer: a 201 to a job request
// (held until its body names the job), a 2xx to a job call.
type ledgerWriter struct {
	http.ResponseWriter
	c       *soakCell
	route   string
	jobID   uint64
	req     string
	arrived time.Time
	held    int // the status of a 201 waiting for its body
	ledgerr error
}

func (w *ledgerWriter) WriteHeader(status int) {
	switch {
	case w.route == "jobs/request" && status == http.StatusCreated:
		w.held = status
		return
	case w.jobID != 0 && status >= 200 && status < 300:
		if j, ok := w.c.cell.Job(w.jobID); ok {
			w.ledgerr = w.c.write(bench.LedgerEntry{Ev: bench.LedgerUpdated, ID: j.ID, State: j.State, Trace: j.Trace, Req: w.req})
		}
	}
	if w.ledgerr != nil {
		// An answer the ledger does not have would make a restart forget it: fail instead.
		w.ResponseWriter.WriteHeader(http.StatusInternalServerError)
		return
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *ledgerWriter) Write(b []byte) (int, error) {
	if w.held != 0 {
		status := w.held
		w.held = 0
		var body struct {
			ID uint64 `json:"id"`
		}
		if err := json.Unmarshal(b, &body); err != nil || body.ID == 0 {
			w.ledgerr = fmt.Errorf("a 201 without a job id: %v", err)
		} else if j, ok := w.c.cell.Job(body.ID); ok {
			w.c.mu.Lock()
			w.c.jobs[j.ID] = true
			w.c.mu.Unlock()
			w.ledgerr = w.c.write(bench.LedgerEntry{Ev: bench.LedgerClaimed, ID: j.ID, Token: j.Token, State: j.State, Req: w.req, Incarnation: w.c.incarnation})
			if w.ledgerr == nil && w.c.cut.take(time.Since(w.arrived)) {
				return w.cutAndExit(status, j.ID, b)
			}
		}
		if w.ledgerr != nil {
			w.ResponseWriter.WriteHeader(http.StatusInternalServerError)
			return 0, w.ledgerr
		}
		w.ResponseWriter.WriteHeader(status)
	}
	if w.ledgerr != nil {
		return 0, w.ledgerr
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection.
func (w *ledgerWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
