package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gitlab.com/edge/edge/bench"
)

func TestWriteResults(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run1") // made by writeResults
	h := &harness{opts: options{results: dir, rounds: 3, duration: 10 * time.Second, connections: 64}}
	rows := reportRows{load: []bench.Row{{Case: "nginx", RPS: 25000}, {Case: "edge-a", RPS: 20000}, {Case: "edge-b", RPS: 19000}}}
	goals := bench.AllGoals(bench.GoalInput{Load: rows.load, Connections: 64})
	doc := newJSONDoc(h.opts, true, results{runs: []bench.Run{{Case: "edge-a", Round: 1}}}, rows, goals)
	if err := h.writeResults("medians of 3 rounds:\ncase  req/s\n", doc); err != nil {
		t.Fatal(err)
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	md := read("edgebench.md")
	for _, want := range []string{"```\nmedians of 3 rounds:\ncase  req/s\n```", "| (a) plain GET, legacy route, access log on (edge-a) vs nginx req/s | 0.46-0.54x | 0.80x (edge-a 20000 req/s, nginx 25000) | >= 0.6x | yes |",
		// Issue 26's table, after issue 18's, without an issue's figure column.
		"\n## goals (issue 26, edge's own HTTP/1.1 engine): today's figures, from the medians of 3 rounds of 10s at 64 connections\n\n| case | today | goal | met |\n",
		"| (b) routable token in a header (edge-b) vs (a) req/s | 0.95x (edge-b 19000 req/s, edge-a 20000) | >= 0.9x | yes |",
		"| GET over TLS, edge vs nginx req/s | not run (bench/cmd/tlsbench) | >= 0.8x | - |"} {
		if !strings.Contains(md, want) {
			t.Errorf("edgebench.md lacks %q:\n%s", want, md)
		}
	}
	if g := read("goals.md"); !strings.Contains(g, "| case | issue's figure | today | goal | met |") || !strings.Contains(g, "| case | today | goal | met |") ||
		!strings.Contains(g, "goals (issue 26, edge's own HTTP/1.1 engine): today's figures") || strings.Contains(g, "medians of 3 rounds:\n") {
		t.Errorf("goals.md: want the two goals tables alone:\n%s", g)
	}
	if i18, i26 := strings.Index(md, "## goals (issue 18)"), strings.Index(md, "## goals (issue 26"); i18 < 0 || i26 < i18 {
		t.Errorf("edgebench.md: issue 26's table before issue 18's")
	}
	var all struct {
		Runs  []jsonRun `json:"runs"`
		Goals []map[string]any
	}
	if err := json.Unmarshal([]byte(read("edgebench.json")), &all); err != nil || len(all.Runs) != 1 || len(all.Goals) != 20 {
		t.Errorf("edgebench.json: %d runs, %d goals (%v)", len(all.Runs), len(all.Goals), err)
	}
	var only []map[string]any
	if err := json.Unmarshal([]byte(read("goals.json")), &only); err != nil || len(only) != 20 {
		t.Fatalf("goals.json: %d goals (%v)", len(only), err)
	}
	if got := len(only[0]); got != 6 || only[0]["issue"] != 18.0 || only[0]["met"] != true || only[0]["goal"] != ">= 0.6x" || only[0]["issue_figure"] != "0.46-0.54x" {
		t.Errorf("goals.json row: got %v, want {issue, case, issue_figure, today, goal, met}", only[0])
	}
	if r := only[len(only)-1]; r["issue"] != 26.0 || r["info"] != true || r["met"] != false {
		t.Errorf("goals.json, issue 26's engine row: got %v, want issue 26, info, not met", r)
	}
	if !strings.Contains(md, "## goals (issue 18): ") {
		t.Errorf("edgebench.md: no issue 18 goals title:\n%s", md)
	}
}

func TestReadLongPoll(t *testing.T) {
	dir := t.TempDir()
	if lp, err := readLongPoll(dir); lp != nil || err != nil {
		t.Errorf("no soak: got %v %v", lp, err)
	}
	if lp, err := readLongPoll(""); lp != nil || err != nil {
		t.Errorf("no results dir: got %v %v", lp, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "longpoll.json"), []byte(`{"polls_requested":10000,"polls_held":10000}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if lp, err := readLongPoll(dir); err != nil || lp == nil || lp.PollsHeld != 10000 {
		t.Errorf("soak: got %+v %v", lp, err)
	}
}
