package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func sampleResult() result {
	return result{
		PollsRequested: 10000, PollsHeld: 9900, LimitedBy: "RLIMIT_NOFILE hard 20000", DurationS: 60,
		OtherRPSTarget: 2000, OtherRPSAchieved: 1998.5,
		EdgeRSSMaxMiB: 123.4, EdgeRSSEndMiB: 100.1, EdgeHWMMiB: 125,
		GoroutinesBefore: 20, GoroutinesHeld: 39620, GoroutinesAfter: 25,
		Answered: 9900, Answered204: 9900, EdgeCPUS: 12.3,
		PollsPlanned: 9900, EdgeRSSBeforeMiB: 20, ElapsedS: 61,
	}
}

// Another command reads longpoll.json by these names.
func TestResultJSONNames(t *testing.T) {
	b, err := json.Marshal(sampleResult())
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"polls_requested", "polls_held", "limited_by", "duration_s",
		"other_rps_target", "other_rps_achieved", "other_errors",
		"edge_rss_max_mib", "edge_rss_end_mib", "edge_hwm_mib",
		"goroutines_before", "goroutines_held", "goroutines_after",
		"answered", "answered_204", "errors", "edge_5xx", "retried", "edge_cpu_s"} {
		if _, ok := m[k]; !ok {
			t.Errorf("longpoll.json has no %q", k)
		}
	}
	if m["polls_held"] != 9900.0 || m["limited_by"] != "RLIMIT_NOFILE hard 20000" || m["edge_rss_max_mib"] != 123.4 {
		t.Errorf("values: %v", m)
	}
}

func TestFailedAndGoal(t *testing.T) {
	r := sampleResult()
	if why := r.failed(); len(why) != 0 {
		t.Errorf("clean run failed: %v", why)
	}
	if why := r.goalMisses(); len(why) != 0 {
		t.Errorf("clean run misses the goal: %v", why)
	}
	r.EdgeRSSMaxMiB = 512
	if len(r.failed()) != 0 {
		t.Error("RSS over the goal fails the run; only lost, retried and edge 5xx do")
	}
	if why := r.goalMisses(); len(why) != 1 || !strings.Contains(why[0], "RSS") {
		t.Errorf("goal misses %v, want the RSS", why)
	}
	for _, bad := range []func(*result){
		func(r *result) { r.Lost = 1 },
		func(r *result) { r.Retried = 1 },
		func(r *result) { r.Edge5xx = 1 },
	} {
		r := sampleResult()
		bad(&r)
		if len(r.failed()) != 1 {
			t.Errorf("%+v: failed %v, want one reason", r, r.failed())
		}
	}
}

func TestMarkdownAndFiles(t *testing.T) {
	r := sampleResult()
	md := r.markdown()
	for _, want := range []string{
		"| long polls held at once | 9900 of 10000 requested (limited by RLIMIT_NOFILE hard 20000) |",
		"| edge memory per held poll | 10.7 KiB ((max - before) / held) |",
		"| goroutines per held poll | 4.00 |",
		"**met** for 9900 polls",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	dir := t.TempDir()
	if err := r.write(dir); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "longpoll.json"))
	if err != nil {
		t.Fatal(err)
	}
	var back result
	if err := json.Unmarshal(b, &back); err != nil || back != r {
		t.Errorf("longpoll.json round trip: %+v, %v", back, err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "longpoll.md")); err != nil || !strings.Contains(string(b), md) {
		t.Errorf("longpoll.md: %v", err)
	}
}
