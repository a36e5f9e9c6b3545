package policy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/toolgate/toolgate/internal/enum"
	"github.com/toolgate/toolgate/internal/wire"
)

// Mode is a route's completion policy.
type Mode uint8

// Modes.
const (
	ModeSession Mode = iota // judged by tool_choice (the gateway's default)
	ModeDefault             // judged by whether tools are declared
	ModeOff                 // calls are not judged
)

var modeNames = []string{"session", "default", "off"}

func (m Mode) String() string { return modeNames[m] }

// Names are the configured names of the modes.
func (Mode) Names() []string { return slices.Clone(modeNames) }

// Parse reads a configured mode: session, default or off.
func (Mode) Parse(s string) (Mode, error) { return enum.Parse[Mode](modeNames, s) }

// Config is a route's policy configuration.
type Config struct {
	Mode Mode
	// EnforceParallel judges parallel_tool_calls: false.
	EnforceParallel bool
	// Arguments is the argument validation mode.
	Arguments Arguments
	// Schemas caches compiled parameter schemas; nil compiles none (the
	// arguments are then only checked for being a JSON object).
	Schemas *Schemas
	// MaxTools caps the tools a request may declare; 0 is no cap.
	MaxTools int
}

// ViolationError is a response that does not satisfy its request under
// the route's completion policy (docs/spec.md §3), malformed tool calls included.
type ViolationError struct {
	Upstream string
	Msg      string
}

func (e *ViolationError) Error() string {
	return "upstream " + e.Upstream + ": the response does not satisfy the request: " + e.Msg
}

// Judge holds what the request asks of its response. It is created per
// request and is not safe for concurrent use.
type Judge struct {
	cfg      Config
	schemas  *Schemas
	params   map[string]json.RawMessage // declared function → its parameters schema
	tools    wire.Names                 // declared function names
	nTools   int
	choice   toolChoice
	function string          // the named function when choice is "function"
	parallel bool            // parallel_tool_calls, true unless the request says false
	format   json.RawMessage // response_format json_schema's schema, or nil
	n        int             // the request's n, 0 when absent
}

// toolChoice is a request's tool_choice.
type toolChoice uint8

const (
	choiceUnset    toolChoice = iota // omitted: default's rules
	choiceAuto                       // "auto"
	choiceNone                       // "none"
	choiceRequired                   // "required"
	choiceFunction                   // {"type":"function","function":{"name":…}}
)

// Forced reports whether the request forces a tool call (tool_choice
// "required" or a named function).
func (j *Judge) Forced() bool { return j.choice == choiceRequired || j.choice == choiceFunction }

// SingleChoice reports whether the request asks for one choice (n absent
// or 1).
func (j *Judge) SingleChoice() bool { return j.n <= 1 }

// NeedsText reports whether Finish needs the response's text content
// (End.Text): the request asks for response_format json_schema.
func (j *Judge) NeedsText() bool { return j.format != nil }

// Prepare reads the request's tools, tool_choice and parallel_tool_calls.
// An unknown tool_choice, or a named function the request does not
// declare, is a *wire.ParamError.
func Prepare(req *wire.ChatRequest, cfg Config) (*Judge, error) {
	j := &Judge{cfg: cfg, parallel: true, schemas: cfg.Schemas}
	if cfg.MaxTools > 0 && len(req.Tools) > cfg.MaxTools {
		return nil, &wire.ParamError{Param: "tools", Msg: fmt.Sprintf("declares %d tools; this gateway accepts at most %d (server.max_tools)", len(req.Tools), cfg.MaxTools)}
	}
	for _, t := range req.Tools {
		if t.Name == "" {
			continue
		}
		j.tools.Add(t.Name)
		j.nTools++
		if t.Parameters != nil {
			if j.params == nil {
				j.params = map[string]json.RawMessage{}
			}
			j.params[t.Name] = t.Parameters
		}
	}
	if raw, ok := req.Get("n"); ok {
		_ = json.Unmarshal(raw, &j.n)
	}
	if raw, ok := req.Get("parallel_tool_calls"); ok && string(raw) == "false" {
		j.parallel = false
	}
	if raw, ok := req.Get("response_format"); ok && cfg.Mode != ModeOff {
		var rf struct {
			Type       string `json:"type"`
			JSONSchema struct {
				Schema json.RawMessage `json:"schema"`
			} `json:"json_schema"`
		}
		if json.Unmarshal(raw, &rf) == nil && rf.Type == "json_schema" && len(rf.JSONSchema.Schema) > 0 {
			j.format = rf.JSONSchema.Schema
		}
	}
	if err := j.readChoice(req); err != nil {
		return nil, err
	}
	return j, nil
}

// Detach makes the judge own what it keeps of the request (tool names,
// parameter schemas), which until then are views of the request's bytes:
// a stream calls it once committed, so that the request can be released
// while the stream lasts.
func (j *Judge) Detach() {
	if j.params != nil {
		params := make(map[string]json.RawMessage, len(j.params))
		for name, schema := range j.params {
			params[strings.Clone(name)] = bytes.Clone(schema)
		}
		j.params = params
	}
	j.tools = j.tools.Clone()
	j.function = strings.Clone(j.function)
}

// readChoice reads tool_choice: "auto", "none", "required", or a function
// the request declares.
func (j *Judge) readChoice(req *wire.ChatRequest) error {
	raw, ok := req.Get("tool_choice")
	if !ok || string(raw) == "null" {
		return nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		switch s {
		case "auto":
			j.choice = choiceAuto
		case "none":
			j.choice = choiceNone
		case "required":
			j.choice = choiceRequired
		default:
			return &wire.ParamError{Param: "tool_choice", Msg: fmt.Sprintf("%q is not a tool_choice; use \"none\", \"auto\", \"required\" or {\"type\":\"function\",\"function\":{\"name\":\"…\"}}", wire.Clip(s))}
		}
		return nil
	}
	var obj struct {
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if json.Unmarshal(raw, &obj) != nil || obj.Type != "function" || obj.Function.Name == "" {
		return &wire.ParamError{Param: "tool_choice", Msg: "must be \"none\", \"auto\", \"required\" or {\"type\":\"function\",\"function\":{\"name\":\"…\"}}"}
	}
	if !j.declared(obj.Function.Name) {
		return &wire.ParamError{Param: "tool_choice", Msg: fmt.Sprintf("names the function %q, which is not among the request's tools", wire.Clip(obj.Function.Name))}
	}
	j.choice, j.function = choiceFunction, obj.Function.Name
	return nil
}

func (j *Judge) declared(name string) bool { return j.tools.Has(name) }

// End is what the wire layer knows when a response has ended.
type End struct {
	// Done reports that the response was complete on the wire (the stream's
	// [DONE], or a whole non-streamed body).
	Done bool
	// Calls are the collected calls; CallsErr the collector's protocol
	// error, if any.
	Calls    []wire.CollectedCall
	CallsErr error
	// FinishReason is choice 0's finish reason after normalization.
	FinishReason string
	// Text is choice 0's text content, needed only when NeedsText.
	Text string
}

// Outcome kinds; they are metric labels.
const (
	OK         = "ok"
	Incomplete = "incomplete" // MODEL_INCOMPLETE
	Violation  = "violation"
)

// Outcome is the judge's verdict.
type Outcome struct {
	Kind string
	// Msg says what was wrong, for the client.
	Msg string
	// Annotations lists argument validation failures in annotate mode.
	Annotations []string
}

// OK reports whether the response satisfies its request.
func (o Outcome) OK() bool { return o.Kind == OK }

func violation(format string, args ...any) Outcome {
	return Outcome{Kind: Violation, Msg: fmt.Sprintf(format, args...)}
}

// Finish judges a response that has ended.
func (j *Judge) Finish(e End) Outcome {
	if e.CallsErr != nil {
		return violation("the model's tool calls are malformed: %v", strings.TrimPrefix(e.CallsErr.Error(), "wire: "))
	}
	if !e.Done {
		return Outcome{Kind: Incomplete, Msg: "the response ended before it was complete (MODEL_INCOMPLETE)"}
	}
	if j.cfg.Mode == ModeOff {
		return Outcome{Kind: OK}
	}
	for _, verdict := range [...]func(End) (Outcome, bool){j.calls, j.finishReason, j.content} {
		if o, done := verdict(e); done {
			return o
		}
	}
	return j.arguments(e)
}

// calls judges the calls made: declared tools, parallel_tool_calls when
// enforced, and tool_choice (or, without one or in default mode, whether
// tools were declared).
func (j *Judge) calls(e End) (Outcome, bool) {
	n := len(e.Calls)
	if j.nTools > 0 {
		for _, c := range e.Calls {
			if !j.declared(c.Name) {
				return violation("the model called %q, which is not among the request's tools", wire.Clip(c.Name)), true
			}
		}
	}
	if j.cfg.EnforceParallel && !j.parallel && n > 1 {
		return violation("the model made %d calls although parallel_tool_calls is false", n), true
	}
	choice := j.choice
	if j.cfg.Mode == ModeDefault {
		choice = choiceUnset
	}
	switch {
	case choice == choiceNone && n > 0:
		return violation("tool_choice is \"none\" but the model called %q", wire.Clip(e.Calls[0].Name)), true
	case choice == choiceRequired && n == 0:
		return violation("tool_choice is \"required\" but the model made no tool call"), true
	case choice == choiceFunction && !slices.ContainsFunc(e.Calls, func(c wire.CollectedCall) bool { return c.Name == j.function }):
		return violation("tool_choice names %q but the model did not call it", j.function), true
	case choice == choiceUnset && j.nTools == 0 && n > 0:
		return violation("the model called %q but the request declares no tools", wire.Clip(e.Calls[0].Name)), true
	}
	return Outcome{}, false
}

// finishReason judges the finish reason against the calls.
func (j *Judge) finishReason(e End) (Outcome, bool) {
	n := len(e.Calls)
	switch {
	case e.FinishReason == "":
		return violation("the response has no finish_reason"), true
	case n > 0 && e.FinishReason != "tool_calls":
		return violation("the model made tool calls but finished with %q", wire.Clip(e.FinishReason)), true
	case n == 0 && e.FinishReason == "tool_calls":
		return violation("the response finished with \"tool_calls\" but carries no call"), true
	}
	return Outcome{}, false
}

// content judges a text answer against response_format's json_schema.
func (j *Judge) content(e End) (Outcome, bool) {
	if j.format == nil || len(e.Calls) > 0 {
		return Outcome{}, false
	}
	var sch *compiled
	if j.schemas != nil {
		sch = j.schemas.get(j.format)
	}
	if err := checkContent(e.Text, sch); err != nil {
		return violation("the content does not match response_format's json_schema: %v", err), true
	}
	return Outcome{}, false
}

// arguments validates the calls' arguments (annotate or reject).
func (j *Judge) arguments(e End) Outcome {
	if j.cfg.Arguments != ArgumentsAnnotate && j.cfg.Arguments != ArgumentsReject {
		return Outcome{Kind: OK}
	}
	// Arguments that are not JSON at all never finished (docs/quirks.md A19: a
	// truncation reported as "tool_calls"): a violation in both modes.
	for _, c := range e.Calls {
		if strings.TrimSpace(c.Arguments) != "" && !wire.Valid([]byte(c.Arguments)) {
			return violation("invalid tool-call arguments: call %s (%s) is cut off or garbled: %v", c.ID, c.Name, checkArguments(c.Arguments, nil))
		}
	}
	if problems := j.argumentProblems(e.Calls); len(problems) > 0 {
		if j.cfg.Arguments == ArgumentsReject {
			return violation("invalid tool-call arguments: %s", strings.Join(problems, "; "))
		}
		return Outcome{Kind: OK, Annotations: problems}
	}
	return Outcome{Kind: OK}
}
