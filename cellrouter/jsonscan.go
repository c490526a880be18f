package cellrouter

import (
	"strconv"

	"gitlab.com/edge/edge/internal/jsonspan"
)

// maxDepth bounds how deeply a request body's JSON is followed in search of a token.
const maxDepth = 64

// topLevelString returns the value of the last top-level member named key when it is a JSON
// string. The last one wins because Rack, and so the cell, keeps the last of duplicate keys: edge
// must route on the token the cell will authenticate. A prefix cut short by the body limit or
// malformed JSON yields ok=false, never a guess.
func topLevelString(data []byte, key string) (value string, ok bool) {
	raw, found := topLevelMember(data, key, true)
	if !found || len(raw) < 2 || raw[0] != '"' {
		return "", false
	}
	return jsonspan.Unquote(raw)
}

// topLevelUint reads a top-level unsigned integer member. It stops at the first occurrence
// and tolerates a truncated remainder, since a job answer is read only as far as needed.
func topLevelUint(data []byte, key string) (uint64, bool) {
	raw, found := topLevelMember(data, key, false)
	if !found {
		return 0, false
	}
	n, err := strconv.ParseUint(string(raw), 10, 64)
	return n, err == nil
}

// topLevelMember scans an object and returns the raw bytes of the member's value. With last set,
// the whole object must be well formed and the last occurrence is returned.
func topLevelMember(data []byte, key string, last bool) (raw []byte, found bool) {
	end, ok := jsonspan.Object(data, 0, maxDepth, func(k []byte, start, end int) bool {
		if jsonspan.KeyEquals(k, key) {
			raw, found = data[start:end], true
			return !last
		}
		return false
	})
	switch {
	case !ok:
		return nil, false
	case found && !last:
		return raw, true
	case jsonspan.Space(data, end) != len(data):
		return nil, false
	}
	return raw, found
}
