package aggregate

import (
	"encoding/base64"
	"encoding/json"
	"errors"
)

// Stamping thousands of list items must not decode and re-encode each one: these functions find
// the spans of values in JSON text, so an item's metadata can be edited in place. They assume
// valid JSON (what a member sent and encoding/json accepted as a RawMessage).

var errJSONSpan = errors.New("aggregate: unexpected JSON")

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\t' || b[i] == '\r') {
		i++
	}
	return i
}

// valueEnd returns the index just past the JSON value starting at i.
func valueEnd(b []byte, i int) (int, error) {
	i = skipSpace(b, i)
	if i >= len(b) {
		return 0, errJSONSpan
	}
	switch b[i] {
	case '"':
		for j := i + 1; j < len(b); j++ {
			switch b[j] {
			case '\\':
				j++
			case '"':
				return j + 1, nil
			}
		}
		return 0, errJSONSpan
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				end, err := valueEnd(b, j)
				if err != nil {
					return 0, err
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1, nil
				}
			}
		}
		return 0, errJSONSpan
	default:
		j := i
		for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && b[j] != ' ' && b[j] != '\n' && b[j] != '\t' && b[j] != '\r' {
			j++
		}
		return j, nil
	}
}

// span is where a value stands in JSON text.
type span struct{ start, end int }

// topFields finds the values of the object's top-level keys in one pass.
func topFields(b []byte) (map[string]span, error) {
	out := map[string]span{}
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil, errJSONSpan
	}
	i++
	for {
		i = skipSpace(b, i)
		if i < len(b) && b[i] == '}' {
			return out, nil
		}
		kEnd, err := valueEnd(b, i)
		if err != nil || kEnd-i < 2 {
			return nil, errJSONSpan
		}
		name := string(b[i+1 : kEnd-1])
		i = skipSpace(b, kEnd)
		if i >= len(b) || b[i] != ':' {
			return nil, errJSONSpan
		}
		vStart := skipSpace(b, i+1)
		vEnd, err := valueEnd(b, vStart)
		if err != nil {
			return nil, err
		}
		out[name] = span{vStart, vEnd}
		i = skipSpace(b, vEnd)
		if i < len(b) && b[i] == ',' {
			i++
		}
	}
}

// field finds a key of the object starting at i (b[i] == '{'): the span of its value, or ok
// false when the object has no such key.
func field(b []byte, i int, key string) (start, end int, ok bool, err error) {
	i = skipSpace(b, i)
	if i >= len(b) || b[i] != '{' {
		return 0, 0, false, errJSONSpan
	}
	i++
	for {
		i = skipSpace(b, i)
		if i < len(b) && b[i] == '}' {
			return 0, 0, false, nil
		}
		kEnd, err := valueEnd(b, i)
		if err != nil {
			return 0, 0, false, err
		}
		name := b[i:kEnd]
		i = skipSpace(b, kEnd)
		if i >= len(b) || b[i] != ':' {
			return 0, 0, false, errJSONSpan
		}
		vStart := skipSpace(b, i+1)
		vEnd, err := valueEnd(b, vStart)
		if err != nil {
			return 0, 0, false, err
		}
		if len(name) == len(key)+2 && string(name[1:len(name)-1]) == key {
			return vStart, vEnd, true, nil
		}
		i = skipSpace(b, vEnd)
		if i < len(b) && b[i] == ',' {
			i++
		}
	}
}

// stampFast is stamp by splicing: the cluster annotation inserted (or set) and the
// resourceVersion replaced by a global one naming cluster, leaving every other byte as it came.
// It falls back to the decoding stamp when the text is not what it expects.
func stampFast(raw []byte, cluster string) []byte {
	out, err := splice(raw, cluster)
	if err != nil {
		return stamp(raw, cluster)
	}
	return out
}

func splice(raw []byte, cluster string) ([]byte, error) {
	mStart, mEnd, ok, err := field(raw, 0, "metadata")
	if err != nil || !ok || raw[mStart] != '{' {
		return nil, errJSONSpan
	}
	meta := raw[mStart:mEnd]
	var ann, rv span
	hasAnn, hasRV := false, false
	// One pass over metadata's keys.
	i := 1
	for {
		i = skipSpace(meta, i)
		if i >= len(meta) || meta[i] == '}' {
			break
		}
		kEnd, err := valueEnd(meta, i)
		if err != nil {
			return nil, err
		}
		key := meta[i:kEnd]
		i = skipSpace(meta, kEnd)
		if i >= len(meta) || meta[i] != ':' {
			return nil, errJSONSpan
		}
		vStart := skipSpace(meta, i+1)
		vEnd, err := valueEnd(meta, vStart)
		if err != nil {
			return nil, err
		}
		switch string(key) {
		case `"annotations"`:
			ann, hasAnn = span{vStart, vEnd}, true
		case `"resourceVersion"`:
			rv, hasRV = span{vStart, vEnd}, true
		}
		i = skipSpace(meta, vEnd)
		if i < len(meta) && meta[i] == ',' {
			i++
		}
	}
	if hasAnn {
		if meta[ann.start] != '{' {
			return nil, errJSONSpan
		}
		if _, _, exists, err := field(meta[ann.start:ann.end], 0, ClusterAnnotation); err != nil || exists {
			return nil, errJSONSpan // rare: let the decoding stamp replace it
		}
	}
	clusterJSON := jsonString(cluster)
	entry := append([]byte(`"`+ClusterAnnotation+`":`), clusterJSON...)
	type edit struct {
		at, end int
		with    []byte
	}
	var edits [2]edit
	n := 0
	if hasRV && meta[rv.start] == '"' {
		if v, ok := plainString(meta[rv.start:rv.end]); ok && v != "" {
			edits[n] = edit{rv.start, rv.end, append(append([]byte{'"'}, singleRV(clusterJSON, v)...), '"')}
			n++
		}
	}
	if hasAnn {
		inner := skipSpace(meta, ann.start+1)
		with := append(entry, ',')
		if meta[inner] == '}' {
			with = entry
		}
		edits[n] = edit{ann.start + 1, ann.start + 1, with}
	} else {
		at := skipSpace(meta, 1)
		with := append(append([]byte(`"annotations":{`), entry...), '}')
		if meta[at] != '}' {
			with = append(with, ',')
		}
		edits[n] = edit{1, 1, with}
	}
	n++
	if n == 2 && edits[1].at < edits[0].at {
		edits[0], edits[1] = edits[1], edits[0]
	}
	out := make([]byte, 0, len(raw)+96)
	out = append(out, raw[:mStart]...)
	prev := 0
	for _, e := range edits[:n] {
		out = append(out, meta[prev:e.at]...)
		out = append(out, e.with...)
		prev = e.end
	}
	out = append(out, meta[prev:]...)
	return append(out, raw[mEnd:]...), nil
}

// plainString reads a JSON string without escapes (a resourceVersion is digits).
func plainString(b []byte) (string, bool) {
	if len(b) < 2 || b[0] != '"' || b[len(b)-1] != '"' {
		return "", false
	}
	for _, c := range b[1 : len(b)-1] {
		if c == '\\' || c < 0x20 {
			return "", false
		}
	}
	return string(b[1 : len(b)-1]), true
}

func jsonString(s string) []byte {
	b, _ := json.Marshal(s)
	return b
}

// singleRV is globalRV{cluster: rv}.encode() without the map: {"<cluster>":"<rv>"}, base64url.
func singleRV(clusterJSON []byte, rv string) []byte {
	var buf [256]byte
	j := append(buf[:0], '{')
	j = append(j, clusterJSON...)
	j = append(j, ':')
	j = append(j, jsonString(rv)...)
	j = append(j, '}')
	out := make([]byte, base64.RawURLEncoding.EncodedLen(len(j)))
	base64.RawURLEncoding.Encode(out, j)
	return out
}
