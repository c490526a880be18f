package tokens

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

const jobSubjectPrefix = "gid://gitlab/Ci::Build/"

// JobClaims is what a CI job token JWT says about where it belongs.
type JobClaims struct {
	Keys         Keys // from "c","o","u","p","g" (base36 strings) and/or "cell_id","organization_id" (integers); "c" and "o" win
	CellConflict bool // c and cell_id both present and disagree (the caller logs it)
	JobID        uint64
	ExpiresAt    time.Time // zero when there is no exp claim (only possible unverified)
}

// jobClaimsJSON is the JSON shape of a job token's claims, in both forms GitLab has used.
type jobClaimsJSON struct {
	jwt.RegisteredClaims
	C              base36Claim  `json:"c"`
	O              base36Claim  `json:"o"`
	U              base36Claim  `json:"u"`
	P              base36Claim  `json:"p"`
	G              base36Claim  `json:"g"`
	CellID         decimalClaim `json:"cell_id"`
	OrganizationID decimalClaim `json:"organization_id"`
}

// ParseJobClaimsUnverified reads the claims of a bare JWT without checking its signature or
// times, for `verify: false` and `edge token decode`. Never trust the result for anything but
// steering a request to a cell that will authenticate it.
func ParseJobClaimsUnverified(jwt string) (JobClaims, error) {
	if !looksLikeJWT(jwt) {
		return JobClaims{}, fmt.Errorf("%w: not a JWT", ErrInvalidJWT)
	}
	first := strings.IndexByte(jwt, '.')
	last := strings.LastIndexByte(jwt, '.')
	payload, err := base64.RawURLEncoding.DecodeString(jwt[first+1 : last])
	if err != nil {
		return JobClaims{}, fmt.Errorf("%w: claims are not base64url", ErrInvalidJWT)
	}
	var c jobClaimsJSON
	if err := json.Unmarshal(payload, &c); err != nil {
		if errors.Is(err, ErrBadClaim) {
			return JobClaims{}, fmt.Errorf("%w: %w", ErrInvalidJWT, err)
		}
		return JobClaims{}, fmt.Errorf("%w: malformed claims", ErrInvalidJWT)
	}
	return c.jobClaims(), nil
}

func (c *jobClaimsJSON) jobClaims() JobClaims {
	var out JobClaims
	for _, f := range []struct {
		bit   KeySet
		claim base36Claim
	}{{KeyCell, c.C}, {KeyOrganization, c.O}, {KeyUser, c.U}, {KeyProject, c.P}, {KeyGroup, c.G}} {
		if f.claim.set {
			out.Keys = out.Keys.Set(f.bit, f.claim.v)
		}
	}
	if c.CellID.set {
		if !c.C.set {
			out.Keys = out.Keys.Set(KeyCell, c.CellID.v)
		} else if c.C.v != c.CellID.v {
			out.CellConflict = true
		}
	}
	if c.OrganizationID.set && !c.O.set {
		out.Keys = out.Keys.Set(KeyOrganization, c.OrganizationID.v)
	}
	if id, ok := strings.CutPrefix(c.Subject, jobSubjectPrefix); ok {
		out.JobID, _ = strconv.ParseUint(id, 10, 64)
	}
	if c.ExpiresAt != nil {
		out.ExpiresAt = c.ExpiresAt.Time
	}
	return out
}

// base36Claim is a newer-form routing claim: base36 in a JSON string. A JSON number is taken
// as the integer it is; null means absent.
type base36Claim struct {
	v   uint64
	set bool
}

func (c *base36Claim) UnmarshalJSON(b []byte) error {
	text, quoted, null, err := claimText(b)
	if null || err != nil {
		return err
	}
	var ok bool
	if quoted {
		c.v, ok = parseBase36(text)
	} else {
		c.v, ok = parseDecimal(text)
	}
	if !ok {
		return ErrBadClaim
	}
	c.set = true
	return nil
}

// claimText reads a claim that may be a JSON string or a bare value: its text, whether it was
// quoted, and whether it was null (absent).
func claimText(b []byte) (text string, quoted, null bool, err error) {
	if bytes.Equal(b, []byte("null")) {
		return "", false, true, nil
	}
	if len(b) > 0 && b[0] == '"' {
		if err := json.Unmarshal(b, &text); err != nil {
			return "", true, false, ErrBadClaim
		}
		return text, true, false, nil
	}
	return string(b), false, false, nil
}

// decimalClaim is an older-form routing claim (cell_id, organization_id): a JSON integer, or a
// decimal string; null means absent.
type decimalClaim struct {
	v   uint64
	set bool
}

func (c *decimalClaim) UnmarshalJSON(b []byte) error {
	text, _, null, err := claimText(b)
	if null || err != nil {
		return err
	}
	var ok bool
	if c.v, ok = parseDecimal(text); !ok {
		return ErrBadClaim
	}
	c.set = true
	return nil
}

func parseDecimal(s string) (uint64, bool) {
	v, err := strconv.ParseUint(s, 10, 64)
	return v, err == nil
}
