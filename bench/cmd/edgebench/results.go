package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"gitlab.com/edge/edge/bench"
)

// record prints the goals table last and writes the results directory and --json; it runs even
// after a failed profile, so that the rounds' numbers are not lost.
func (h *harness) record(res results, rows reportRows) error {
	goals := h.goals(rows)
	printed := h.printed.String()
	h.printGoals(goals)
	doc := newJSONDoc(h.opts, h.pin, res, rows, goals)
	if h.opts.jsonOut != "" {
		if err := bench.WriteJSON(h.opts.jsonOut, doc); err != nil {
			return err
		}
	}
	if h.opts.results == "" {
		return nil
	}
	if err := h.writeResults(printed, doc); err != nil {
		return err
	}
	logf("results in %s", h.opts.results)
	return nil
}

// goals are issue 18's and issue 26's goals with today's figures: from the medians, and for the
// long polls from the soak's longpoll.json in the results directory, which make bench writes
// first.
func (h *harness) goals(rows reportRows) []bench.Goal {
	in := bench.GoalInput{Load: rows.load, Transfers: rows.transfers, Connections: h.opts.connections, Pinned: h.pin, GCSetting: gcSetting(os.Getenv)}
	in.LongPoll, in.LongPollErr = readLongPoll(h.opts.results)
	return bench.AllGoals(in)
}

// gcSetting names the Go GC settings in the environment (make bench's, which the long-poll
// soak's edge inherits too), "" when there are none: the long-poll goal is stated without any.
func gcSetting(getenv func(string) string) string {
	var set []string
	for _, name := range []string{"GOGC", "GOMEMLIMIT"} {
		if v := getenv(name); v != "" {
			set = append(set, name+"="+v)
		}
	}
	return strings.Join(set, " ")
}

// readLongPoll is the soak's result in dir; nil without a results directory or a soak.
func readLongPoll(dir string) (*bench.LongPoll, error) {
	if dir == "" {
		return nil, nil
	}
	b, err := os.ReadFile(filepath.Join(dir, bench.LongPollFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", bench.LongPollFile, err)
	}
	lp, err := bench.ParseLongPoll(b)
	if err != nil {
		return nil, err
	}
	return &lp, nil
}

// goalsTitle heads an issue's goals table on the terminal and in the results.
func (h *harness) goalsTitle(issue int) string {
	subject, what := fmt.Sprintf("issue %d", issue), "the issue's figure and today's"
	if issue == bench.Issue26 {
		// Issue 26 states goals without figures of its own.
		subject, what = subject+", edge's own HTTP/1.1 engine", "today's figures"
	}
	return fmt.Sprintf("goals (%s): %s, from the medians of %d rounds of %s at %d connections",
		subject, what, h.opts.rounds, h.opts.duration, h.opts.connections)
}

// goalTables is each issue's goals table as Markdown under its title, heading each title with
// prefix ("## " in edgebench.md) and ending it with suffix.
func (h *harness) goalTables(goals []bench.Goal, prefix, suffix string) string {
	var tables []string
	for _, group := range bench.GoalGroups(goals) {
		tables = append(tables, prefix+h.goalsTitle(group[0].Group)+suffix+"\n\n"+bench.GoalsMarkdown(group))
	}
	return strings.Join(tables, "\n")
}

// printGoals prints the goals tables last, as Markdown, ready to paste into the issues.
func (h *harness) printGoals(goals []bench.Goal) {
	fmt.Fprintf(h.out, "\n%s", h.goalTables(goals, "", ":"))
}

// writeResults fills the results directory so that two runs can be compared file by file:
// edgebench.md (what was printed, the tables kept aligned in a code block), edgebench.json
// (runs, medians, goals), and the goals alone in goals.md and goals.json (each row names its
// issue).
func (h *harness) writeResults(printed string, doc jsonDoc) error {
	dir := h.opts.results
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("results directory: %w", err)
	}
	md := "# edgebench\n\n```\n" + strings.TrimRight(printed, "\n") + "\n```\n\n" + h.goalTables(doc.Goals, "## ", "")
	goalsMD := fmt.Sprintf("# edgebench goals, %s\n\n%s", doc.Time.Format(time.RFC3339), h.goalTables(doc.Goals, "", "."))
	for name, text := range map[string]string{"edgebench.md": md, "goals.md": goalsMD} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			return fmt.Errorf("write %s: %w", name, err)
		}
	}
	if err := bench.WriteJSON(filepath.Join(dir, "edgebench.json"), doc); err != nil {
		return err
	}
	return bench.WriteJSON(filepath.Join(dir, "goals.json"), doc.Goals)
}
