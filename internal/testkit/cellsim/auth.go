package cellsim

import (
	"encoding/json"
	"mime"
	"net/url"
	"strings"

	"gitlab.com/edge/edge/tokens"
)

// bodyFields are the fields of a runner API body the cell looks at.
type bodyFields struct {
	Token         string `json:"token"`
	LastUpdate    string `json:"last_update"`
	State         string `json:"state"`
	FailureReason string `json:"failure_reason"`
}

// parseBody reads a JSON or form body the way Grape would; ok is false when it is neither.
func parseBody(contentType string, b []byte) (f bodyFields, ok bool) {
	if len(b) == 0 {
		return f, true
	}
	mt, _, _ := mime.ParseMediaType(contentType)
	if mt == "application/x-www-form-urlencoded" {
		v, err := url.ParseQuery(string(b))
		if err != nil {
			return f, false
		}
		return bodyFields{Token: v.Get("token"), LastUpdate: v.Get("last_update"), State: v.Get("state"), FailureReason: v.Get("failure_reason")}, true
	}
	// Grape parses JSON for application/json and, for these endpoints, anything else too.
	var raw struct {
		Token         any `json:"token"`
		LastUpdate    any `json:"last_update"`
		State         any `json:"state"`
		FailureReason any `json:"failure_reason"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return f, false
	}
	return bodyFields{Token: asString(raw.Token), LastUpdate: asString(raw.LastUpdate), State: asString(raw.State),
		FailureReason: asString(raw.FailureReason)}, true
}

func asString(v any) string {
	s, _ := v.(string)
	return s
}

// takeToken finds the token the way GitLab does: a token header, else the body's or the
// query's token field. It fills the record.
func (ex *exchange) takeToken(body bodyFields) string {
	ex.rec.BodyToken = body.Token
	h := ex.r.Header
	for _, k := range []string{"Runner-Token", "Job-Token", "Private-Token"} {
		if v := strings.TrimSpace(h.Get(k)); v != "" {
			ex.rec.TokenSource, ex.rec.Token = strings.ToUpper(k), v
			return v
		}
	}
	if v, ok := trimBearer(h.Get("Authorization")); ok {
		ex.rec.TokenSource, ex.rec.Token = "Authorization", v
		return v
	}
	if body.Token != "" {
		ex.rec.TokenSource, ex.rec.Token = "body", body.Token
		return body.Token
	}
	q := ex.r.URL.Query()
	for _, k := range []string{"token", "job_token", "private_token"} {
		if v := q.Get(k); v != "" {
			ex.rec.TokenSource, ex.rec.Token = "query", v
			return v
		}
	}
	return ""
}

// judgeRunner decides whether a runner-scoped token (runner, registration or personal token)
// is this cell's, and whether it was routed here by mistake. It fills the record.
func (c *Cell) judgeRunner(ex *exchange, token string) bool {
	c.mu.Lock()
	issued := c.issued[token]
	c.mu.Unlock()
	switch cell, named := namedCell(token); {
	case issued:
		ex.rec.Authorized = true
	case named:
		ex.rec.Authorized = cell == c.opts.CellID
		ex.rec.Misrouted = cell != c.opts.CellID
	default:
		// A token that names no cell lives in the legacy cell, like every pre-Cells token.
		ex.rec.Authorized = token != "" && c.opts.Legacy
		ex.rec.Misrouted = !c.opts.Legacy
	}
	return ex.rec.Authorized
}

// namedCell is the cell a token's routing keys name, read without verification (a cell only
// needs to know whether it should have received the token).
func namedCell(token string) (uint64, bool) {
	if r, err := tokens.ParseRoutable(token); err == nil {
		return r.Keys.Get(tokens.KeyCell)
	}
	if raw, ok := tokens.JobJWT(token); ok {
		return jwtCell(raw)
	}
	return 0, false
}

// jwtCell reads the cell a JWT's claims name (c, else the older cell_id).
func jwtCell(raw string) (uint64, bool) {
	claims, err := tokens.ParseJobClaimsUnverified(raw)
	if err != nil {
		return 0, false
	}
	return claims.Keys.Get(tokens.KeyCell)
}
