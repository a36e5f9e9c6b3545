package policy

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/toolgate/toolgate/internal/wire"
)

// Reasoning formats (SPEC §4): which request fields carry a level.
const (
	FormatEffort         = "reasoning-effort" // reasoning_effort: none/low/medium/high
	FormatThinking       = "thinking"         // thinking.type: disabled/enabled
	FormatEnableThinking = "enable-thinking"  // enable_thinking: false/true
	FormatBudget         = "thinking-budget"  // thinking.type + budget_tokens
	FormatCustom         = "custom"           // configured fields per level
)

// Levels, lowest first.
var Levels = []string{"off", "low", "medium", "high"}

// DefaultBudgets are thinking-budget's budget_tokens per level.
var DefaultBudgets = map[string]int{"low": 1024, "medium": 4096, "high": 8192}

// Protected request fields no reasoning configuration may set.
var Protected = []string{"model", "messages", "stream", "max_tokens", "max_completion_tokens"}

// Reasoning is a route's resolved reasoning configuration. The zero value
// (no format) sends nothing and leaves the client's fields alone.
type Reasoning struct {
	Format string
	// Level is the route's default level; "" sends nothing unless the
	// client chooses one.
	Level string
	// ClientEffort lets the client's reasoning_effort choose the level,
	// mapped onto Format (see EffortLevel).
	ClientEffort bool
	// Budgets overrides DefaultBudgets for thinking-budget, exactly.
	Budgets map[string]int
	// Custom holds, per level, the fields the custom format sends.
	Custom map[string]map[string]json.RawMessage
	// Fields are explicit request-body fields; they win over generated ones.
	Fields map[string]json.RawMessage
}

// EffortLevel maps OpenAI's reasoning_effort values onto a level: none →
// off, minimal → low (the nearest), low/medium/high as they are, xhigh and
// max → high. ok is false for any other value.
func EffortLevel(effort string) (level string, ok bool) {
	switch effort {
	case "none":
		return "off", true
	case "minimal", "low":
		return "low", true
	case "medium":
		return "medium", true
	case "high", "xhigh", "max":
		return "high", true
	}
	return "", false
}

// ApplyReasoning writes the route's reasoning fields into req and returns
// the level used ("" when none). A client reasoning_effort the route maps
// onto another format is removed from the request. thinking-budget's budget
// must be below the request's output limit (max_completion_tokens or
// max_tokens, after any clamp): otherwise a *RequestError naming both
// numbers — the output limit is never raised.
func ApplyReasoning(req *wire.ChatRequest, r Reasoning) (string, error) {
	if r.Format == "" {
		return "", nil
	}
	level := r.Level
	if raw, ok := req.Get("reasoning_effort"); ok && string(raw) != "null" && r.ClientEffort {
		var effort string
		if json.Unmarshal(raw, &effort) != nil {
			return "", &RequestError{Param: "reasoning_effort", Msg: "must be a string such as \"low\", \"medium\" or \"high\""}
		}
		l, ok := EffortLevel(effort)
		if !ok {
			return "", &RequestError{Param: "reasoning_effort", Msg: fmt.Sprintf("%q is not a reasoning effort; use none, minimal, low, medium or high", wire.Clip(effort))}
		}
		level = l
		if r.Format != FormatEffort {
			req.Delete("reasoning_effort")
		}
	}
	if level == "" {
		return "", nil
	}
	on := level != "off"
	set := func(k, v string) { req.Set(k, json.RawMessage(v)) }
	switch r.Format {
	case FormatEffort:
		effort := level
		if !on {
			effort = "none"
		}
		set("reasoning_effort", strconv.Quote(effort))
	case FormatThinking:
		set("thinking", map[bool]string{true: `{"type":"enabled"}`, false: `{"type":"disabled"}`}[on])
	case FormatEnableThinking:
		set("enable_thinking", strconv.FormatBool(on))
	case FormatBudget:
		if !on {
			set("thinking", `{"type":"disabled"}`)
			break
		}
		budget, ok := r.Budgets[level]
		if !ok {
			budget = DefaultBudgets[level]
		}
		if limit, field := outputLimit(req); limit > 0 && budget >= limit {
			return "", &RequestError{Param: field, Msg: fmt.Sprintf("the thinking budget (%d tokens) must be smaller than the output limit (%s = %d); raise %s or lower the reasoning level", budget, field, limit, field)}
		}
		set("thinking", fmt.Sprintf(`{"type":"enabled","budget_tokens":%d}`, budget))
	case FormatCustom:
		for k, v := range r.Custom[level] {
			req.Set(k, v)
		}
	}
	for k, v := range r.Fields {
		req.Set(k, v)
	}
	return level, nil
}

// outputLimit returns the request's output limit and the field holding it.
func outputLimit(req *wire.ChatRequest) (int, string) {
	for _, f := range []string{"max_completion_tokens", "max_tokens"} {
		if raw, ok := req.Get(f); ok {
			if n, err := strconv.Atoi(string(raw)); err == nil {
				return n, f
			}
		}
	}
	return 0, ""
}
