package server

import (
	"context"
	"slices"
	"sync/atomic"

	"gitlab.com/edge/edge/config"
	"gitlab.com/edge/edge/discovery"
)

// cellHealth is the cells' health: the active checks of each cell's addresses and the passive
// evidence of its requests, which the runner proxy of every config reads. It outlives reloads:
// a cell whose addresses and check stay keeps its health.
type cellHealth struct {
	health *discovery.Health
	// legacy says which cells of the config in force are the legacy cell, for the status page.
	legacy atomic.Pointer[map[uint64]bool]
}

func newCellHealth(cfg *config.Config, d deps) (*cellHealth, error) {
	h, err := discovery.NewHealth(discovery.HealthOptions{Registerer: d.reg, Log: d.log.With("component", "cell health"), Guard: d.guard})
	if err != nil {
		return nil, err
	}
	return &cellHealth{health: h}, nil
}

func (c *cellHealth) module() module {
	return module{name: "cellhealth",
		settings: []setting{{name: "health", reload: true, same: config.SameHealth}},
		routes: func(cfg *config.Config, next *table) error {
			legacy := map[uint64]bool{}
			for _, cell := range cfg.Cells {
				legacy[cell.ID] = cell.Legacy
			}
			next.onApply(func() { c.legacy.Store(&legacy) })
			return nil
		},
		stages: []stage{{name: "cell health", phase: phaseParts,
			start: func(life context.Context, run *goroutines) error {
				run.Go("health_check", func() { c.health.Run(life) })
				return nil
			}}},
		status: c,
	}
}

// use puts the cells of the runner proxy in force under the checks.
func (c *cellHealth) use(cells []*discovery.CellHealth) { c.health.Use(cells) }

func (c *cellHealth) status(_ context.Context, s *Status) {
	var legacy map[uint64]bool
	if l := c.legacy.Load(); l != nil {
		legacy = *l
	}
	cells := c.health.InForce()
	slices.SortFunc(cells, func(a, b *discovery.CellHealth) int { return int(a.ID) - int(b.ID) })
	s.Cells = make([]CellStatus, 0, len(cells))
	for _, h := range cells {
		recent := h.Recent()
		// A cell with no recent requests has no latency to show: "none", not 0s.
		p50, p99 := "none", "none"
		if recent.Requests > 0 {
			p50, p99 = recent.P50.String(), recent.P99.String()
		}
		s.Cells = append(s.Cells, CellStatus{ID: h.ID, Legacy: legacy[h.ID], Up: h.Up(), Degraded: h.Degraded(), Checked: h.Checked(),
			Addresses: h.State(), Recent: recent, P50: p50, P99: p99})
	}
}
