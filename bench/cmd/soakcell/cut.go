package main

import (
	"fmt"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"

	"gitlab.com/edge/edge/bench"
)

// exitCut is the exit status of a cell that cut an answer as asked.
const exitCut = 3

// cutOrder is the control's POST /cut: armed until one answer takes it.
type cutOrder struct {
	mu      sync.Mutex
	armed   bool
	heldMin time.Duration
}

func (o *cutOrder) arm(heldMin time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.armed, o.heldMin = true, heldMin
}

// take disarms the order and reports true when it is armed and the job request was held at
// least heldMin: one answer only is cut, on a poll edge has parked (it parks after 50 ms).
func (o *cutOrder) take(held time.Duration) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.armed || held < o.heldMin {
		return false
	}
	o.armed = false
	return true
}

// cutAndExit writes the head of the 201 with the whole body's Content-Length and the first half of
// the body, pushes them onto the connection, and exits. The ledger's cut line comes first, and
// the ledger's lock is held to the end, so no other line is left half written.
func (w *ledgerWriter) cutAndExit(status int, id uint64, body []byte) (int, error) {
	if err := w.c.write(bench.LedgerEntry{Ev: bench.LedgerCut, ID: id, Req: w.req, Incarnation: w.c.incarnation}); err != nil {
		w.ledgerr = err
		w.ResponseWriter.WriteHeader(http.StatusInternalServerError)
		return 0, err
	}
	w.ResponseWriter.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.ResponseWriter.WriteHeader(status)
	n, _ := w.ResponseWriter.Write(body[:len(body)/2])
	_ = http.NewResponseController(w.ResponseWriter).Flush()
	fmt.Fprintf(os.Stderr, "soakcell: cut the 201 handing out job %d to request %s after %d of %d bytes of its body; exiting as asked (POST /cut)\n",
		id, w.req, n, len(body))
	w.c.mu.Lock()
	defer w.c.mu.Unlock()
	w.c.exit(exitCut)
	return n, http.ErrAbortHandler // only when exit is a test's stand-in
}
