package policy

import (
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/wire"
)

const weatherTool = `,"tools":[{"type":"function","function":{"name":"get","parameters":{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer","maximum":10}},"required":["city"],"additionalProperties":false}}}]`

// Arguments are parsed by docs/spec.md §1's rules and validated against the
// declared schema; reject makes a failure a violation, annotate records it.
func TestArgumentValidation(t *testing.T) {
	schemas := NewSchemas(0)
	for _, tc := range []struct {
		name, args, want string // want: "" for valid, else a fragment of the problem
	}{
		{"valid", `{"city":"Paris","days":3}`, ""},
		{"huge number is still JSON", `{"city":"Paris","days":1e999}`, "maximum"},
		{"missing required", `{"days":3}`, "city"},
		{"wrong type", `{"city":7}`, "string"},
		{"extra property", `{"city":"x","zip":1}`, "zip"},
		{"unparseable", `{"city":"Pa`, "Failed to parse arguments: "},
		{"not an object", `[1,2]`, "arguments must be a JSON object, got array"},
		{"null", `null`, "arguments must be a JSON object, got null"},
		{"empty string is no arguments (docs/quirks.md A42)", ``, "city"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, mode := range []Arguments{ArgumentsReject, ArgumentsAnnotate} {
				j, err := Prepare(req(t, weatherTool), Config{Mode: ModeSession, Arguments: mode, Schemas: schemas})
				if err != nil {
					t.Fatal(err)
				}
				o := j.Finish(End{Done: true, FinishReason: "tool_calls", Calls: []wire.CollectedCall{{ID: "c1", Name: "get", Arguments: tc.args}}})
				switch {
				case tc.want == "" && (!o.OK() || len(o.Annotations) > 0):
					t.Errorf("%s: %+v", mode, o)
				case tc.want != "" && mode == ArgumentsReject && (o.Kind != Violation || !strings.Contains(o.Msg, tc.want)):
					t.Errorf("%s: %+v, want a violation about %q", mode, o, tc.want)
				case tc.name == "unparseable" && (o.Kind != Violation || !strings.Contains(o.Msg, tc.want)):
					// Not JSON at all: the call was cut off, a violation in both modes.
					t.Errorf("%s: %+v, want a violation about %q", mode, o, tc.want)
				case tc.name == "unparseable":
				case tc.want != "" && mode == ArgumentsAnnotate && (!o.OK() || len(o.Annotations) != 1 || !strings.Contains(o.Annotations[0], tc.want)):
					t.Errorf("%s: %+v, want an annotation about %q", mode, o, tc.want)
				}
			}
		})
	}
	if schemas.Len() != 1 {
		t.Errorf("%d schemas cached for one tool list; want 1 (cached by content hash)", schemas.Len())
	}
}

// A schema that refers outside itself is not fetched: the call is then
// only checked for being a JSON object.
func TestSchemaExternalRefRefused(t *testing.T) {
	tools := `,"tools":[{"type":"function","function":{"name":"get","parameters":{"$ref":"file:///etc/passwd"}}}]`
	j, _ := Prepare(req(t, tools), Config{Mode: ModeSession, Arguments: ArgumentsReject, Schemas: NewSchemas(0)})
	if o := j.Finish(End{Done: true, FinishReason: "tool_calls", Calls: []wire.CollectedCall{{ID: "c", Name: "get", Arguments: `{"a":1}`}}}); !o.OK() {
		t.Errorf("%+v", o)
	}
	if o := j.Finish(End{Done: true, FinishReason: "tool_calls", Calls: []wire.CollectedCall{{ID: "c", Name: "get", Arguments: `"x"`}}}); o.OK() {
		t.Errorf("non-object accepted: %+v", o)
	}
}

// The cache stays bounded.
func TestSchemasBounded(t *testing.T) {
	s := NewSchemas(2)
	for _, sch := range []string{`{"type":"object"}`, `{"type":"string"}`, `{"type":"array"}`} {
		s.get([]byte(sch))
	}
	if s.Len() > 2 {
		t.Errorf("%d cached", s.Len())
	}
}
