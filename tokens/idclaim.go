package tokens

const maxIDLen = 64

// idClaim is an agent_id or project_id: a string that validID accepts, or a JSON integer taken
// as its decimal string; null means absent.
type idClaim struct {
	v   string
	set bool
}

func (c *idClaim) UnmarshalJSON(b []byte) error {
	s, quoted, null, err := claimText(b)
	if null || err != nil {
		return err
	}
	if !quoted {
		if s = decimalInteger(s); s == "" {
			return ErrBadClaim
		}
	}
	if !validID(s) {
		return ErrBadClaim
	}
	c.v, c.set = s, true
	return nil
}

// decimalInteger returns the decimal string of a JSON number that is an integer written without
// fraction or exponent (encoding/json has already checked the number's syntax, so there are no
// leading zeros), or "" for anything else.
func decimalInteger(num string) string {
	digits := num
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	if digits == "" {
		return ""
	}
	for i := range len(digits) {
		if digits[i] < '0' || digits[i] > '9' {
			return ""
		}
	}
	if digits == "0" {
		return "0" // -0 is 0
	}
	return num
}

// validID reports whether s is 1 to 64 characters from [A-Za-z0-9._-].
func validID(s string) bool {
	if len(s) == 0 || len(s) > maxIDLen {
		return false
	}
	for i := range len(s) {
		// The base64url alphabet is [A-Za-z0-9_-]; an id also allows '.'.
		if !isBase64URL(s[i]) && s[i] != '.' {
			return false
		}
	}
	return true
}

// ValidID tells whether s is a well-formed agent or project id: 1 to 64 characters of
// [A-Za-z0-9._-] (tunnels.md).
func ValidID(s string) bool { return validID(s) }
