package cellrouter

import (
	"encoding/json"

	"gitlab.com/edge/edge/discovery"
	"gitlab.com/edge/edge/moves"
	"gitlab.com/edge/edge/tokens"
)

// Rule names the classification rule of tokens.md section 4 that picked the cell.
type Rule uint8

const (
	RuleRoutableCell Rule = iota
	RuleJobTokenCell
	RuleClassify
	RuleJobIDRange
	RuleLearnedJobID
	RuleLegacy
	RuleNotRunnerTraffic
	RuleOrgMove // the runner token's organization moved to another cell
)

func (r Rule) String() string {
	switch r {
	case RuleRoutableCell:
		return "routable_token_cell"
	case RuleJobTokenCell:
		return "job_token_cell"
	case RuleClassify:
		return "classify_service"
	case RuleJobIDRange:
		return "job_id_range"
	case RuleLearnedJobID:
		return "learned_job_id"
	case RuleLegacy:
		return "legacy_cell"
	case RuleNotRunnerTraffic:
		return "not_runner_traffic"
	case RuleOrgMove:
		return "org_move"
	}
	return "unknown"
}

// TokenKind is what a token turned out to be.
type TokenKind uint8

const (
	KindNone TokenKind = iota
	KindRoutable
	KindJobJWT
	KindLegacy
)

func (k TokenKind) String() string {
	switch k {
	case KindRoutable:
		return "routable"
	case KindJobJWT:
		return "job_jwt"
	case KindLegacy:
		return "legacy"
	}
	return "none"
}

// TrafficKind is the kind of traffic a request is.
type TrafficKind uint8

const (
	TrafficRunner TrafficKind = iota
	TrafficOther
)

func (t TrafficKind) String() string {
	if t == TrafficRunner {
		return "runner"
	}
	return "other"
}

// Decision is why a request goes where it goes: the answer of `edge explain`, and the labels of
// metrics and logs. It never holds the token itself.
type Decision struct {
	Traffic  TrafficKind
	Source   TokenSource
	Kind     TokenKind
	Keys     tokens.Keys
	Verified bool
	JobID    uint64
	Reason   string // why a token did not route, e.g. "crc mismatch"
	Cell     *discovery.Cell
	Rule     Rule
	Body     string // whether the body was read for a token, and why not
	// Admission, for a jobs/request with runners.admission, is who would be asked about the job.
	Admission *AdmissionPlan
	// Move is the organization move that decided (RuleOrgMove), or that holds the request back
	// (frozen); nil: none.
	Move *moves.Move
}

type decisionJSON struct {
	Traffic     string            `json:"traffic"`
	TokenSource string            `json:"token_source"`
	TokenKind   string            `json:"token_kind"`
	Verified    *bool             `json:"verified,omitempty"`
	Keys        map[string]uint64 `json:"keys,omitempty"`
	JobID       uint64            `json:"job_id,omitempty"`
	Reason      string            `json:"reason,omitempty"`
	Cell        uint64            `json:"cell"`
	CellURL     string            `json:"cell_url"`
	Rule        string            `json:"rule"`
	Body        string            `json:"body,omitempty"`
	Admission   *AdmissionPlan    `json:"admission,omitempty"`
	Move        *moves.Move       `json:"move,omitempty"`
}

func (d Decision) MarshalJSON() ([]byte, error) {
	out := decisionJSON{
		Traffic:     d.Traffic.String(),
		TokenSource: d.Source.String(),
		TokenKind:   d.Kind.String(),
		JobID:       d.JobID,
		Reason:      d.Reason,
		Rule:        d.Rule.String(),
		Body:        d.Body,
		Admission:   d.Admission,
		Move:        d.Move,
	}
	if d.Kind == KindJobJWT {
		out.Verified = &d.Verified
	}
	if d.Keys.Present != 0 {
		out.Keys = d.Keys.Map()
	}
	if d.Cell != nil {
		out.Cell = d.Cell.ID
		out.CellURL = d.Cell.URL.String()
	}
	return json.Marshal(out)
}

// Fields are the decision as `edge explain` prints it.
func (d Decision) Fields() (map[string]any, error) {
	raw, err := json.Marshal(d)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	return out, json.Unmarshal(raw, &out)
}
