package tokens

import "strconv"

// KeySet is a bit set of routing keys present in a token.
type KeySet uint8

// Routing keys, one bit each. The payload letter is in the comment.
const (
	KeyCell         KeySet = 1 << iota // "c"
	KeyOrganization                    // "o"
	KeyGroup                           // "g"
	KeyProject                         // "p"
	KeyUser                            // "u"
	KeyRunnerType                      // "t"
)

// keyOrder lists the keys in payload order (sorted by letter), which MintRoutable relies on.
const keyOrder = "cgoptu"

// Keys holds the routing values of a token. A value is meaningful only when its bit is in Present.
type Keys struct {
	Cell, Organization, Group, Project, User, RunnerType uint64
	Present                                              KeySet
}

// Has reports whether every key in s is present.
func (k Keys) Has(s KeySet) bool { return k.Present&s == s }

// Get returns the value of the single key s and whether it is present.
func (k Keys) Get(s KeySet) (uint64, bool) {
	p := k.field(s)
	if p == nil || !k.Has(s) {
		return 0, false
	}
	return *p, true
}

// Set returns k with the single key s set to v.
func (k Keys) Set(s KeySet, v uint64) Keys {
	k.put(s, v)
	return k
}

func (k *Keys) put(s KeySet, v uint64) {
	if p := k.field(s); p != nil {
		*p = v
		k.Present |= s
	}
}

// Map returns the present keys by payload letter, e.g. {"c":2,"o":1}, for JSON output.
func (k Keys) Map() map[string]uint64 {
	m := make(map[string]uint64, len(keyOrder))
	for i := range len(keyOrder) {
		if v, ok := k.Get(keyBit(keyOrder[i])); ok {
			m[keyOrder[i:i+1]] = v
		}
	}
	return m
}

func (k *Keys) field(s KeySet) *uint64 {
	switch s {
	case KeyCell:
		return &k.Cell
	case KeyOrganization:
		return &k.Organization
	case KeyGroup:
		return &k.Group
	case KeyProject:
		return &k.Project
	case KeyUser:
		return &k.User
	case KeyRunnerType:
		return &k.RunnerType
	}
	return nil
}

// keyBit maps a payload letter to its bit; 0 for letters that are not routing keys.
func keyBit(c byte) KeySet {
	switch c {
	case 'c':
		return KeyCell
	case 'o':
		return KeyOrganization
	case 'g':
		return KeyGroup
	case 'p':
		return KeyProject
	case 'u':
		return KeyUser
	case 't':
		return KeyRunnerType
	}
	return 0
}

// parseBase36 parses lower-case base36 as GitLab writes it (Ruby Integer#to_s(36)).
func parseBase36[T string | []byte](s T) (uint64, bool) {
	if len(s) == 0 || len(s) > 13 {
		return 0, false
	}
	var v uint64
	for i := range len(s) {
		d, ok := base36Digit(s[i])
		if !ok {
			return 0, false
		}
		hi := v * 36
		if hi/36 != v || hi+d < hi {
			return 0, false
		}
		v = hi + d
	}
	return v, true
}

func base36Digit(c byte) (uint64, bool) {
	switch {
	case '0' <= c && c <= '9':
		return uint64(c - '0'), true
	case 'a' <= c && c <= 'z':
		return uint64(c-'a') + 10, true
	}
	return 0, false
}

func formatBase36(v uint64) string { return strconv.FormatUint(v, 36) }
