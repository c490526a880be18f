package main

import (
	"fmt"
	"strings"

	"gitlab.com/edge/edge/bench"
)

// rssGoalMiB is the goal row's bound on edge's memory while the polls are held.
const rssGoalMiB = 300

// result is longpoll.json. The first names are read by another command: keep them.
type result struct {
	PollsRequested   int     `json:"polls_requested"`
	PollsHeld        int     `json:"polls_held"` // held at the cell at once, just before the release
	LimitedBy        string  `json:"limited_by"` // "" when every requested poll fit
	DurationS        float64 `json:"duration_s"`
	OtherRPSTarget   float64 `json:"other_rps_target"`
	OtherRPSAchieved float64 `json:"other_rps_achieved"`
	OtherErrors      int     `json:"other_errors"`
	EdgeRSSMaxMiB    float64 `json:"edge_rss_max_mib"`
	EdgeRSSEndMiB    float64 `json:"edge_rss_end_mib"`
	EdgeHWMMiB       float64 `json:"edge_hwm_mib"`
	GoroutinesBefore int     `json:"goroutines_before"`
	GoroutinesHeld   int     `json:"goroutines_held"`
	GoroutinesAfter  int     `json:"goroutines_after"`
	Answered         int     `json:"answered"`
	Answered204      int     `json:"answered_204"`
	Errors           int     `json:"errors"`   // long polls: no answer, or not 204 from cell 2
	Edge5xx          int     `json:"edge_5xx"` // long polls and other traffic
	Retried          int     `json:"retried"`
	EdgeCPUS         float64 `json:"edge_cpu_s"`

	// More detail, for the Markdown and for a reader of the JSON.
	PollsPlanned     int     `json:"polls_planned"` // what fit under the descriptor limit
	Lost             int     `json:"lost"`          // planned polls not answered 204 by the cell
	HoldS            float64 `json:"hold_s"`
	PollRate         float64 `json:"poll_rate"` // new polls per second while opening them
	ClientProcs      int     `json:"client_procs"`
	EdgeRSSBeforeMiB float64 `json:"edge_rss_before_mib"`
	OtherRequests    int     `json:"other_requests"`
	OtherLate        int     `json:"other_late"`
	CellCanceled     int64   `json:"cell_canceled"` // held polls whose connection edge closed before the release
	SettleS          float64 `json:"settle_s"`      // wait between the last answer and goroutines_after
	ElapsedS         float64 `json:"elapsed_s"`     // edge_cpu_s was measured over this: the start to the last answer
	HeapBeforeMiB    float64 `json:"edge_heap_inuse_before_mib"`
	HeapHeldMiB      float64 `json:"edge_heap_inuse_held_mib"` // just before the release
	StacksBeforeMiB  float64 `json:"edge_stacks_before_mib"`
	StacksHeldMiB    float64 `json:"edge_stacks_held_mib"`
}

// failed is why the command exits 1: a poll lost or retried, or edge answering 5xx itself.
func (r result) failed() []string {
	var why []string
	if r.Lost > 0 {
		why = append(why, fmt.Sprintf("%d long polls lost", r.Lost))
	}
	if r.Retried > 0 {
		why = append(why, fmt.Sprintf("%d long polls retried", r.Retried))
	}
	if r.Edge5xx > 0 {
		why = append(why, fmt.Sprintf("%d 5xx made by edge", r.Edge5xx))
	}
	return why
}

// goalMisses are the goal row's conditions not met ("held, RSS <= 300 MiB, answered, none
// retried"), for the polls that fit.
func (r result) goalMisses() []string {
	why := r.failed()
	if r.PollsHeld < r.PollsPlanned {
		why = append(why, fmt.Sprintf("only %d of %d held at once", r.PollsHeld, r.PollsPlanned))
	}
	if r.EdgeRSSMaxMiB > rssGoalMiB {
		why = append(why, fmt.Sprintf("edge RSS %.1f MiB > %d MiB", r.EdgeRSSMaxMiB, rssGoalMiB))
	}
	return why
}

// perPoll divides what the held polls added to edge by their number.
func perPoll(held, before float64, polls int) float64 {
	if polls <= 0 {
		return 0
	}
	return (held - before) / float64(polls)
}

func (r result) markdown() string {
	var b strings.Builder
	row := func(k, format string, a ...any) { fmt.Fprintf(&b, "| %s | %s |\n", k, fmt.Sprintf(format, a...)) }
	b.WriteString("| measure | value |\n|---|---|\n")
	limit := "all requested"
	if r.LimitedBy != "" {
		limit = "limited by " + r.LimitedBy
	}
	row("long polls held at once", "%d of %d requested (%s)", r.PollsHeld, r.PollsRequested, limit)
	row("held for", "%.0f s from the start, opened at %.0f/s over %d client process(es), one connection each", r.HoldS, r.PollRate, r.ClientProcs)
	row("answered / 204 from the cell", "%d / %d", r.Answered, r.Answered204)
	row("lost / retried / errors / edge-made 5xx", "%d / %d / %d / %d", r.Lost, r.Retried, r.Errors, r.Edge5xx)
	row("edge RSS before / max / end", "%.1f / %.1f / %.1f MiB (goal: max <= %d MiB)", r.EdgeRSSBeforeMiB, r.EdgeRSSMaxMiB, r.EdgeRSSEndMiB, rssGoalMiB)
	row("edge VmHWM", "%.1f MiB", r.EdgeHWMMiB)
	row("edge memory per held poll", "%.1f KiB ((max - before) / held)", perPoll(r.EdgeRSSMaxMiB*1024, r.EdgeRSSBeforeMiB*1024, r.PollsHeld))
	row("edge Go heap in use / goroutine stacks, before -> held", "%.1f -> %.1f MiB / %.1f -> %.1f MiB (%.1f / %.1f KiB per held poll)",
		r.HeapBeforeMiB, r.HeapHeldMiB, r.StacksBeforeMiB, r.StacksHeldMiB,
		perPoll(r.HeapHeldMiB*1024, r.HeapBeforeMiB*1024, r.PollsHeld), perPoll(r.StacksHeldMiB*1024, r.StacksBeforeMiB*1024, r.PollsHeld))
	row("goroutines before / held / after", "%d / %d / %d (after: %.0f s after the last answer)", r.GoroutinesBefore, r.GoroutinesHeld, r.GoroutinesAfter, r.SettleS)
	row("goroutines per held poll", "%.2f", perPoll(float64(r.GoroutinesHeld), float64(r.GoroutinesBefore), r.PollsHeld))
	row("other runner traffic", "%.0f req/s target, %.1f achieved (%d requests, %d late), %d errors", r.OtherRPSTarget, r.OtherRPSAchieved, r.OtherRequests, r.OtherLate, r.OtherErrors)
	row("edge CPU over the soak", "%.1f s in %.0f s (%.0f %% of one core)", r.EdgeCPUS, r.ElapsedS, 100*r.EdgeCPUS/max(r.ElapsedS, 1))
	if misses := r.goalMisses(); len(misses) > 0 {
		row("goal: held, RSS <= 300 MiB, answered, none retried", "**NOT met**: %s", strings.Join(misses, "; "))
	} else {
		row("goal: held, RSS <= 300 MiB, answered, none retried", "**met** for %d polls", r.PollsHeld)
	}
	return b.String()
}

// write puts longpoll.json and longpoll.md into dir.
func (r result) write(dir string) error {
	return bench.WriteResults(dir, "longpoll", r, "# Long polls: the soak\n\n"+r.markdown())
}
