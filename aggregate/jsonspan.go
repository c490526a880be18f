package aggregate

import (
	"encoding/base64"
	"encoding/json"

	"gitlab.com/edge/edge/internal/jsonspan"
)

// Stamping thousands of list items must not decode and re-encode each one: these functions find
// the spans of values in JSON text, so an item's metadata can be edited in place. They assume
// valid JSON (what a member sent and encoding/json accepted as a RawMessage).

// span is where a value stands in JSON text.
type span struct{ start, end int }

// topFields finds the values of the object's top-level keys in one pass.
func topFields(b []byte) (map[string]span, error) {
	out := map[string]span{}
	if _, ok := jsonspan.Object(b, 0, jsonspan.MaxDepth, func(key []byte, start, end int) bool {
		out[string(key[1:len(key)-1])] = span{start, end}
		return false
	}); !ok {
		return nil, errJSONSpan
	}
	return out, nil
}

// field finds a key of the object starting at i (b[i] == '{'): the span of its value, or ok
// false when the object has no such key.
func field(b []byte, i int, key string) (start, end int, ok bool, err error) {
	start, end, ok, wellFormed := jsonspan.Field(b, i, jsonspan.MaxDepth, key)
	if !wellFormed {
		return 0, 0, false, errJSONSpan
	}
	return start, end, ok, nil
}

// stampFast is stamp by editing the text in place: the cluster annotation inserted (or set) and the
// resourceVersion replaced by a global one naming cluster, leaving every other byte as it came.
// It falls back to the decoding stamp when the text is not what it expects.
func stampFast(raw []byte, cluster string) []byte {
	out, err := stampInPlace(raw, cluster)
	if err != nil {
		return stamp(raw, cluster)
	}
	return out
}

// stampInPlace edits the metadata of raw as text; errJSONSpan when it is not what it expects.
func stampInPlace(raw []byte, cluster string) ([]byte, error) {
	mStart, mEnd, ok, err := field(raw, 0, "metadata")
	if err != nil || !ok || raw[mStart] != '{' {
		return nil, errJSONSpan
	}
	meta := raw[mStart:mEnd]
	var ann, rv span
	hasAnn, hasRV := false, false
	// One pass over metadata's keys.
	if _, ok := jsonspan.Object(meta, 0, jsonspan.MaxDepth, func(key []byte, start, end int) bool {
		switch {
		case jsonspan.KeyEquals(key, "annotations"):
			ann, hasAnn = span{start, end}, true
		case jsonspan.KeyEquals(key, "resourceVersion"):
			rv, hasRV = span{start, end}, true
		}
		return false
	}); !ok {
		return nil, errJSONSpan
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
		if v, ok := jsonspan.Unquote(meta[rv.start:rv.end]); ok && v != "" {
			edits[n] = edit{rv.start, rv.end, append(append([]byte{'"'}, singleRV(clusterJSON, v)...), '"')}
			n++
		}
	}
	if hasAnn {
		inner := jsonspan.Space(meta, ann.start+1)
		with := append(entry, ',')
		if meta[inner] == '}' {
			with = entry
		}
		edits[n] = edit{ann.start + 1, ann.start + 1, with}
	} else {
		at := jsonspan.Space(meta, 1)
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
