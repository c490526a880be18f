package agentrouter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"gitlab.com/edge/edge/hop"
	"gitlab.com/edge/edge/moves"
)

// OrgMoves is what the API for GitLab asks of organization moves (a moves.Table).
type OrgMoves interface {
	Set(ctx context.Context, org, cell uint64, phase moves.Phase, known func(uint64) bool) (moves.Move, error)
	Forget(ctx context.Context, org uint64) error
	All() []moves.Move
}

// maxMoveBody bounds a move's JSON: {"cell": N, "phase": "switched"} and some room.
const maxMoveBody = 1 << 10

// parseOrgCall reads organizations/moves and organizations/{org_id}/cell.
func parseOrgCall(method, id, rest string) (apiCall, error) {
	if id == "moves" && rest == "" {
		return apiCall{op: opOrgMoves}, readOnly(method)
	}
	if rest != "cell" {
		return apiCall{}, fmt.Errorf("%w: no such API path", hop.ErrNotFound)
	}
	org, err := strconv.ParseUint(id, 10, 64)
	if err != nil || org == 0 || id[0] == '0' || id[0] == '+' {
		return apiCall{}, fmt.Errorf("%w: organization id %q is not a positive integer", hop.ErrBadRequest, id)
	}
	switch method {
	case http.MethodPut:
		return apiCall{op: opOrgMove, org: org}, nil
	case http.MethodDelete:
		return apiCall{op: opOrgForget, org: org}, nil
	}
	return apiCall{}, methodNotAllowed(method, "PUT, DELETE")
}

// serveOrg answers the organization moves' calls.
func (g *GitLabAPI) serveOrg(w http.ResponseWriter, r *http.Request, call apiCall) {
	if g.moves == nil {
		hop.Error(w, fmt.Errorf("%w: organization moves", hop.ErrNotConfigured))
		return
	}
	switch call.op {
	case opOrgMoves:
		writeJSON(w, http.StatusOK, struct {
			Moves []moves.Move `json:"moves"`
		}{g.moves.All()})
	case opOrgMove:
		var req struct {
			Cell  uint64 `json:"cell"`
			Phase string `json:"phase"`
		}
		dec := json.NewDecoder(io.LimitReader(r.Body, maxMoveBody))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&req); err != nil {
			hop.Error(w, fmt.Errorf("%w: the body must be {\"cell\": <id>, \"phase\": \"freeze\"|\"switched\"}: %w", hop.ErrBadRequest, err))
			return
		}
		phase, err := moves.ParsePhase(req.Phase)
		if err == nil {
			var m moves.Move
			if m, err = g.moves.Set(r.Context(), call.org, req.Cell, phase, g.cells); err == nil {
				g.agents.o.Log.Info("organization move", "org_id", m.Org, "cell", m.Cell, "from_cell", m.From, "phase", m.Phase.String())
				writeJSON(w, http.StatusOK, m)
				return
			}
		}
		hop.Error(w, moveError(err))
	case opOrgForget:
		if err := g.moves.Forget(r.Context(), call.org); err != nil {
			hop.Error(w, moveError(err))
			return
		}
		g.agents.o.Log.Info("organization move forgotten", "org_id", call.org)
		w.WriteHeader(http.StatusNoContent)
	}
}

// moveError maps the moves' errors to the API's statuses.
func moveError(err error) error {
	switch {
	case errors.Is(err, moves.ErrBackwards):
		return fmt.Errorf("%w: %w", hop.ErrConflict, err)
	case errors.Is(err, moves.ErrNotFound):
		return fmt.Errorf("%w: %w", hop.ErrNotFound, err)
	case errors.Is(err, moves.ErrBadMove), errors.Is(err, moves.ErrBadPhase), errors.Is(err, moves.ErrUnknownCell):
		return fmt.Errorf("%w: %w", hop.ErrBadRequest, err)
	}
	return fmt.Errorf("%w: organization moves: %w", hop.ErrRegistryDown, err)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		hop.Error(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)+1))
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

// methodError is a method the path does not answer, and the ones it does (Allow).
type methodError struct {
	method, allow string
}

func (e *methodError) Error() string {
	return fmt.Sprintf("%s: %s; this path answers %s", hop.ErrMethodNotAllowed, e.method, e.allow)
}

func (e *methodError) Unwrap() error { return hop.ErrMethodNotAllowed }

func methodNotAllowed(method, allow string) error { return &methodError{method, allow} }
