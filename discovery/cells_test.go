package discovery

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
)

func mustURL(t testing.TB, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatalf("url %q: %v", s, err)
	}
	return u
}

func testCells(t testing.TB) *Cells {
	t.Helper()
	c, err := NewCells([]Cell{
		{ID: 1, URL: mustURL(t, "https://legacy.example.com"), Legacy: true, Ranges: []IDRange{{1, 999}}},
		{ID: 2, URL: mustURL(t, "https://Cell-2.example.com:8443/gitlab/"), Ranges: []IDRange{{2000, 2999}, {5000, 5000}}},
		{ID: 3, URL: mustURL(t, "http://10.0.0.3"), Ranges: []IDRange{{3000, 3999}}},
		{ID: 4, URL: mustURL(t, "http://[::1]:8080")},
	})
	if err != nil {
		t.Fatalf("NewCells: %v", err)
	}
	return c
}

func TestNewCellsValidation(t *testing.T) {
	u := func(s string) *url.URL { return mustURL(t, s) }
	tests := []struct {
		name    string
		cells   []Cell
		wantErr string // "" = valid; else a substring of the error
	}{
		{"valid", []Cell{{ID: 1, URL: u("http://a"), Legacy: true}, {ID: 2, URL: u("http://b")}}, ""},
		{"one legacy cell only", []Cell{{ID: 1, URL: u("http://a"), Legacy: true}}, ""},
		{"adjacent ranges", []Cell{
			{ID: 1, URL: u("http://a"), Legacy: true, Ranges: []IDRange{{1, 10}}},
			{ID: 2, URL: u("http://b"), Ranges: []IDRange{{11, 20}}},
		}, ""},
		{"no cells", nil, "no cells"},
		{"duplicate id", []Cell{{ID: 1, URL: u("http://a"), Legacy: true}, {ID: 1, URL: u("http://b")}}, "duplicate cell id 1"},
		{"id 0", []Cell{{ID: 0, URL: u("http://a"), Legacy: true}}, "id 0"},
		{"duplicate URL", []Cell{{ID: 1, URL: u("http://a"), Legacy: true}, {ID: 2, URL: u("http://a")}}, "cells 1 and 2"},
		{"duplicate URL after normalising", []Cell{
			{ID: 1, URL: u("https://A.example.com/"), Legacy: true},
			{ID: 2, URL: u("https://a.example.com:443")},
		}, "same URL"},
		{"no legacy", []Cell{{ID: 1, URL: u("http://a")}, {ID: 2, URL: u("http://b")}}, "exactly one legacy"},
		{"two legacy", []Cell{{ID: 1, URL: u("http://a"), Legacy: true}, {ID: 2, URL: u("http://b"), Legacy: true}}, "have 2"},
		{"nil URL", []Cell{{ID: 1, Legacy: true}}, "no URL"},
		{"not http", []Cell{{ID: 1, URL: u("ftp://a"), Legacy: true}}, "not http(s)"},
		{"no host", []Cell{{ID: 1, URL: u("/relative"), Legacy: true}}, "not http(s)"},
		{"lo > hi", []Cell{{ID: 1, URL: u("http://a"), Legacy: true, Ranges: []IDRange{{10, 9}}}}, "lo > hi"},
		{"overlap across cells", []Cell{
			{ID: 1, URL: u("http://a"), Legacy: true, Ranges: []IDRange{{1, 100}}},
			{ID: 2, URL: u("http://b"), Ranges: []IDRange{{100, 200}}},
		}, "range 1-100 of cell 1 overlaps range 100-200 of cell 2"},
		{"overlap contained", []Cell{
			{ID: 7, URL: u("http://a"), Legacy: true, Ranges: []IDRange{{50, 60}}},
			{ID: 9, URL: u("http://b"), Ranges: []IDRange{{1, 1000}}},
		}, "of cell 9 overlaps range 50-60 of cell 7"},
		{"overlap within a cell", []Cell{
			{ID: 1, URL: u("http://a"), Legacy: true, Ranges: []IDRange{{1, 10}, {5, 20}}},
		}, "of cell 1 overlaps"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := NewCells(tt.cells)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("NewCells: got %v, want no error", err)
				}
				if got, want := len(c.All()), len(tt.cells); got != want {
					t.Errorf("All: got %d cells, want %d", got, want)
				}
				return
			}
			if !errors.Is(err, ErrBadCells) {
				t.Fatalf("NewCells error: got %v, want one wrapping ErrBadCells", err)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("NewCells error: got %q, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}

func TestNewCellsCopiesInput(t *testing.T) {
	in := []Cell{{ID: 1, URL: mustURL(t, "http://a"), Legacy: true, Ranges: []IDRange{{1, 10}}}}
	c, err := NewCells(in)
	if err != nil {
		t.Fatal(err)
	}
	in[0].Ranges[0] = IDRange{100, 200}
	in[0].URL.Host = "changed"
	in[0].ID = 5
	if cell, ok := c.ByJobID(5); !ok || cell.ID != 1 {
		t.Errorf("ByJobID(5) after changing input: got %v %v, want cell 1", cell, ok)
	}
	if got, want := c.Legacy().URL.Host, "a"; got != want {
		t.Errorf("Legacy URL host after changing input: got %q, want %q", got, want)
	}
	all := c.All()
	all[0] = nil
	if c.All()[0] == nil {
		t.Errorf("All: changing the returned slice changed Cells")
	}
}

func TestCellsAccessors(t *testing.T) {
	c := testCells(t)
	if got, want := c.Legacy().ID, uint64(1); got != want {
		t.Errorf("Legacy: got %d, want %d", got, want)
	}
	var ids []uint64
	for _, cell := range c.All() {
		ids = append(ids, cell.ID)
	}
	if got, want := fmt.Sprint(ids), "[1 2 3 4]"; got != want {
		t.Errorf("All order: got %s, want %s", got, want)
	}
	for _, id := range []uint64{1, 2, 3, 4} {
		if cell, ok := c.ByID(id); !ok || cell.ID != id {
			t.Errorf("ByID(%d): got %v %v, want cell %d", id, cell, ok, id)
		}
	}
	if cell, ok := c.ByID(5); ok {
		t.Errorf("ByID(5): got %v, want none", cell)
	}
}

func TestByJobID(t *testing.T) {
	c := testCells(t)
	tests := []struct {
		id   uint64
		want uint64 // 0 = no cell
	}{
		{0, 0}, {1, 1}, {500, 1}, {999, 1}, {1000, 0}, {1999, 0},
		{2000, 2}, {2999, 2}, {3000, 3}, {3999, 3}, {4000, 0},
		{4999, 0}, {5000, 2}, {5001, 0}, {^uint64(0), 0},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.id), func(t *testing.T) {
			cell, ok := c.ByJobID(tt.id)
			var got uint64
			if ok {
				got = cell.ID
			}
			if got != tt.want {
				t.Errorf("ByJobID(%d): got cell %d, want %d", tt.id, got, tt.want)
			}
		})
	}
}

func TestByJobIDNoRanges(t *testing.T) {
	c, err := NewCells([]Cell{{ID: 1, URL: mustURL(t, "http://a"), Legacy: true}})
	if err != nil {
		t.Fatal(err)
	}
	if cell, ok := c.ByJobID(1); ok {
		t.Errorf("ByJobID(1) with no ranges: got %v, want none", cell)
	}
}

// manyRangeCells gives cells cellCount ranges each, interleaved: cell k owns [i*100, i*100+49]
// for every i with i % cellCount == k-1; ids ending in 50-99 belong to nobody.
func manyRangeCells(t testing.TB, cellCount, rangesPerCell int) *Cells {
	t.Helper()
	cells := make([]Cell, cellCount)
	for k := range cells {
		cells[k] = Cell{ID: uint64(k + 1), URL: mustURL(t, fmt.Sprintf("http://cell-%d", k+1)), Legacy: k == 0}
	}
	for i := range cellCount * rangesPerCell {
		k := i % cellCount
		lo := uint64(i) * 100
		cells[k].Ranges = append(cells[k].Ranges, IDRange{lo, lo + 49})
	}
	c, err := NewCells(cells)
	if err != nil {
		t.Fatalf("NewCells: %v", err)
	}
	return c
}

func TestByJobIDManyRanges(t *testing.T) {
	const cellCount, perCell = 7, 300
	c := manyRangeCells(t, cellCount, perCell)
	for i := range cellCount * perCell {
		base := uint64(i) * 100
		want := uint64(i%cellCount + 1)
		for _, id := range []uint64{base, base + 1, base + 49} {
			if cell, ok := c.ByJobID(id); !ok || cell.ID != want {
				t.Fatalf("ByJobID(%d): got %v %v, want cell %d", id, cell, ok, want)
			}
		}
		for _, id := range []uint64{base + 50, base + 99} {
			if cell, ok := c.ByJobID(id); ok {
				t.Fatalf("ByJobID(%d) in a gap: got cell %d, want none", id, cell.ID)
			}
		}
	}
}

func TestCellsLookupsDoNotAllocate(t *testing.T) {
	c := testCells(t)
	tests := []struct {
		name string
		f    func()
	}{
		{"ByID", func() { c.ByID(3) }},
		{"ByJobID", func() { c.ByJobID(3500) }},
		{"ByURL", func() { c.ByURL("HTTPS://cell-2.EXAMPLE.com:8443/gitlab/") }},
		{"ByURL miss", func() { c.ByURL("https://nowhere.example.com") }},
		{"ByURL authority", func() { c.ByURL("10.0.0.3:80") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := testing.AllocsPerRun(100, tt.f); got != 0 {
				t.Errorf("%s allocations: got %v, want 0", tt.name, got)
			}
		})
	}
}

func BenchmarkByJobID(b *testing.B) {
	c := manyRangeCells(b, 10, 100)
	b.ReportAllocs()
	var id uint64
	for b.Loop() {
		c.ByJobID(id % 100_000)
		id += 37
	}
}
