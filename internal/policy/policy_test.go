package policy

import (
	"errors"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/testing/wiretest"
	"github.com/toolgate/toolgate/internal/wire"
)

// req is a one-message request with extra members (",…").
func req(t *testing.T, extra string) *wire.ChatRequest {
	t.Helper()
	return wiretest.Request(t, `"messages":[{"role":"user","content":"x"}]`+extra)
}

const tools = `,"tools":[{"type":"function","function":{"name":"get"}},{"type":"function","function":{"name":"put"}}]`

func calls(names ...string) []wire.CollectedCall {
	var out []wire.CollectedCall
	for i, n := range names {
		out = append(out, wire.CollectedCall{ID: "c" + string(rune('0'+i)), Name: n, Arguments: "{}"})
	}
	return out
}

// Every rule of docs/spec.md §3, for each tool_choice form and mode.
func TestJudge(t *testing.T) {
	done := func(finish string, names ...string) End {
		return End{Done: true, FinishReason: finish, Calls: calls(names...)}
	}
	for _, tc := range []struct {
		name  string
		mode  Mode
		extra string
		end   End
		want  string // outcome kind, then a fragment of the message
	}{
		{"cut stream is incomplete, even with policy off", ModeOff, tools, End{Done: false}, "incomplete MODEL_INCOMPLETE"},
		{"protocol error is a violation, even with policy off", ModeOff, tools, End{Done: true, CallsErr: &wire.ProtocolError{Index: 1, Msg: "the call was left without id"}}, "violation left without id"},
		{"off judges no calls", ModeOff, "", done("stop", "get"), "ok"},
		{"default: text answer", ModeDefault, "", done("stop"), "ok"},
		{"default: calls without declared tools", ModeDefault, "", done("tool_calls", "get"), "violation declares no tools"},
		{"default: calls with tools", ModeDefault, tools, done("tool_calls", "get"), "ok"},
		{"default: calls but finish stop", ModeDefault, tools, done("stop", "get"), `violation finished with "stop"`},
		{"default: tool_calls finish without calls", ModeDefault, tools, done("tool_calls"), "violation carries no call"},
		{"default: missing finish reason", ModeDefault, tools, done(""), "violation no finish_reason"},
		{"default ignores tool_choice", ModeDefault, tools + `,"tool_choice":"required"`, done("stop"), "ok"},
		{"session auto: text", ModeSession, tools + `,"tool_choice":"auto"`, done("stop"), "ok"},
		{"session auto: call", ModeSession, tools + `,"tool_choice":"auto"`, done("tool_calls", "put"), "ok"},
		{"session required: no call", ModeSession, tools + `,"tool_choice":"required"`, done("stop"), `violation "required" but the model made no tool call`},
		{"session required: call", ModeSession, tools + `,"tool_choice":"required"`, done("tool_calls", "get"), "ok"},
		{"session function: other function", ModeSession, tools + `,"tool_choice":{"type":"function","function":{"name":"put"}}`, done("tool_calls", "get"), `violation names "put"`},
		{"session function: called", ModeSession, tools + `,"tool_choice":{"type":"function","function":{"name":"put"}}`, done("tool_calls", "put"), "ok"},
		{"session none: call", ModeSession, tools + `,"tool_choice":"none"`, done("tool_calls", "get"), `violation "none"`},
		{"session omitted: default rules", ModeSession, "", done("tool_calls", "get"), "violation declares no tools"},
		{"undeclared tool", ModeSession, tools, done("tool_calls", "delete"), `violation called "delete"`},
		{"parallel false not judged by default", ModeSession, tools + `,"parallel_tool_calls":false`, done("tool_calls", "get", "put"), "ok"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j, err := Prepare(req(t, tc.extra), Config{Mode: tc.mode})
			if err != nil {
				t.Fatal(err)
			}
			o := j.Finish(tc.end)
			kind, frag, _ := strings.Cut(tc.want, " ")
			if o.Kind != kind || !strings.Contains(o.Msg, frag) {
				t.Errorf("outcome %s %q, want %s containing %q", o.Kind, o.Msg, kind, frag)
			}
		})
	}
}

// A route that opts in judges parallel_tool_calls: false.
func TestEnforceParallel(t *testing.T) {
	j, _ := Prepare(req(t, tools+`,"parallel_tool_calls":false`), Config{Mode: ModeSession, EnforceParallel: true})
	if o := j.Finish(End{Done: true, FinishReason: "tool_calls", Calls: calls("get", "put")}); o.Kind != Violation {
		t.Errorf("outcome %+v", o)
	}
	if o := j.Finish(End{Done: true, FinishReason: "tool_calls", Calls: calls("get")}); !o.OK() {
		t.Errorf("one call: %+v", o)
	}
}

// An unknown tool_choice, or one naming an undeclared function, is refused
// before anything is sent.
func TestPrepareRefuses(t *testing.T) {
	for _, extra := range []string{
		tools + `,"tool_choice":"any"`,
		tools + `,"tool_choice":{"type":"function"}`,
		tools + `,"tool_choice":{"type":"function","function":{"name":"nope"}}`,
		tools + `,"tool_choice":7`,
	} { // tools that are not an array of objects are the decoder's (wire.TestDecodeErrors)
		_, err := Prepare(req(t, extra), Config{Mode: ModeSession})
		var re *wire.ParamError
		if !errors.As(err, &re) {
			t.Errorf("%s: err = %v", extra, err)
		}
	}
}

// A detached judge keeps judging after the request's bytes are gone: its
// tool names and schemas are its own.
func TestDetach(t *testing.T) {
	body := []byte(`{"model":"m","messages":[{"role":"user","content":"x"}],"tool_choice":{"type":"function","function":{"name":"get"}},` +
		`"tools":[{"type":"function","function":{"name":"get","parameters":{"type":"object","required":["city"]}}}]}`)
	req, err := wire.DecodeRequest(body)
	if err != nil {
		t.Fatal(err)
	}
	j, err := Prepare(req, Config{Mode: ModeSession, Arguments: ArgumentsReject, Schemas: NewSchemas(0)})
	if err != nil {
		t.Fatal(err)
	}
	j.Detach()
	for i := range body {
		body[i] = 'x' // the request's bytes reused for something else
	}
	call := func(args string) End {
		return End{Done: true, FinishReason: "tool_calls", Calls: []wire.CollectedCall{{ID: "c", Name: "get", Arguments: args}}}
	}
	if o := j.Finish(call(`{"city":"Paris"}`)); !o.OK() {
		t.Errorf("a valid call: %s %s", o.Kind, o.Msg)
	}
	if o := j.Finish(call(`{}`)); o.OK() || !strings.Contains(o.Msg, "city") {
		t.Errorf("a call missing a required argument: %s %s", o.Kind, o.Msg)
	}
}
