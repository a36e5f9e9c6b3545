package policy

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/wire"
)

// shapeSchemas are tool parameter schemas as clients declare them, from
// the ones a shape checks whole to the ones it leaves to the validator.
var shapeSchemas = []string{
	`{"type":"object","properties":{"city":{"type":"string"},"unit":{"type":"string","enum":["c","f"]}},"required":["city"]}`,
	`{"type":"object","properties":{"city":{"type":"string","description":"A city."},"days":{"type":"integer"}},"required":["city","days"],"additionalProperties":false}`,
	`{"type":"object","properties":{"query":{"type":["string","null"]},"tags":{"type":"array","items":{"type":"string"}},"limit":{"type":"number","default":10}}}`,
	`{"type":"object","properties":{"filter":{"type":"object","properties":{"field":{"type":"string"},"op":{"enum":["eq","ne"]},"value":{}},"required":["field"],"additionalProperties":false}},"additionalProperties":false,"title":"search"}`,
	`{"type":"object","properties":{"when":{"type":"string","format":"date-time"},"ok":{"type":"boolean"},"nothing":{"type":"null"}}}`,
	`{"type":"object","properties":{"rows":{"type":"array","items":{"type":"array","items":{"type":"integer"}}}}}`,
	`{"properties":{"a":{"type":"string"}},"required":["a"]}`,
	`{}`,
	// Left to the validator: a keyword a shape does not check.
	`{"type":"object","properties":{"days":{"type":"integer","maximum":10}}}`,
	`{"type":"object","properties":{"x":{"anyOf":[{"type":"string"},{"type":"integer"}]}}}`,
	`{"type":"object","additionalProperties":{"type":"string"}}`,
	`{"type":"object","properties":{"x":{"enum":["a",1]}}}`,
	`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"d":{"format":"date"}}}`,
	`{"type":"object","properties":{"n":{"type":"string","minLength":2}}}`,
	`{"type":"object","properties":{"c":{"const":"x"}}}`,
	`{"type":"object","patternProperties":{"^x":{"type":"string"}}}`,
	`{"type":"object","properties":{"t":{"type":"integer"}},"unevaluatedProperties":false}`,
}

// shapeValues are arguments a model sends for them, right and wrong.
var shapeValues = []string{
	`{"city":"Paris"}`, `{"city":"Paris","unit":"c"}`, `{"city":"Paris","unit":"k"}`, `{"city":7}`, `{}`,
	`{"city":"Paris","days":3}`, `{"city":"Paris","days":3.0}`, `{"city":"Paris","days":1e2}`, `{"city":"Paris","days":-0}`,
	`{"city":"Paris","days":3,"zip":1}`, `{"query":null,"tags":["a","b"],"limit":2.5}`, `{"query":1}`, `{"tags":["a",1]}`,
	`{"filter":{"field":"f","op":"eq","value":[1,{"a":null}]}}`, `{"filter":{"field":"f","op":"lt"}}`, `{"filter":{"op":"eq"}}`,
	`{"filter":{"field":"f","extra":true}}`, `{"when":"yesterday","ok":false,"nothing":null}`, `{"ok":"yes"}`, `{"nothing":0}`,
	`{"rows":[[1,2],[3]]}`, `{"rows":[[1.5]]}`, `{"rows":[1]}`, `{"a":"x"}`, `{"a":null}`, `{"days":11}`, `{"days":9}`,
	`{"x":"s"}`, `{"x":1}`, `{"x":true}`, `{"d":"2024-13-45"}`, `{"n":"é"}`, `{"n":"ab"}`, `{"c":"x"}`, `{"c":"y"}`,
	`{"xa":1}`, `{"xa":"s"}`, `{"t":1,"u":2}`, `[]`, `"s"`, `1`, `null`,
}

// A shape answers "valid" only where the validator does: the examples
// above in every pairing, and whatever the fuzzer makes of them.
func FuzzShapeAgrees(f *testing.F) {
	for i, s := range shapeSchemas {
		f.Add(s, shapeValues[i%len(shapeValues)])
	}
	f.Fuzz(func(t *testing.T, schema, value string) {
		checkShapeAgrees(t, schema, value)
	})
}

func TestShapeAgrees(t *testing.T) {
	for _, s := range shapeSchemas {
		for _, v := range shapeValues {
			checkShapeAgrees(t, s, v)
		}
	}
}

// checkShapeAgrees fails when the shape of schema calls value valid and the
// validator does not; it reports whether the shape called it valid.
func checkShapeAgrees(t *testing.T, schema, value string) bool {
	t.Helper()
	c := compile([]byte(schema))
	v, ok := wire.ValueString(value)
	if c.sch == nil || c.fast == nil || !ok {
		return false
	}
	if !c.fast.valid(v) {
		return false
	}
	if err := c.sch.Validate(v); err != nil {
		t.Fatalf("schema %s, value %s: the shape says valid, the validator: %v", schema, value, err)
	}
	return true
}

// Which schemas get a shape, and that a shape answers for the values that
// are valid (so a valid call skips the validator): the examples above.
func TestShapeCoverage(t *testing.T) {
	const withShape = 8 // the first eight schemas
	for i, s := range shapeSchemas {
		c := compile([]byte(s))
		if c.sch == nil {
			t.Fatalf("%s does not compile", s)
		}
		if got := c.fast != nil; got != (i < withShape) {
			t.Errorf("%s: has a shape %v, want %v", s, got, i < withShape)
			continue
		}
		for _, val := range shapeValues {
			v, _ := wire.ValueString(val)
			integerAsOther := strings.Contains(val, "3.0") || strings.Contains(val, "1e2")
			if c.fast != nil && c.sch.Validate(v) == nil && !c.fast.valid(v) && !integerAsOther {
				t.Errorf("schema %s, value %s: valid, but the shape leaves it to the validator", s, val)
			}
		}
	}
}

// Random schemas of the shapes' keywords (and now and then one they do not
// check) against random values: the two agree wherever the shape answers,
// and the shape answers for most valid values.
func TestShapeAgreesGenerated(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	answered, valid := 0, 0
	for range 3000 {
		schema := genSchema(r, 0)
		c := compile([]byte(schema))
		if c.sch == nil {
			t.Fatalf("generated schema %s does not compile", schema)
		}
		for range 5 {
			value := genValue(r, 0)
			v, ok := wire.ValueString(value)
			if !ok {
				t.Fatalf("generated value %s is not JSON", value)
			}
			if c.sch.Validate(v) == nil {
				valid++
			}
			if checkShapeAgrees(t, schema, value) {
				answered++
			}
		}
	}
	t.Logf("the shapes answered for %d of %d valid values", answered, valid)
	if valid == 0 || answered < valid/2 {
		t.Errorf("the shapes answered for %d of %d valid values", answered, valid)
	}
}

func genSchema(r *rand.Rand, depth int) string {
	var parts []string
	types := []string{"object", "array", "string", "number", "integer", "boolean", "null"}
	if r.IntN(4) > 0 {
		if r.IntN(5) == 0 {
			i := r.IntN(7)
			parts = append(parts, fmt.Sprintf(`"type":[%q,%q]`, types[i], types[(i+1+r.IntN(6))%7]))
		} else {
			parts = append(parts, fmt.Sprintf(`"type":%q`, types[r.IntN(7)]))
		}
	}
	if depth < 3 && r.IntN(2) == 0 {
		var props []string
		for _, name := range []string{"a", "b", "c"}[:1+r.IntN(3)] {
			props = append(props, fmt.Sprintf("%q:%s", name, genSchema(r, depth+1)))
		}
		parts = append(parts, `"properties":{`+strings.Join(props, ",")+`}`)
	}
	if r.IntN(3) == 0 {
		parts = append(parts, []string{`"required":["a"]`, `"required":["a","b"]`, `"required":[]`}[r.IntN(3)])
	}
	if r.IntN(3) == 0 {
		parts = append(parts, []string{`"additionalProperties":false`, `"additionalProperties":true`}[r.IntN(2)])
	}
	if depth < 3 && r.IntN(4) == 0 {
		parts = append(parts, `"items":`+genSchema(r, depth+1))
	}
	if r.IntN(5) == 0 {
		parts = append(parts, []string{`"enum":["x","y"]`, `"enum":["x"]`, `"enum":["x",1]`, `"enum":[null]`}[r.IntN(4)])
	}
	if r.IntN(8) == 0 { // one a shape does not check
		parts = append(parts, []string{`"minimum":2`, `"maxLength":1`, `"minItems":1`, `"const":"x"`}[r.IntN(4)])
	}
	if r.IntN(6) == 0 {
		parts = append(parts, `"description":"d"`)
	}
	return "{" + strings.Join(parts, ",") + "}"
}

func genValue(r *rand.Rand, depth int) string {
	n := 7
	if depth >= 3 {
		n = 5
	}
	switch r.IntN(n) {
	case 0:
		return []string{`"x"`, `"y"`, `"z"`, `""`}[r.IntN(4)]
	case 1:
		return []string{`1`, `-2`, `2.5`, `3.0`, `1e2`, `0`}[r.IntN(6)]
	case 2:
		return []string{`true`, `false`}[r.IntN(2)]
	case 3:
		return `null`
	case 4:
		return `"x"`
	case 5:
		var items []string
		for range r.IntN(3) {
			items = append(items, genValue(r, depth+1))
		}
		return "[" + strings.Join(items, ",") + "]"
	}
	var members []string
	for _, name := range []string{"a", "b", "c", "d"} {
		if r.IntN(2) == 0 {
			members = append(members, fmt.Sprintf("%q:%s", name, genValue(r, depth+1)))
		}
	}
	return "{" + strings.Join(members, ",") + "}"
}

// BenchmarkArguments: a valid call of the simulator's weather tool checked
// against its schema, with the shape and with the validator alone.
func BenchmarkArguments(b *testing.B) {
	c := compile([]byte(`{"type":"object","properties":{"city":{"type":"string"},"unit":{"type":"string","enum":["c","f"]}},"required":["city"]}`))
	const args = `{"city":"Paris","unit":"c"}`
	b.Run("shape", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := checkArguments(args, c); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("validator", func(b *testing.B) {
		alone := &compiled{sch: c.sch}
		b.ReportAllocs()
		for b.Loop() {
			if err := checkArguments(args, alone); err != nil {
				b.Fatal(err)
			}
		}
	})
}
