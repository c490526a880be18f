package discovery

import (
	"cmp"
	"fmt"
	"net/url"
	"slices"
)

// IDRange is an inclusive range of database ids owned by one cell.
type IDRange struct{ Lo, Hi uint64 }

// Cell is one GitLab cell. Callers must not modify a *Cell returned by Cells.
type Cell struct {
	ID  uint64
	URL *url.URL // the first of URLs
	// URLs are every address of the cell, URL first; NewCells fills it from URL when empty.
	URLs   []*url.URL
	Legacy bool
	Ranges []IDRange
	// PreserveHost sends the client's Host header to the cell; otherwise the cell's own.
	PreserveHost bool
	// Check is the cell's active health check; nil: none (passive evidence still ejects addresses,
	// but never takes the cell down).
	Check *Check
}

// Cells is immutable after NewCells; safe for concurrent use.
type Cells struct {
	all     []*Cell
	byID    map[uint64]*Cell
	urls    []cellURL // every address of every cell
	urlCell []*Cell   // parallel to urls
	ranges  []cellRange
	legacy  *Cell
}

type cellRange struct {
	lo, hi uint64
	cell   *Cell
}

// NewCells validates: at least one cell, ids unique and not 0, URLs http(s) with a host and unique
// (after normalisation, as ByURL compares them), exactly one legacy cell, ranges lo<=hi, no two
// ranges overlapping. It copies its input, so later changes to cells do not reach the result.
// Errors wrap ErrBadCells.
func NewCells(cells []Cell) (*Cells, error) {
	if len(cells) == 0 {
		return nil, fmt.Errorf("%w: no cells", ErrBadCells)
	}
	c := &Cells{
		all:  make([]*Cell, 0, len(cells)),
		byID: make(map[uint64]*Cell, len(cells)),
	}
	var legacies []uint64
	for i := range cells {
		cell, err := copyCell(&cells[i])
		if err != nil {
			return nil, err
		}
		if _, dup := c.byID[cell.ID]; dup {
			return nil, fmt.Errorf("%w: duplicate cell id %d", ErrBadCells, cell.ID)
		}
		for _, cu := range cell.URLs {
			u := newCellURL(cu)
			for j := range c.urls {
				if c.urls[j].same(u) {
					return nil, fmt.Errorf("%w: cells %d and %d have the same URL %s", ErrBadCells, c.urlCell[j].ID, cell.ID, cu)
				}
			}
			c.urls = append(c.urls, u)
			c.urlCell = append(c.urlCell, cell)
		}
		if cell.Legacy {
			legacies = append(legacies, cell.ID)
		}
		for _, r := range cell.Ranges {
			c.ranges = append(c.ranges, cellRange{lo: r.Lo, hi: r.Hi, cell: cell})
		}
		c.all = append(c.all, cell)
		c.byID[cell.ID] = cell
	}
	if len(legacies) != 1 {
		return nil, fmt.Errorf("%w: need exactly one legacy cell, have %d %v", ErrBadCells, len(legacies), legacies)
	}
	c.legacy = c.byID[legacies[0]]
	if err := sortRanges(c.ranges); err != nil {
		return nil, err
	}
	return c, nil
}

func copyCell(in *Cell) (*Cell, error) {
	if in.ID == 0 {
		return nil, fmt.Errorf("%w: cell id 0 (ids start at 1)", ErrBadCells)
	}
	urls := in.URLs
	if len(urls) == 0 && in.URL != nil {
		urls = []*url.URL{in.URL}
	}
	if len(urls) == 0 {
		return nil, fmt.Errorf("%w: cell %d has no URL", ErrBadCells, in.ID)
	}
	out := *in
	out.URLs = make([]*url.URL, len(urls))
	for i, u := range urls {
		if u == nil {
			return nil, fmt.Errorf("%w: cell %d has an empty URL", ErrBadCells, in.ID)
		}
		if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("%w: cell %d URL %q is not http(s)://host", ErrBadCells, in.ID, u.Redacted())
		}
		c := *u
		out.URLs[i] = &c
	}
	out.URL = out.URLs[0]
	for _, r := range in.Ranges {
		if r.Lo > r.Hi {
			return nil, fmt.Errorf("%w: cell %d range %d-%d has lo > hi", ErrBadCells, in.ID, r.Lo, r.Hi)
		}
	}
	out.Ranges = slices.Clone(in.Ranges)
	return &out, nil
}

// sortRanges sorts by lo; then the first overlap, if any, is between neighbours.
func sortRanges(ranges []cellRange) error {
	slices.SortFunc(ranges, func(a, b cellRange) int { return cmp.Compare(a.lo, b.lo) })
	for i := 1; i < len(ranges); i++ {
		prev, cur := ranges[i-1], ranges[i]
		if cur.lo <= prev.hi {
			return fmt.Errorf("%w: range %d-%d of cell %d overlaps range %d-%d of cell %d",
				ErrBadCells, prev.lo, prev.hi, prev.cell.ID, cur.lo, cur.hi, cur.cell.ID)
		}
	}
	return nil
}

// ByID returns the cell with that id.
func (c *Cells) ByID(id uint64) (*Cell, bool) {
	cell, ok := c.byID[id]
	return cell, ok
}

// ByJobID returns the cell whose configured ranges hold id (binary search over all ranges).
func (c *Cells) ByJobID(id uint64) (*Cell, bool) {
	// Find the first range with lo > id; the one before it is the only candidate.
	lo, hi := 0, len(c.ranges)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if c.ranges[mid].lo <= id {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo == 0 {
		return nil, false
	}
	r := &c.ranges[lo-1]
	if id > r.hi {
		return nil, false
	}
	return r.cell, true
}

// Legacy returns the one cell with Legacy set.
func (c *Cells) Legacy() *Cell { return c.legacy }

// All returns the cells in config order, in a new slice.
func (c *Cells) All() []*Cell { return slices.Clone(c.all) }
