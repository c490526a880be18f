package moves

import (
	"encoding/json"
	"errors"
	"testing"
	"time"
)

func TestNext(t *testing.T) {
	known := func(c uint64) bool { return c >= 1 && c <= 3 }
	now := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	earlier := now.Add(-time.Hour)
	frozen := &Move{Org: 7, Cell: 3, From: 2, Phase: Freeze, Since: earlier}
	switched := &Move{Org: 7, Cell: 3, From: 2, Phase: Switched, Since: earlier}
	cases := []struct {
		name  string
		prev  *Move
		org   uint64
		cell  uint64
		phase Phase
		want  Move
		err   error
	}{
		{"first move", nil, 7, 3, Freeze, Move{Org: 7, Cell: 3, Phase: Freeze, Since: now}, nil},
		{"freeze then switch", frozen, 7, 3, Switched, Move{Org: 7, Cell: 3, From: 2, Phase: Switched, Since: now}, nil},
		{"asked again: unchanged", switched, 7, 3, Switched, *switched, nil},
		{"switched then freeze to the same cell", switched, 7, 3, Freeze, Move{}, ErrBackwards},
		{"back to where it came from", switched, 7, 2, Freeze, Move{Org: 7, Cell: 2, From: 3, Phase: Freeze, Since: now}, nil},
		{"elsewhere while frozen: it still lives where it was", frozen, 7, 1, Freeze, Move{Org: 7, Cell: 1, From: 2, Phase: Freeze, Since: now}, nil},
		{"organization 0", nil, 0, 3, Freeze, Move{}, ErrBadMove},
		{"unknown cell", nil, 7, 9, Freeze, Move{}, ErrUnknownCell},
		{"cell 0", nil, 7, 0, Freeze, Move{}, ErrUnknownCell},
		{"no phase", nil, 7, 3, 0, Move{}, ErrBadPhase},
	}
	for _, c := range cases {
		got, err := Next(c.prev, c.org, c.cell, c.phase, known, now)
		if !errors.Is(err, c.err) || got != c.want {
			t.Errorf("%s: got %+v, %v; want %+v, %v", c.name, got, err, c.want, c.err)
		}
	}
}

func TestMoveJSON(t *testing.T) {
	m := Move{Org: 7, Cell: 3, From: 2, Phase: Switched, Since: time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"org_id":7,"cell":3,"from_cell":2,"phase":"switched","since":"2026-11-28T09:00:00Z"}`; string(b) != want {
		t.Errorf("got %s, want %s", b, want)
	}
	var back Move
	if err := json.Unmarshal(b, &back); err != nil || !same(back, m) {
		t.Errorf("read back %+v, %v", back, err)
	}
	unknownFrom, _ := json.Marshal(Move{Org: 7, Cell: 3, Phase: Freeze, Since: m.Since})
	if want := `{"org_id":7,"cell":3,"phase":"freeze","since":"2026-11-28T09:00:00Z"}`; string(unknownFrom) != want {
		t.Errorf("got %s, want %s (no from_cell when not known)", unknownFrom, want)
	}
	for _, bad := range []string{`{"org_id":0,"cell":3,"phase":"freeze","since":"2026-11-28T09:00:00Z"}`,
		`{"org_id":7,"cell":3,"phase":"thawed","since":"2026-11-28T09:00:00Z"}`,
		`{"org_id":7,"cell":3,"phase":"freeze","since":"yesterday"}`, `[1]`} {
		if err := json.Unmarshal([]byte(bad), &back); err == nil {
			t.Errorf("%s read as %+v", bad, back)
		}
	}
}
