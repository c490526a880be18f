package aggregate

import (
	"encoding/json"
	"strings"

	"gitlab.com/edge/edge/internal/jsonspan"
)

// An object is rewritten on its way out (cluster annotation, global resourceVersion) and on its
// way back to its member (annotation removed, the member's resourceVersion). Only metadata is
// decoded; the rest of the object passes as it came.

type rawObject map[string]json.RawMessage

// stamp marks an object with its cluster and turns its resourceVersion into a global one naming
// that cluster. A Table's rows carry their objects under "object": those are stamped too.
func stamp(raw json.RawMessage, cluster string) json.RawMessage {
	var obj rawObject
	if json.Unmarshal(raw, &obj) != nil {
		return raw
	}
	if meta, ok := obj["metadata"]; ok {
		obj["metadata"] = stampMeta(meta, cluster)
	}
	out, err := json.Marshal(obj)
	if err != nil {
		return raw
	}
	return out
}

func stampMeta(raw json.RawMessage, cluster string) json.RawMessage {
	var meta rawObject
	if json.Unmarshal(raw, &meta) != nil {
		return raw
	}
	var rv string
	if v, ok := meta["resourceVersion"]; ok && json.Unmarshal(v, &rv) == nil && rv != "" {
		meta["resourceVersion"], _ = json.Marshal(globalRV{cluster: rv}.encode())
	}
	annotations := map[string]string{}
	if a, ok := meta["annotations"]; ok {
		json.Unmarshal(a, &annotations)
	}
	annotations[ClusterAnnotation] = cluster
	meta["annotations"], _ = json.Marshal(annotations)
	out, err := json.Marshal(meta)
	if err != nil {
		return raw
	}
	return out
}

// unstamp readies a body for its member: the cluster annotation goes, and a global
// resourceVersion naming that member becomes the member's own. A global version naming another
// member is a conflict (the object is not where the client thinks); a member's own version passes.
func unstamp(body []byte, cluster string) ([]byte, bool) {
	var obj rawObject
	if json.Unmarshal(body, &obj) != nil {
		return body, true
	}
	meta, ok := obj["metadata"]
	if !ok {
		return body, true
	}
	var m rawObject
	if json.Unmarshal(meta, &m) != nil {
		return body, true
	}
	if v, ok := m["resourceVersion"]; ok {
		var rv string
		if json.Unmarshal(v, &rv) == nil && rv != "" {
			if g, special, err := decodeRV(rv); err == nil && !special {
				own, ok := g[cluster]
				if !ok || len(g) != 1 {
					return nil, false
				}
				m["resourceVersion"], _ = json.Marshal(own)
			}
		}
	}
	if a, ok := m["annotations"]; ok {
		annotations := map[string]string{}
		if json.Unmarshal(a, &annotations) == nil {
			delete(annotations, ClusterAnnotation)
			if len(annotations) == 0 {
				delete(m, "annotations")
			} else {
				m["annotations"], _ = json.Marshal(annotations)
			}
		}
	}
	obj["metadata"], _ = json.Marshal(m)
	out, err := json.Marshal(obj)
	if err != nil {
		return body, true
	}
	return out, true
}

// isTable tells whether the client asked for a Table (what kubectl get sends).
func isTable(accept string) bool {
	return strings.Contains(accept, "as=Table")
}

// listBody is what a member's list (or Table) answer holds that edge merges.
type listBody struct {
	Kind       string            `json:"kind"`
	APIVersion string            `json:"apiVersion"`
	Metadata   listMeta          `json:"metadata"`
	Items      []json.RawMessage `json:"-"`
	Columns    json.RawMessage   `json:"columnDefinitions,omitempty"`
	Rows       []json.RawMessage `json:"-"`
}

// parseList reads a member's list or Table: the small fields decoded, the items (rows) only cut
// out of the text, so thousands of objects are not decoded to be stamped.
func parseList(raw []byte) (listBody, error) {
	var l listBody
	var head struct {
		Kind       string          `json:"kind"`
		APIVersion string          `json:"apiVersion"`
		Metadata   listMeta        `json:"metadata"`
		Columns    json.RawMessage `json:"columnDefinitions"`
	}
	fields, err := topFields(raw)
	if err != nil {
		return l, err
	}
	for _, k := range []string{"kind", "apiVersion", "metadata", "columnDefinitions"} {
		sp, ok := fields[k]
		if !ok {
			continue
		}
		s, e := sp.start, sp.end
		var target any
		switch k {
		case "kind":
			target = &head.Kind
		case "apiVersion":
			target = &head.APIVersion
		case "metadata":
			target = &head.Metadata
		default:
			head.Columns = json.RawMessage(raw[s:e])
			continue
		}
		if err := json.Unmarshal(raw[s:e], target); err != nil {
			return l, err
		}
	}
	l.Kind, l.APIVersion, l.Metadata, l.Columns = head.Kind, head.APIVersion, head.Metadata, head.Columns
	if sp, ok := fields["items"]; ok {
		if l.Items, err = arrayElements(raw, sp.start, sp.end); err != nil {
			return l, err
		}
	}
	if sp, ok := fields["rows"]; ok {
		l.Rows, err = arrayElements(raw, sp.start, sp.end)
	}
	return l, err
}

// arrayElements cuts the elements of the array at raw[s:e] out of it.
func arrayElements(raw []byte, s, e int) ([]json.RawMessage, error) {
	if raw[s] == 'n' {
		return nil, nil
	}
	if raw[s] != '[' {
		return nil, errJSONSpan
	}
	var out []json.RawMessage
	i := jsonspan.Space(raw, s+1)
	for i < e-1 {
		end, ok := jsonspan.End(raw, i, jsonspan.MaxDepth)
		if !ok {
			return nil, errJSONSpan
		}
		out = append(out, raw[i:end])
		i = jsonspan.Space(raw, end)
		if i < len(raw) && raw[i] == ',' {
			i = jsonspan.Space(raw, i+1)
		}
	}
	return out, nil
}

type listMeta struct {
	ResourceVersion    string `json:"resourceVersion,omitempty"`
	Continue           string `json:"continue,omitempty"`
	RemainingItemCount *int64 `json:"remainingItemCount,omitempty"`
}

type tableRow map[string]json.RawMessage

// stampRow stamps a Table row's object.
func stampRow(row json.RawMessage, cluster string) json.RawMessage {
	s, e, ok, err := field(row, 0, "object")
	if err != nil || !ok || row[s] != '{' {
		return row
	}
	obj := stampFast(row[s:e], cluster)
	out := make([]byte, 0, len(row)+len(obj)-(e-s))
	out = append(out, row[:s]...)
	out = append(out, obj...)
	return append(out, row[e:]...)
}
