package aggregate

import (
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
	aStart, aEnd, hasAnn, err := field(meta, 0, "annotations")
	if err != nil {
		return nil, err
	}
	if hasAnn {
		if meta[aStart] != '{' {
			return nil, errJSONSpan
		}
		if _, _, exists, err := field(meta[aStart:aEnd], 0, ClusterAnnotation); err != nil || exists {
			return nil, errJSONSpan // rare: let the decoding stamp replace it
		}
	}
	rStart, rEnd, hasRV, err := field(meta, 0, "resourceVersion")
	if err != nil {
		return nil, err
	}
	annotation, _ := json.Marshal(ClusterAnnotation)
	name, _ := json.Marshal(cluster)
	entry := append(append(annotation, ':'), name...)
	var newMeta []byte
	type edit struct {
		at, end int
		with    []byte
	}
	var edits []edit
	if hasRV && meta[rStart] == '"' {
		var rv string
		if json.Unmarshal(meta[rStart:rEnd], &rv) == nil && rv != "" {
			g, _ := json.Marshal(globalRV{cluster: rv}.encode())
			edits = append(edits, edit{rStart, rEnd, g})
		}
	}
	if hasAnn {
		inner := skipSpace(meta, aStart+1)
		with := append(entry, ',')
		if meta[inner] == '}' {
			with = entry
		}
		edits = append(edits, edit{aStart + 1, aStart + 1, with})
	} else {
		at := skipSpace(meta, 1)
		with := append(append([]byte(`"annotations":{`), entry...), '}')
		if meta[at] != '}' {
			with = append(with, ',')
		}
		edits = append(edits, edit{1, 1, with})
	}
	// Apply in order of position.
	if len(edits) == 2 && edits[1].at < edits[0].at {
		edits[0], edits[1] = edits[1], edits[0]
	}
	newMeta = make([]byte, 0, len(meta)+64)
	prev := 0
	for _, e := range edits {
		newMeta = append(newMeta, meta[prev:e.at]...)
		newMeta = append(newMeta, e.with...)
		prev = e.end
	}
	newMeta = append(newMeta, meta[prev:]...)
	out := make([]byte, 0, len(raw)+len(newMeta)-len(meta))
	out = append(out, raw[:mStart]...)
	out = append(out, newMeta...)
	out = append(out, raw[mEnd:]...)
	return out, nil
}
