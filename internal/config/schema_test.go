package config

import (
	"bytes"
	"encoding/json"
	"flag"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/toolgate/toolgate/internal/wire"
	"go.yaml.in/yaml/v3"
)

var update = flag.Bool("update", false, "rewrite configs/toolgate.schema.json from the config types (make schema)")

// schemaPath is the JSON Schema editors check gateway.yaml files against
// (the yaml-language-server line at the top of a config file).
const schemaPath = "../../configs/toolgate.schema.json"

// The checked-in JSON Schema is the one the config types give: every
// yaml key, each setting's names as its owner lists them, each field's
// doc comment as its description. go test -run TestSchema -update
// rewrites it (make schema).
func TestSchema(t *testing.T) {
	got := generateSchema(t)
	if *update {
		if err := os.WriteFile(schemaPath, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(schemaPath)
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("configs/toolgate.schema.json is not the schema of the config types (%v): run make schema", err)
	}
	// The example configs are valid against it, and a config with a key
	// the gateway does not know, or a setting it does not take, is not.
	var doc any
	if err := json.Unmarshal(got, &doc); err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("toolgate.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("toolgate.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	valid := func(y []byte) error {
		var v any
		if err := yaml.Unmarshal(y, &v); err != nil {
			return err
		}
		b, _ := json.Marshal(v) // YAML maps have string keys here
		inst, _ := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		return sch.Validate(inst)
	}
	for _, f := range []string{"../../configs/default.yaml", "../../configs/gateway.yaml"} {
		b, _ := os.ReadFile(f)
		if err := valid(b); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	for _, bad := range []string{"upstreams: [{name: a, url: x, protcol: openai}]", "routes: [{model: m, repair: maybe}]", "log: {level: loud}", "upstreams: [{name: a, quirks: [guess]}]"} {
		if valid([]byte(bad)) == nil {
			t.Errorf("%s: valid against the schema", bad)
		}
	}
}

// generateSchema builds the config's JSON Schema from its Go types and
// their doc comments (read from this package's sources).
func generateSchema(t *testing.T) []byte {
	docs := fieldDocs(t)
	g := &schemaGen{docs: docs, defs: map[string]any{}}
	root := g.typeSchema(reflect.TypeFor[Config]())
	root["$schema"] = "https://json-schema.org/draft/2020-12/schema"
	root["title"] = "toolgate configuration"
	root["description"] = "toolgate's YAML config file (docs/configuration.md). ${NAME} in a value is read from the environment."
	root["$defs"] = g.defs
	b, err := json.MarshalIndent(root, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

// fieldDocs maps "Type.Field" to the field's doc comment, one line.
func fieldDocs(t *testing.T) map[string]string {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "types.go", nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	docs := map[string]string{}
	ast.Inspect(f, func(n ast.Node) bool {
		ts, ok := n.(*ast.TypeSpec)
		if !ok {
			return true
		}
		st, ok := ts.Type.(*ast.StructType)
		if !ok {
			return true
		}
		for _, fld := range st.Fields.List {
			if fld.Doc == nil {
				continue
			}
			text := strings.Join(strings.Fields(fld.Doc.Text()), " ")
			for _, name := range fld.Names {
				docs[ts.Name.Name+"."+name.Name] = text
			}
		}
		return false
	})
	return docs
}

type schemaGen struct {
	docs map[string]string
	defs map[string]any
}

var durationType = reflect.TypeFor[time.Duration]()

// typeSchema is the schema of a value of type t.
func (g *schemaGen) typeSchema(t reflect.Type) map[string]any {
	if t == durationType {
		return map[string]any{"type": "string", "pattern": `^-?([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`, "description": "a duration such as 250ms, 30s or 1h"}
	}
	if names, ok := enumNames(t); ok {
		return map[string]any{"type": "string", "enum": names}
	}
	switch t {
	case reflect.TypeFor[Limit]():
		return map[string]any{"oneOf": []any{map[string]any{"type": "integer", "minimum": 0}, map[string]any{"const": "unlimited"}}}
	case reflect.TypeFor[Quirks]():
		names := append([]string{"all", "strict"}, quirkNamesForSchema()...)
		return map[string]any{"oneOf": []any{map[string]any{"enum": []string{"all", "strict"}}, map[string]any{"type": "array", "items": map[string]any{"enum": names}}}}
	case reflect.TypeFor[Passthrough]():
		return map[string]any{"oneOf": []any{map[string]any{"type": "boolean"}, map[string]any{"type": "array", "items": g.ref(reflect.TypeFor[PathRule]())}}}
	case reflect.TypeFor[PathRule]():
		obj := g.structSchema(t)
		obj["required"] = []string{"path"}
		return map[string]any{"oneOf": []any{map[string]any{"type": "string", "pattern": "^/v1/"}, obj}}
	}
	switch t.Kind() {
	case reflect.Pointer:
		return g.typeSchema(t.Elem())
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int64:
		return map[string]any{"type": "integer"}
	case reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.Slice:
		return map[string]any{"type": "array", "items": g.typeSchema(t.Elem())}
	case reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": g.typeSchema(t.Elem())}
	case reflect.Interface:
		return map[string]any{}
	case reflect.Struct:
		if t == reflect.TypeFor[Config]() {
			return g.structSchema(t)
		}
		return g.ref(t)
	}
	panic("no schema for " + t.String())
}

// ref puts a named struct's schema in $defs and refers to it.
func (g *schemaGen) ref(t reflect.Type) map[string]any {
	if _, done := g.defs[t.Name()]; !done {
		g.defs[t.Name()] = true // a placeholder while its fields are generated
		if t == reflect.TypeFor[PathRule]() {
			g.defs[t.Name()] = g.typeSchema(t)
		} else {
			g.defs[t.Name()] = g.structSchema(t)
		}
	}
	return map[string]any{"$ref": "#/$defs/" + t.Name()}
}

// structSchema is the object schema of a struct: its yaml keys, each with
// its field's doc comment.
func (g *schemaGen) structSchema(t reflect.Type) map[string]any {
	props := map[string]any{}
	for i := range t.NumField() {
		f := t.Field(i)
		key, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if !f.IsExported() || key == "" || key == "-" {
			continue
		}
		s := g.typeSchema(f.Type)
		if doc := g.docs[t.Name()+"."+f.Name]; doc != "" {
			if _, isRef := s["$ref"]; isRef {
				s = map[string]any{"allOf": []any{s}, "description": doc}
			} else if _, has := s["description"]; !has {
				s["description"] = doc
			}
		}
		props[key] = s
	}
	return map[string]any{"type": "object", "properties": props, "additionalProperties": false}
}

// enumNames are the names an Enum field takes ("" left out: it is the
// same as leaving the key out).
func enumNames(t reflect.Type) ([]string, bool) {
	m, ok := reflect.PointerTo(t).MethodByName("Names")
	if !ok || t.Kind() != reflect.Struct || !strings.HasPrefix(t.Name(), "Enum[") {
		return nil, false
	}
	out := m.Func.Call([]reflect.Value{reflect.New(t)})[0].Interface().([]string)
	names := []string{}
	for _, n := range out {
		if n != "" {
			names = append(names, n)
		}
	}
	return names, true
}

func quirkNamesForSchema() []string { return wire.QuirkNames() }
