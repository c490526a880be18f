package moves

import (
	"encoding/json"
	"fmt"
	"time"
)

// Phase is how far a move has gone.
type Phase uint8

const (
	// Freeze: the organization's data is being copied; no job may be claimed for it anywhere.
	Freeze Phase = iota + 1
	// Switched: the organization lives in its new cell.
	Switched
)

func (p Phase) String() string {
	switch p {
	case Freeze:
		return "freeze"
	case Switched:
		return "switched"
	}
	return "unknown"
}

// ParsePhase reads "freeze" or "switched".
func ParsePhase(s string) (Phase, error) {
	switch s {
	case "freeze":
		return Freeze, nil
	case "switched":
		return Switched, nil
	}
	return 0, fmt.Errorf("%w: %q (want freeze or switched)", ErrBadPhase, s)
}

// Move says where an organization lives now, and where from.
type Move struct {
	Org   uint64
	Cell  uint64
	From  uint64 // 0: not known
	Phase Phase
	Since time.Time // when the move entered its phase
}

type moveJSON struct {
	Org   uint64 `json:"org_id"`
	Cell  uint64 `json:"cell"`
	From  uint64 `json:"from_cell,omitempty"`
	Phase string `json:"phase"`
	Since string `json:"since"`
}

// MarshalJSON writes the contract's shape: org_id, cell, from_cell when known, phase, since
// (RFC 3339).
func (m Move) MarshalJSON() ([]byte, error) {
	return json.Marshal(moveJSON{Org: m.Org, Cell: m.Cell, From: m.From, Phase: m.Phase.String(),
		Since: m.Since.UTC().Format(time.RFC3339Nano)})
}

func (m *Move) UnmarshalJSON(b []byte) error {
	var j moveJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return fmt.Errorf("%w: %w", ErrBadMove, err)
	}
	phase, err := ParsePhase(j.Phase)
	if err != nil {
		return err
	}
	since, err := time.Parse(time.RFC3339Nano, j.Since)
	if err != nil {
		return fmt.Errorf("%w: since: %w", ErrBadMove, err)
	}
	if j.Org == 0 || j.Cell == 0 {
		return fmt.Errorf("%w: org_id and cell must be positive", ErrBadMove)
	}
	*m = Move{Org: j.Org, Cell: j.Cell, From: j.From, Phase: phase, Since: since}
	return nil
}

// Next is the move a request makes of prev (nil: none in force) when it asks for org to live in
// cell at phase, at now; known says which cells exist. It refuses an organization id that is
// not positive, an unknown cell, and a phase that goes backwards (switched, then freeze, to the
// same cell). Asking again for the move in force changes nothing (its Since stays).
func Next(prev *Move, org, cell uint64, phase Phase, known func(uint64) bool, now time.Time) (Move, error) {
	switch {
	case org == 0:
		return Move{}, fmt.Errorf("%w: organization id must be a positive integer", ErrBadMove)
	case phase != Freeze && phase != Switched:
		return Move{}, fmt.Errorf("%w: %d", ErrBadPhase, phase)
	case cell == 0 || !known(cell):
		return Move{}, fmt.Errorf("%w: %d", ErrUnknownCell, cell)
	}
	next := Move{Org: org, Cell: cell, Phase: phase, Since: now}
	if prev == nil {
		return next, nil
	}
	if prev.Cell == cell {
		switch {
		case prev.Phase == phase:
			return *prev, nil
		case prev.Phase == Switched && phase == Freeze:
			return Move{}, fmt.Errorf("%w: organization %d is switched to cell %d", ErrBackwards, org, cell)
		}
		next.From = prev.From
		return next, nil
	}
	// Another cell: where the organization lives until this move switches.
	next.From = prev.Cell
	if prev.Phase == Freeze {
		next.From = prev.From
	}
	return next, nil
}
