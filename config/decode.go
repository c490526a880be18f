package config

import (
	"errors"
	"io"
	"math"
	"reflect"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// The YAML is decoded by walking yaml.Node trees against the structs' `yaml` tags, rather than by
// yaml.v3's Decode: that way every problem (unknown key, wrong type, bad value) is reported with its
// path and line, all of them at once, and nothing that fails to decode is silently defaulted.

// scalar is implemented by types written as one YAML scalar with their own syntax.
type scalar interface {
	parseScalar(s string) error
}

// defaulter is implemented by sections whose defaults apply when the section is present.
type defaulter interface {
	setDefaults()
}

// parseDocument returns the top-level node of data, nil when data holds no document.
func parseDocument(data []byte, ch *checker) *yaml.Node {
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if !errors.Is(err, io.EOF) {
			syntaxProblems(err, ch)
		}
		return nil
	}
	var next yaml.Node
	if err := dec.Decode(&next); err == nil {
		ch.at("", next.Line, "a second YAML document; the config is one document")
		return nil
	} else if !errors.Is(err, io.EOF) {
		syntaxProblems(err, ch)
		return nil
	}
	if doc.Kind == yaml.DocumentNode && len(doc.Content) > 0 {
		return doc.Content[0]
	}
	return nil
}

// syntaxProblems turns yaml.v3's "yaml: line 3: message" errors into problems on that line.
func syntaxProblems(err error, ch *checker) {
	for _, msg := range strings.Split(err.Error(), "\n") {
		msg = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(msg), "yaml:"))
		if msg == "" || msg == "unmarshal errors:" {
			continue
		}
		line := 0
		if rest, ok := strings.CutPrefix(msg, "line "); ok {
			if num, text, ok := strings.Cut(rest, ": "); ok {
				if n, err := strconv.Atoi(num); err == nil {
					line, msg = n, text
				}
			}
		}
		ch.at("", line, "%s", msg)
	}
}

// maxNodes bounds the nodes one config decodes, so aliases cannot expand it without end
// ("billion laughs"); a real config has a few hundred.
const maxNodes = 100_000

type decoder struct {
	ch       *checker
	nodes    int
	tooLarge bool
	inAlias  map[*yaml.Node]bool // alias targets being decoded, to refuse an alias to itself
}

func (d *decoder) decode(n *yaml.Node, v reflect.Value, path string) {
	if d.nodes++; d.nodes > maxNodes {
		if !d.tooLarge {
			d.tooLarge = true
			d.ch.at(path, n.Line, "the config expands to more than %d values (aliases?)", maxNodes)
		}
		return
	}
	if n.Kind == yaml.AliasNode {
		target := n.Alias
		if target == nil || d.inAlias[target] {
			d.ch.at(path, n.Line, "an alias that refers to itself")
			return
		}
		if d.inAlias == nil {
			d.inAlias = map[*yaml.Node]bool{}
		}
		d.inAlias[target] = true
		defer delete(d.inAlias, target)
		d.decode(target, v, path)
		return
	}
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		return // absent and null are the same: the default stays
	}
	if v.CanAddr() {
		if s, ok := v.Addr().Interface().(scalar); ok {
			if n.Kind != yaml.ScalarNode {
				d.ch.at(path, n.Line, "must be a single value, not a %s", kindName(n))
				return
			}
			if err := s.parseScalar(n.Value); err != nil {
				d.ch.at(path, n.Line, "%v", err)
			}
			return
		}
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.Type().Elem().Kind() == reflect.Struct && n.Kind != yaml.MappingNode {
			d.ch.at(path, n.Line, "must be a mapping, not a %s", kindName(n))
			return // a section that is not one stays absent, so it adds no problems of its own
		}
		if v.IsNil() {
			p := reflect.New(v.Type().Elem())
			if df, ok := p.Interface().(defaulter); ok {
				df.setDefaults()
			}
			v.Set(p)
		}
		d.decode(n, v.Elem(), path)
	case reflect.Struct:
		d.mapping(n, v, path)
	case reflect.Slice:
		d.sequence(n, v, path)
	case reflect.String:
		if n.Kind != yaml.ScalarNode {
			d.ch.at(path, n.Line, "must be a string, not a %s", kindName(n))
			return
		}
		v.SetString(n.Value)
	case reflect.Bool:
		var b bool
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" || n.Decode(&b) != nil {
			d.ch.at(path, n.Line, "must be true or false")
			return
		}
		v.SetBool(b)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		var i int64
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" || n.Decode(&i) != nil || v.OverflowInt(i) {
			d.ch.at(path, n.Line, "must be an integer")
			return
		}
		v.SetInt(i)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		var u uint64
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" || n.Decode(&u) != nil || v.OverflowUint(u) {
			d.ch.at(path, n.Line, "must be a non-negative integer")
			return
		}
		v.SetUint(u)
	case reflect.Float64:
		var f float64
		tag := n.ShortTag()
		if n.Kind != yaml.ScalarNode || (tag != "!!float" && tag != "!!int") || n.Decode(&f) != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			d.ch.at(path, n.Line, "must be a number")
			return
		}
		v.SetFloat(f)
	default:
		d.ch.at(path, n.Line, "cannot be read into %s", v.Type())
	}
}

func (d *decoder) mapping(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.MappingNode {
		d.ch.at(path, n.Line, "must be a mapping, not a %s", kindName(n))
		return
	}
	fields := yamlFields(v.Type())
	first := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, val := n.Content[i], n.Content[i+1]
		if key.Kind != yaml.ScalarNode {
			d.ch.at(path, key.Line, "keys must be strings")
			continue
		}
		name := key.Value
		fp := join(path, name)
		if line, dup := first[name]; dup {
			d.ch.at("", key.Line, "%s: duplicate key (first at line %d)", fp, line)
			continue
		}
		first[name] = key.Line
		if name == "<<" {
			d.ch.at(fp, key.Line, "merge keys are not supported")
			continue
		}
		idx, ok := fields[name]
		if !ok {
			d.ch.at(fp, key.Line, "unknown field%s", suggest(name, fields))
			continue
		}
		d.ch.lines[fp] = key.Line
		d.decode(val, v.Field(idx), fp)
	}
}

func (d *decoder) sequence(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.SequenceNode {
		d.ch.at(path, n.Line, "must be a list, not a %s", kindName(n))
		return
	}
	s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
	for i, e := range n.Content {
		ep := index(path, i)
		d.ch.lines[ep] = e.Line
		el := s.Index(i)
		if df, ok := el.Addr().Interface().(defaulter); ok {
			df.setDefaults()
		}
		d.decode(e, el, ep)
	}
	v.Set(s)
}

// yamlFields maps the YAML names of t's fields to their indexes. Fields tagged "-" or untagged are
// not read from YAML (they hold what is parsed or read from files).
func yamlFields(t reflect.Type) map[string]int {
	fields := map[string]int{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if !f.IsExported() || name == "" || name == "-" {
			continue
		}
		fields[name] = i
	}
	return fields
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "mapping"
	case yaml.SequenceNode:
		return "list"
	case yaml.ScalarNode:
		return "single value"
	}
	return "YAML node"
}

// suggest names the known field closest to a misspelt one, if one is close enough to be meant.
func suggest(name string, fields map[string]int) string {
	best, bestDist := "", 3
	for f := range fields {
		d := editDistance(strings.ToLower(name), f)
		if d > len(name)/2 {
			continue
		}
		if d < bestDist || (d == bestDist && f < best) {
			best, bestDist = f, d
		}
	}
	if best == "" {
		return ""
	}
	return " (did you mean " + best + "?)"
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
