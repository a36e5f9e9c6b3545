package gemini

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/toolgate/toolgate/internal/wire"
)

// Schema maps a tool's JSON Schema onto the subset of OpenAPI's schema
// object a function declaration's parameters take (param names it in an
// error). What maps:
//
//   - type, as Gemini's upper-case name; a list of types with "null" is
//     that type, nullable; several other types become anyOf;
//   - properties, required, items, anyOf (oneOf too: anyOf is what Gemini
//     has), enum of strings, const (a string: a one-value enum), format,
//     title, description, default, minimum, maximum, minItems, maxItems,
//     minLength, maxLength, pattern, minProperties, maxProperties,
//     examples (the first, as example);
//   - $ref to the schema's own $defs or definitions, inlined (a recursive
//     one cannot be);
//   - allOf of one schema, merged;
//   - exclusiveMinimum and exclusiveMaximum (numbers) as minimum and
//     maximum, the nearest bound Gemini reads, unless the schema has that
//     bound too;
//   - $schema, $id, $comment, deprecated, readOnly, writeOnly and
//     additionalProperties: false are left out (annotations, or a
//     restriction Gemini has no keyword for; the completion policy still
//     checks the arguments against the original schema).
//
// Anything else is refused with a 400 naming the keyword's path, before
// the request is sent: sending a schema Gemini would read differently is
// worse than saying so.
func Schema(raw json.RawMessage, param string) (json.RawMessage, error) {
	var root map[string]any
	if err := json.Unmarshal(raw, &root); err != nil || root == nil {
		return nil, &wire.ParamError{Param: param, Msg: "must be a JSON Schema object"}
	}
	m := mapper{root: root}
	out, err := m.schema(root, param, 0)
	if err != nil {
		return nil, err
	}
	return json.Marshal(out)
}

type mapper struct {
	root  map[string]any
	refs  []string // the $refs being inlined, to refuse a recursive one
	nodes int      // schemas made so far
}

// maxDepth bounds nesting, and maxNodes the schemas $ref inlining may
// make: definitions that use each other several times would otherwise
// expand without bound from a small request.
const (
	maxDepth = 64
	maxNodes = 10000
)

var (
	copied  = []string{"format", "title", "description", "default", "minimum", "maximum", "minItems", "maxItems", "minLength", "maxLength", "pattern", "minProperties", "maxProperties"}
	dropped = map[string]bool{"$schema": true, "$id": true, "$comment": true, "$defs": true, "definitions": true, "deprecated": true, "readOnly": true, "writeOnly": true}
)

func (m *mapper) schema(s map[string]any, path string, depth int) (map[string]any, error) {
	if depth > maxDepth {
		return nil, &wire.ParamError{Param: path, Msg: fmt.Sprintf("nests deeper than %d levels", maxDepth)}
	}
	if m.nodes++; m.nodes > maxNodes {
		return nil, &wire.ParamError{Param: path, Msg: fmt.Sprintf("expands to more than %d schemas once its $refs are inlined", maxNodes), Unsupported: true}
	}
	if ref, ok := s["$ref"]; ok {
		return m.ref(ref, path, depth)
	}
	out := map[string]any{}
	for _, k := range slices.Sorted(maps.Keys(s)) { // in one order: the same error for the same schema
		if err := m.keyword(out, k, s[k], path, depth); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// properties maps a schema's properties into out.
func (m *mapper) properties(out map[string]any, v any, at string, depth int) error {
	props, ok := v.(map[string]any)
	if !ok {
		return &wire.ParamError{Param: at, Msg: "must be an object"}
	}
	mapped := map[string]any{}
	for _, name := range slices.Sorted(maps.Keys(props)) {
		ps, ok := props[name].(map[string]any)
		if !ok {
			return &wire.ParamError{Param: at + "." + name, Msg: "must be a schema object"}
		}
		ms, err := m.schema(ps, at+"."+name, depth+1)
		if err != nil {
			return err
		}
		mapped[name] = ms
	}
	out["properties"] = mapped
	return nil
}

// exclusiveBound maps exclusiveMinimum or exclusiveMaximum (k), a bound
// Gemini has only inclusively, onto minimum or maximum — the nearest it
// reads; the completion policy checks the original — unless the schema
// has that one too. Draft 4's boolean form is left out.
func exclusiveBound(out map[string]any, k string, v any) {
	if n, ok := v.(float64); ok {
		bound := map[string]string{"exclusiveMinimum": "minimum", "exclusiveMaximum": "maximum"}[k]
		if _, has := out[bound]; !has {
			out[bound] = n
		}
	}
}

// keyword maps one keyword of a schema into out.
func (m *mapper) keyword(out map[string]any, k string, v any, path string, depth int) error {
	at := path + "." + k
	switch k {
	case "type":
		return typeOf(out, v, at)
	case "properties":
		return m.properties(out, v, at, depth)
	case "items":
		is, ok := v.(map[string]any)
		if !ok {
			return &wire.ParamError{Param: at, Msg: "must be one schema object (Gemini has no tuple items)", Unsupported: true}
		}
		ms, err := m.schema(is, at, depth+1)
		out["items"] = ms
		return err
	case "anyOf", "oneOf":
		return m.anyOf(out, v, at, depth)
	case "allOf":
		list, ok := v.([]any)
		if !ok || len(list) != 1 {
			return &wire.ParamError{Param: at, Msg: "allOf of more than one schema has no counterpart for a gemini upstream", Unsupported: true}
		}
		one, ok := list[0].(map[string]any)
		if !ok {
			return &wire.ParamError{Param: at, Msg: "must hold a schema object"}
		}
		ms, err := m.schema(one, at+"[0]", depth+1)
		for mk, mv := range ms {
			out[mk] = mv
		}
		return err
	case "required", "enum":
		return stringList(out, k, v, at)
	case "const":
		s, ok := v.(string)
		if !ok {
			return &wire.ParamError{Param: at, Msg: "a const other than a string has no counterpart for a gemini upstream", Unsupported: true}
		}
		out["enum"] = []string{s}
		if _, typed := out["type"]; !typed {
			out["type"] = "STRING"
		}
	case "examples":
		if list, ok := v.([]any); ok && len(list) > 0 {
			out["example"] = list[0]
		}
	case "exclusiveMinimum", "exclusiveMaximum":
		exclusiveBound(out, k, v)
	case "additionalProperties":
		if b, ok := v.(bool); !ok || b {
			return &wire.ParamError{Param: at, Msg: "only additionalProperties: false can be sent to a gemini upstream (it is left out)", Unsupported: true}
		}
	default:
		if dropped[k] {
			return nil
		}
		for _, c := range copied {
			if k == c {
				out[k] = v
				return nil
			}
		}
		return &wire.ParamError{Param: at, Msg: fmt.Sprintf("the JSON Schema keyword %q has no counterpart in a gemini function declaration", wire.Clip(k)), Unsupported: true}
	}
	return nil
}

// typeOf maps type: one name, or a list (with "null": nullable).
func typeOf(out map[string]any, v any, at string) error {
	var names []string
	switch t := v.(type) {
	case string:
		names = []string{t}
	case []any:
		for _, e := range t {
			s, ok := e.(string)
			if !ok {
				return &wire.ParamError{Param: at, Msg: "must name types"}
			}
			names = append(names, s)
		}
	default:
		return &wire.ParamError{Param: at, Msg: "must be a type name or a list of them"}
	}
	var kept []string
	for _, n := range names {
		if n == "null" {
			out["nullable"] = true
			continue
		}
		if !validType[n] {
			return &wire.ParamError{Param: at, Msg: fmt.Sprintf("%q is no JSON Schema type", wire.Clip(n))}
		}
		kept = append(kept, strings.ToUpper(n))
	}
	switch len(kept) {
	case 0:
	case 1:
		out["type"] = kept[0]
	default:
		var alts []any
		for _, k := range kept {
			alts = append(alts, map[string]any{"type": k})
		}
		out["anyOf"] = alts
	}
	return nil
}

var validType = map[string]bool{"string": true, "number": true, "integer": true, "boolean": true, "array": true, "object": true}

func (m *mapper) anyOf(out map[string]any, v any, at string, depth int) error {
	list, ok := v.([]any)
	if !ok || len(list) == 0 {
		return &wire.ParamError{Param: at, Msg: "must be a non-empty list of schemas"}
	}
	var mapped []any
	for i, e := range list {
		es, ok := e.(map[string]any)
		if !ok {
			return &wire.ParamError{Param: fmt.Sprintf("%s[%d]", at, i), Msg: "must be a schema object"}
		}
		ms, err := m.schema(es, fmt.Sprintf("%s[%d]", at, i), depth+1)
		if err != nil {
			return err
		}
		mapped = append(mapped, ms)
	}
	out["anyOf"] = mapped
	return nil
}

func stringList(out map[string]any, k string, v any, at string) error {
	list, ok := v.([]any)
	if !ok {
		return &wire.ParamError{Param: at, Msg: "must be a list"}
	}
	var names []string
	for _, e := range list {
		s, ok := e.(string)
		if !ok {
			return &wire.ParamError{Param: at, Msg: "must hold strings only for a gemini upstream", Unsupported: true}
		}
		names = append(names, s)
	}
	out[k] = names
	return nil
}

// ref inlines a reference to the schema's own definitions.
func (m *mapper) ref(v any, path string, depth int) (map[string]any, error) {
	ref, _ := v.(string)
	var defs map[string]any
	var name string
	for _, prefix := range []string{"#/$defs/", "#/definitions/"} {
		if rest, ok := strings.CutPrefix(ref, prefix); ok {
			defs, _ = m.root[strings.Trim(prefix[2:], "/")].(map[string]any)
			name = rest
		}
	}
	target, ok := defs[name].(map[string]any)
	if !ok {
		return nil, &wire.ParamError{Param: path + ".$ref", Msg: fmt.Sprintf("%q is not a definition of this schema ($defs or definitions)", wire.Clip(ref)), Unsupported: true}
	}
	for _, r := range m.refs {
		if r == ref {
			return nil, &wire.ParamError{Param: path + ".$ref", Msg: fmt.Sprintf("%q refers to itself; a gemini function declaration cannot hold a recursive schema", wire.Clip(ref)), Unsupported: true}
		}
	}
	m.refs = append(m.refs, ref)
	defer func() { m.refs = m.refs[:len(m.refs)-1] }()
	return m.schema(target, path, depth+1)
}
