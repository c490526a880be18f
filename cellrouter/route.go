package cellrouter

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"gitlab.com/edge/edge/discovery"
	"gitlab.com/edge/edge/hop"
	"gitlab.com/edge/edge/moves"
	"gitlab.com/edge/edge/tokens"
)

// JobVerifier checks a job token JWT's signature and claims.
type JobVerifier interface {
	Verify(ctx context.Context, jwt string) (tokens.JobClaims, error)
}

// Classifier asks a Topology-Service-style endpoint which cell owns a routing value.
type Classifier interface {
	Classify(ctx context.Context, typ discovery.ClassifyType, value uint64) (address string, found bool, err error)
}

// classifyForgetter is a Classifier whose cached answers can be dropped (discovery.Classifier).
type classifyForgetter interface {
	Forget(names func(address string) bool, org uint64) int
}

// OrgMoved drops, once a move switches, the cached classify answers that named the cell the
// organization left (its projects' and groups' among them: edge cannot tell which are its) and
// the organization's own: the next lookups ask the service, which GitLab has updated.
func (p *Router) OrgMoved(prev *moves.Move, m moves.Move) {
	f, ok := p.classifier.(classifyForgetter)
	if !ok || m.Phase != moves.Switched || prev != nil && prev.Phase == moves.Switched && prev.Cell == m.Cell {
		return
	}
	n := f.Forget(func(address string) bool {
		if m.From == 0 {
			return true // the cell it left is not known: every answer may name it
		}
		c, ok := p.cells.ByURL(address)
		return ok && c.ID == m.From
	}, m.Org)
	p.log.Info("organization switched: cached classify answers dropped", "org_id", m.Org, "from_cell", m.From, "cell", m.Cell, "dropped", n)
}

// OrgMoves says where an organization moved (a moves.Table).
type OrgMoves interface {
	Lookup(org uint64) (moves.Move, bool)
}

// JobLearner remembers which cell handed out a job.
type JobLearner interface {
	Learn(jobID, cellID uint64)
	Lookup(jobID uint64) (cellID uint64, ok bool)
}

// verdict is what one token says on its own.
type verdict struct {
	kind     TokenKind
	keys     tokens.Keys
	verified bool
	jobID    uint64
	reason   string
	cell     *discovery.Cell
	rule     Rule
}

func (p *Router) judge(ctx context.Context, raw string) (verdict, error) {
	if jwt, ok := tokens.JobJWT(raw); ok {
		return p.judgeJobJWT(ctx, jwt)
	}
	r, err := tokens.ParseRoutable(raw)
	if err != nil {
		return verdict{kind: KindLegacy, reason: reasonOf(err)}, nil
	}
	v := verdict{kind: KindRoutable, keys: r.Keys}
	if r.Keys.Has(tokens.KeyCell) {
		v.pickCell(p.cells, r.Keys.Cell, RuleRoutableCell)
	}
	return v, nil
}

func (p *Router) judgeJobJWT(ctx context.Context, jwt string) (verdict, error) {
	var (
		claims tokens.JobClaims
		err    error
		v      = verdict{kind: KindJobJWT}
	)
	switch {
	case p.verifier != nil:
		claims, err = p.verifier.Verify(ctx, jwt)
		if err != nil {
			if p.rejectInvalid {
				return v, fmt.Errorf("%w: %w", hop.ErrInvalidJobToken, err)
			}
			v.reason = reasonOf(err)
			return v, nil
		}
		v.verified = true
	case p.routeUnverified:
		claims, err = tokens.ParseJobClaimsUnverified(jwt)
		if err != nil {
			v.reason = reasonOf(err)
			return v, nil
		}
	default:
		v.reason = "job token verification is not configured"
		return v, nil
	}
	if claims.CellConflict {
		p.log.Warn("job token claims c and cell_id disagree; c wins", "c", claims.Keys.Cell, "job_id", claims.JobID)
	}
	v.keys, v.jobID = claims.Keys, claims.JobID
	if claims.Keys.Has(tokens.KeyCell) {
		v.pickCell(p.cells, claims.Keys.Cell, RuleJobTokenCell)
	}
	return v, nil
}

func (v *verdict) pickCell(cells *discovery.Cells, id uint64, rule Rule) {
	cell, ok := cells.ByID(id)
	if !ok {
		v.reason = "names cell " + strconv.FormatUint(id, 10) + ", which is not configured"
		return
	}
	v.cell, v.rule = cell, rule
}

// reasonOf keeps a parse or verification error short enough for explain and logs; token
// packages never put the token in their errors.
func reasonOf(err error) string {
	msg := err.Error()
	if i := strings.LastIndex(msg, ": "); i >= 0 && i+2 < len(msg) {
		return msg[i+2:]
	}
	return msg
}

// route applies tokens.md section 4 to the tokens found in a request.
func (p *Router) route(ctx context.Context, path string, found []foundToken) (Decision, error) {
	d := Decision{Traffic: TrafficRunner}
	var first, classifiable *verdict
	var firstSource, classifiableSource TokenSource
	var verdicts [maxTokens]verdict
	for i, t := range found {
		v, err := p.judge(ctx, t.value)
		if err != nil {
			d.Source, d.Kind = t.source, v.kind
			return d, err
		}
		verdicts[i] = v
		if first == nil {
			first, firstSource = &verdicts[i], t.source
		}
		if v.cell == nil {
			if classifiable == nil && v.kind == KindRoutable && v.keys.Present != 0 {
				classifiable, classifiableSource = &verdicts[i], t.source
			}
			continue
		}
		if d.Cell != nil {
			if d.Cell.ID != v.cell.ID {
				return d, fmt.Errorf("%w: %s names cell %d, %s names cell %d", hop.ErrConflictingTokens,
					d.Source, d.Cell.ID, t.source, v.cell.ID)
			}
			continue
		}
		d.setToken(t.source, v)
		d.Cell, d.Rule = v.cell, v.rule
	}
	if d.Rule != RuleJobTokenCell {
		// A job already claimed keeps going where it runs; a runner's token follows its
		// organization's move, whatever cell the token was minted in.
		if moved, err := p.followMove(&d, verdicts[:len(found)], found); moved || err != nil {
			return d, err
		}
	}
	if d.Cell != nil {
		return d, nil
	}
	if first != nil {
		d.setToken(firstSource, *first)
	}
	if classifiable != nil && p.classifier != nil {
		if cell, ok := p.classify(ctx, classifiable.keys); ok {
			d.setToken(classifiableSource, *classifiable)
			d.Cell, d.Rule = cell, RuleClassify
			return d, nil
		}
	}
	if id, ok := jobIDFromPath(path); ok {
		if d.JobID == 0 {
			d.JobID = id
		}
		if cell, ok := p.cells.ByJobID(id); ok {
			d.Cell, d.Rule = cell, RuleJobIDRange
			return d, nil
		}
		if p.learned != nil {
			if cellID, ok := p.learned.Lookup(id); ok {
				if cell, ok := p.cells.ByID(cellID); ok {
					d.Cell, d.Rule = cell, RuleLearnedJobID
					return d, nil
				}
			}
		}
	}
	d.Cell, d.Rule = p.cells.Legacy(), RuleLegacy
	return d, nil
}

func (d *Decision) setToken(source TokenSource, v verdict) {
	d.Source, d.Kind, d.Keys, d.Verified, d.JobID, d.Reason = source, v.kind, v.keys, v.verified, v.jobID, v.reason
}

// classify asks by the most specific key: project, then group, organization, user.
func (p *Router) classify(ctx context.Context, keys tokens.Keys) (*discovery.Cell, bool) {
	var typ discovery.ClassifyType
	var value uint64
	switch {
	case keys.Has(tokens.KeyProject):
		typ, value = discovery.ClassifyProject, keys.Project
	case keys.Has(tokens.KeyGroup):
		typ, value = discovery.ClassifyGroup, keys.Group
	case keys.Has(tokens.KeyOrganization):
		typ, value = discovery.ClassifyOrganization, keys.Organization
	case keys.Has(tokens.KeyUser):
		typ, value = discovery.ClassifyUser, keys.User
	default:
		return nil, false
	}
	address, found, err := p.classifier.Classify(ctx, typ, value)
	switch {
	case errors.Is(err, context.Canceled):
		return nil, false
	case err != nil:
		p.log.Warn("classify service gave no answer; using later rules", "type", string(typ), "value", value, "error", err)
		return nil, false
	case !found:
		return nil, false
	}
	cell, ok := p.cells.ByURL(address)
	if !ok {
		p.log.Warn("classify service named an address that is not a configured cell", "type", string(typ), "value", value, "address", address)
	}
	return cell, ok
}

// jobIDFromPath reads <id> from /api/v4/jobs/<id> and /api/v4/jobs/<id>/...
func jobIDFromPath(path string) (uint64, bool) {
	const prefix = "/api/v4/jobs/"
	if !strings.HasPrefix(path, prefix) {
		return 0, false
	}
	rest := path[len(prefix):]
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		rest = rest[:i]
	}
	if rest == "" || rest[0] < '1' || rest[0] > '9' {
		return 0, false
	}
	id, err := strconv.ParseUint(rest, 10, 64)
	return id, err == nil
}

// followMove routes by the move of the organization a routable token names (o:N): to its new
// cell once switched; refused (hop.ErrOrgMoving) while frozen.
func (p *Router) followMove(d *Decision, verdicts []verdict, found []foundToken) (bool, error) {
	if p.moves == nil {
		return false, nil
	}
	for i, v := range verdicts {
		if v.kind != KindRoutable || !v.keys.Has(tokens.KeyOrganization) {
			continue
		}
		m, ok := p.moves.Lookup(v.keys.Organization)
		if !ok {
			continue
		}
		d.setToken(found[i].source, v)
		d.Move = &m
		if m.Phase == moves.Freeze {
			return true, fmt.Errorf("%w: organization %d moves to cell %d", hop.ErrOrgMoving, m.Org, m.Cell)
		}
		cell, ok := p.cells.ByID(m.Cell)
		if !ok {
			return false, nil // a move to a cell this edge no longer has: the other rules
		}
		d.Cell, d.Rule = cell, RuleOrgMove
		return true, nil
	}
	return false, nil
}
