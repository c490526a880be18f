package cellrouter

import (
	"testing"

	"gitlab.com/edge/edge/discovery"
	"gitlab.com/edge/edge/front"
)

// newRouter is a router to cells (cell transports built as for serving, unless configure sets
// one).
func newRouter(tb testing.TB, cells []discovery.Cell, configure func(*Options)) *Router {
	tb.Helper()
	dc, err := discovery.NewCells(cells)
	if err != nil {
		tb.Fatal(err)
	}
	o := Options{Cells: dc}
	if configure != nil {
		configure(&o)
	}
	p, err := New(o)
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// frontFor is a front serving p's routes, as the server's table does, and more's. Its refusals
// count in p's edge_requests_total, unless o says otherwise.
func frontFor(tb testing.TB, p *Router, o front.Options, more func(*front.Routes)) *front.Front {
	tb.Helper()
	rt := &front.Routes{}
	rt.Add(p.Routes()...)
	if more != nil {
		more(rt)
	}
	if o.Requests == nil {
		o.Requests = p.metrics.Requests
	}
	fr := front.New(o)
	if err := fr.Swap(rt); err != nil {
		tb.Fatal(err)
	}
	return fr
}

// cellsFront is a front whose router knows cells; more, when set, completes its route table.
func cellsFront(tb testing.TB, cells []discovery.Cell, more func(*front.Routes)) *front.Front {
	return frontFor(tb, newRouter(tb, cells, nil), front.Options{}, more)
}
