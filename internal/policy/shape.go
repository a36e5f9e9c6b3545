package policy

import (
	"encoding/json"
	"slices"
)

// A shape is the quick form of a tool's parameter schema, for the schemas
// tools mostly declare: types, properties, required members, closed
// objects, array items and string enums. Its only answer that counts is
// "valid": valid returns true only where the JSON Schema validator would
// accept the value too, and false wherever it is not sure, which sends the
// value on to the validator (for its verdict and its wording). So a shape
// never changes a result, only what a valid call costs: the validator took
// about 33 µs of a tool-call stream's CPU at 100 streams a second (four
// calls, its code cold between streams), and BenchmarkArguments checks a
// call in 1.30 µs with 16 allocations through it, 0.50 µs with 4 (the
// decoding's) through a shape. FuzzShapeAgrees and TestShapeAgreesGenerated
// hold the two to this.
//
// A schema gets a shape only when every keyword in it, at every level, is
// one the shape checks or one that never fails a value (annotations:
// description, title, default, examples, $comment, format — an annotation
// under the validator's default draft, 2020-12 —, deprecated, readOnly,
// writeOnly). Anything else ($schema, $ref, anyOf, minimum, pattern…)
// leaves the schema to the validator alone.
type shape struct {
	types    typeSet // the types allowed; 0: any
	props    map[string]*shape
	required []string
	closed   bool                // additionalProperties: false
	items    *shape              // nil: any item
	enum     map[string]struct{} // the only values allowed (all strings); nil: no enum
}

// typeSet is a set of JSON Schema's type names, one bit each.
type typeSet uint8

const (
	typeObject typeSet = 1 << iota
	typeArray
	typeString
	typeNumber
	typeInteger
	typeBoolean
	typeNull
)

var typeNames = map[string]typeSet{
	"object": typeObject, "array": typeArray, "string": typeString, "number": typeNumber,
	"integer": typeInteger, "boolean": typeBoolean, "null": typeNull,
}

// annotations are the keywords that never fail a value.
var annotations = []string{"description", "title", "default", "examples", "$comment", "format", "deprecated", "readOnly", "writeOnly"}

// maxShapeDepth bounds a shape's nesting: a deeper schema is left to the
// validator (and the recursion here stays shallow whatever a client sends).
const maxShapeDepth = 16

// shapeOf returns doc's shape, or nil when doc uses anything a shape does
// not check. doc is the schema as the validator's reader decoded it.
func shapeOf(doc any) *shape { return shapeAt(doc, 0) }

func shapeAt(doc any, depth int) *shape {
	m, ok := doc.(map[string]any)
	if !ok || depth > maxShapeDepth {
		return nil // a boolean schema, or too deep
	}
	s := &shape{}
	for k, v := range m {
		switch k {
		case "type":
			if s.types = typesOf(v); s.types == 0 {
				return nil
			}
		case "properties":
			props, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			s.props = make(map[string]*shape, len(props))
			for name, sub := range props {
				if s.props[name] = shapeAt(sub, depth+1); s.props[name] == nil {
					return nil
				}
			}
		case "required":
			list, ok := v.([]any)
			if !ok {
				return nil
			}
			for _, r := range list {
				name, ok := r.(string)
				if !ok {
					return nil
				}
				s.required = append(s.required, name)
			}
		case "additionalProperties":
			b, ok := v.(bool)
			if !ok {
				return nil // a schema for the other members
			}
			s.closed = !b
		case "items":
			if s.items = shapeAt(v, depth+1); s.items == nil {
				return nil
			}
		case "enum":
			list, ok := v.([]any)
			if !ok {
				return nil
			}
			s.enum = make(map[string]struct{}, len(list)) // a set: a check stays linear in the value
			for _, e := range list {
				str, ok := e.(string)
				if !ok {
					return nil
				}
				s.enum[str] = struct{}{}
			}
		default:
			if !slices.Contains(annotations, k) {
				return nil
			}
		}
	}
	return s
}

// typesOf reads a "type" keyword: a name or a list of names; 0 when it is
// neither.
func typesOf(v any) typeSet {
	switch v := v.(type) {
	case string:
		return typeNames[v]
	case []any:
		var set typeSet
		for _, e := range v {
			name, ok := e.(string)
			if !ok || typeNames[name] == 0 {
				return 0
			}
			set |= typeNames[name]
		}
		return set
	}
	return 0
}

// valid reports whether v, as wire.Value decodes JSON, certainly satisfies
// the shape's schema. false means "not certainly".
func (s *shape) valid(v any) bool {
	if s.enum != nil {
		str, ok := v.(string)
		if !ok {
			return false
		}
		if _, ok := s.enum[str]; !ok {
			return false
		}
	}
	switch v := v.(type) {
	case map[string]any:
		return s.allows(typeObject) && s.validObject(v)
	case []any:
		if !s.allows(typeArray) {
			return false
		}
		if s.items != nil {
			for _, e := range v {
				if !s.items.valid(e) {
					return false
				}
			}
		}
		return true
	case string:
		return s.allows(typeString)
	case json.Number:
		if s.allows(typeNumber) {
			return true
		}
		return s.allows(typeInteger) && isInteger(v)
	case bool:
		return s.allows(typeBoolean)
	case nil:
		return s.allows(typeNull)
	}
	return false
}

func (s *shape) allows(t typeSet) bool { return s.types == 0 || s.types&t != 0 }

func (s *shape) validObject(obj map[string]any) bool {
	for _, name := range s.required {
		if _, ok := obj[name]; !ok {
			return false
		}
	}
	for name, v := range obj {
		sub, ok := s.props[name]
		switch {
		case ok:
			if !sub.valid(v) {
				return false
			}
		case s.closed:
			return false
		}
	}
	return true
}

// isInteger reports whether a number's text is an integer written as one
// (an optional minus and digits): "1.0" and "1e2" are integers to the
// validator too, but a shape leaves them to it.
func isInteger(n json.Number) bool {
	s := string(n)
	if len(s) > 0 && s[0] == '-' {
		s = s[1:]
	}
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
