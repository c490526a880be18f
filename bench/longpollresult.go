package bench

import (
	"encoding/json"
	"fmt"
	"strings"
)

// LongPollFile is the name bench/cmd/longpollsoak gives its result in a results directory.
const LongPollFile = "longpoll.json"

// LongPoll is the long-poll soak's result (bench/cmd/longpollsoak), as much of it as the goals
// table reads.
type LongPoll struct {
	PollsRequested   int64   `json:"polls_requested"`
	PollsHeld        int64   `json:"polls_held"`
	LimitedBy        string  `json:"limited_by"` // why fewer were held than requested, if so
	EdgeRSSMaxMiB    float64 `json:"edge_rss_max_mib"`
	Answered         int64   `json:"answered"`
	Answered204      int64   `json:"answered_204"`
	Retried          int64   `json:"retried"`
	Edge5xx          int64   `json:"edge_5xx"`
	Errors           int64   `json:"-"` // from errors: a count or a list
	GoroutinesBefore int64   `json:"goroutines_before"`
	GoroutinesHeld   int64   `json:"goroutines_held"`
	GoroutinesAfter  int64   `json:"goroutines_after"`
}

// ParseLongPoll reads longpoll.json. Its errors field is taken as a count, or as a list of
// messages and counted, so the goals table does not depend on which the soak writes.
func ParseLongPoll(b []byte) (LongPoll, error) {
	var doc struct {
		LongPoll
		Errors json.RawMessage `json:"errors"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return LongPoll{}, fmt.Errorf("%s: %w", LongPollFile, err)
	}
	lp := doc.LongPoll
	raw := strings.TrimSpace(string(doc.Errors))
	switch {
	case raw == "" || raw == "null":
	case strings.HasPrefix(raw, "["):
		var list []json.RawMessage
		if err := json.Unmarshal(doc.Errors, &list); err != nil {
			return LongPoll{}, fmt.Errorf("%s: errors: %w", LongPollFile, err)
		}
		lp.Errors = int64(len(list))
	default:
		if err := json.Unmarshal(doc.Errors, &lp.Errors); err != nil {
			return LongPoll{}, fmt.Errorf("%s: errors: %w", LongPollFile, err)
		}
	}
	return lp, nil
}

// MetWithin: at least the goal's polls held at once (9,900, this machine's limit; a soak that
// holds more also meets it), edge's RSS at most rssMiB, every held poll answered, and no client
// retried, got a 5xx from edge or failed.
func (lp LongPoll) MetWithin(rssMiB float64) bool {
	return lp.PollsHeld >= GoalLongPolls && lp.EdgeRSSMaxMiB <= rssMiB &&
		lp.Answered >= lp.PollsHeld && lp.Retried == 0 && lp.Edge5xx == 0 && lp.Errors == 0
}

// Summary is the soak in one line: "9000 of 10000 held (RLIMIT_NOFILE hard 20000), RSS 123 MiB,
// 9000 answered 204, 0 retried".
func (lp LongPoll) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d of %d held", lp.PollsHeld, lp.PollsRequested)
	if lp.LimitedBy != "" {
		fmt.Fprintf(&b, " (%s)", lp.LimitedBy)
	}
	fmt.Fprintf(&b, ", RSS %.0f MiB, ", lp.EdgeRSSMaxMiB)
	if lp.Answered == lp.Answered204 {
		fmt.Fprintf(&b, "%d answered 204", lp.Answered)
	} else {
		fmt.Fprintf(&b, "%d answered (%d with 204)", lp.Answered, lp.Answered204)
	}
	fmt.Fprintf(&b, ", %d retried", lp.Retried)
	if lp.Edge5xx > 0 {
		fmt.Fprintf(&b, ", %d edge 5xx", lp.Edge5xx)
	}
	if lp.Errors > 0 {
		fmt.Fprintf(&b, ", %d errors", lp.Errors)
	}
	return b.String()
}
