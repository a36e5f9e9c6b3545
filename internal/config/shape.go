package config

import (
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// shape checks a config file's tree against the Config type before it is
// decoded, so that one run reports every problem in the file's own words:
// each unknown key (with the known one it most resembles), each value of
// the wrong kind, with its field path and line. An unknown key, and a
// value its field cannot take, is taken out of the tree (a list's item
// emptied), so that the rest decodes and its own problems are found too;
// usable is false when n itself cannot be taken (its caller empties it).
func shape(n *yaml.Node, t reflect.Type, path string, p *problems) (usable bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n.Kind == yaml.AliasNode {
		return true
	}
	if n.Tag == "!!null" {
		return true
	}
	if t.Kind() == reflect.Struct && t != reflect.TypeFor[time.Time]() && n.Kind == yaml.MappingNode {
		return shapeStruct(n, t, path, p)
	}
	if reflect.PointerTo(t).Implements(reflect.TypeFor[yaml.Unmarshaler]()) || isScalar(t) {
		if err := n.Decode(reflect.New(t).Interface()); err != nil {
			p.add(orFile(path), "%s (line %d)", yamlWords(err, n, t), n.Line)
			return false
		}
		return true
	}
	switch t.Kind() {
	case reflect.Struct:
		p.add(orFile(path), "must be a mapping of keys to values, not %s (line %d)", kindWords(n), n.Line)
		return false
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			p.add(orFile(path), "must be a list, not %s (line %d)", kindWords(n), n.Line)
			return false
		}
		for i, c := range n.Content {
			if !shape(c, t.Elem(), fmt.Sprintf("%s[%d]", path, i), p) {
				nullNode(c)
			}
		}
		return true
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			p.add(orFile(path), "must be a mapping, not %s (line %d)", kindWords(n), n.Line)
			return false
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			if !shape(n.Content[i+1], t.Elem(), fmt.Sprintf("%s[%q]", path, n.Content[i].Value), p) {
				nullNode(n.Content[i+1])
			}
		}
		return true
	}
	return true
}

// shapeStruct checks a mapping against a struct: every key one of its
// fields, every value of its field's kind.
func shapeStruct(n *yaml.Node, t reflect.Type, path string, p *problems) bool {
	fields := yamlFields(t)
	kept := n.Content[:0]
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		at := k.Value
		if at == "" || strings.ContainsAny(at, ".[]: \n") {
			at = strconv.Quote(at)
		}
		if path != "" {
			at = path + "." + at
		}
		f, known := fields[k.Value]
		if !known {
			msg := "unknown key"
			if near := nearest(k.Value, fields); near != "" {
				msg += "; did you mean " + near + "?"
			}
			p.add(at, "%s (line %d)", msg, k.Line)
			continue
		}
		if shape(v, f, at, p) {
			kept = append(kept, k, v)
		}
	}
	n.Content = kept
	return true
}

// yamlFields maps a struct's YAML keys to their types (fields tagged "-"
// aside).
func yamlFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		out[name] = f.Type
	}
	return out
}

func isScalar(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.String, reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return true
	}
	return false
}

// nullNode empties a node whose value was refused, so the rest decodes.
func nullNode(n *yaml.Node) {
	*n = yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null", Line: n.Line, Column: n.Column}
}

// kindWords names what a node is, in YAML's words.
func kindWords(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	return fmt.Sprintf("%q", n.Value)
}

// yamlLine is the "line N: " the YAML decoder puts before its message.
var yamlLine = regexp.MustCompile(`^(yaml: unmarshal errors:\s*)?(line \d+: )?`)

// yamlWords says why a value does not decode as t, in the config's words
// rather than Go's.
func yamlWords(err error, n *yaml.Node, t reflect.Type) string {
	if !strings.Contains(err.Error(), "cannot unmarshal") {
		return yamlLine.ReplaceAllString(err.Error(), "")
	}
	want := "a string"
	switch {
	case t == reflect.TypeFor[time.Duration]():
		want = "a duration such as 30s, 1m or 1h30m"
	case t.Kind() == reflect.Bool:
		want = "true or false"
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Uint64:
		want = "a whole number"
	case t.Kind() == reflect.Float32 || t.Kind() == reflect.Float64:
		want = "a number"
	case t.Kind() == reflect.Slice:
		want = "a list"
	case t.Kind() == reflect.Struct || t.Kind() == reflect.Map:
		want = "a mapping"
	}
	return fmt.Sprintf("must be %s, not %s", want, kindWords(n))
}

// nearest is the known key closest to an unknown one (at most two edits
// away, or differing only in case, dashes for underscores), or "".
func nearest(key string, fields map[string]reflect.Type) string {
	best, bestD := "", 3
	norm := func(s string) string { return strings.ReplaceAll(strings.ToLower(s), "-", "_") }
	for name := range fields {
		if norm(name) == norm(key) {
			return name
		}
		if d := edits(key, name); d < bestD || d == bestD && name < best {
			best, bestD = name, d
		}
	}
	return best
}

// edits is the Levenshtein distance between a and b.
func edits(a, b string) int {
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

// orFile names the file itself where a problem is the whole file's.
func orFile(path string) string {
	if path == "" {
		return "the file"
	}
	return path
}
