package aggregate

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
)

// globalRV is a resourceVersion per member. Its wire form is base64url (no padding) of the JSON
// object {"<cluster>":"<rv>",...} with keys sorted, so equal versions are equal strings.
type globalRV map[string]string

// encode writes the byte-stable form.
func (g globalRV) encode() string {
	names := make([]string, 0, len(g))
	for n := range g {
		names = append(names, n)
	}
	slices.Sort(names)
	var b bytes.Buffer
	b.WriteByte('{')
	for i, n := range names {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(n)
		v, _ := json.Marshal(g[n])
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return base64.RawURLEncoding.EncodeToString(b.Bytes())
}

// decodeRV reads a global resourceVersion. "" and "0" mean what they mean to one apiserver, for
// every member: they come back as ok with special set.
func decodeRV(s string) (g globalRV, special bool, err error) {
	if s == "" || s == "0" {
		return nil, true, nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, false, fmt.Errorf("%w: %q is not one of edge's", ErrBadResourceVersion, s)
	}
	if err := json.Unmarshal(raw, &g); err != nil || len(g) == 0 {
		return nil, false, fmt.Errorf("%w: %q is not one of edge's", ErrBadResourceVersion, s)
	}
	for _, v := range g {
		if _, err := strconv.ParseUint(v, 10, 64); err != nil {
			return nil, false, fmt.Errorf("%w: %q is not one of edge's", ErrBadResourceVersion, s)
		}
	}
	return g, false, nil
}

// continueToken is where a paged list stands: the global version of its first page, the member
// it is in, and that member's own continue token ("" to start the member).
type continueToken struct {
	RV       string `json:"rv"`
	Cluster  string `json:"cluster"`
	Continue string `json:"continue"`
}

func (c continueToken) encode() string {
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeContinue(s string) (continueToken, error) {
	var c continueToken
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || json.Unmarshal(raw, &c) != nil || c.Cluster == "" {
		return c, fmt.Errorf("%w: the continue token is not one of edge's", ErrBadResourceVersion)
	}
	return c, nil
}
