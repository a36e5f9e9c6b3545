package policy

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	"github.com/toolgate/toolgate/internal/enum"
	"github.com/toolgate/toolgate/internal/wire"
)

// Format is a reasoning format (docs/spec.md §4): which request fields carry a
// level.
type Format uint8

// Formats.
const (
	FormatNone           Format = iota // nothing is sent
	FormatEffort                       // reasoning_effort: none/low/medium/high
	FormatThinking                     // thinking.type: disabled/enabled
	FormatEnableThinking               // enable_thinking: false/true
	FormatBudget                       // thinking.type + budget_tokens
	FormatCustom                       // configured fields per level
)

var formatNames = [...]string{"", "reasoning-effort", "thinking", "enable-thinking", "thinking-budget", "custom"}

func (f Format) String() string { return formatNames[f] }

// Names are the configured names of the formats ("" is FormatNone).
func (Format) Names() []string { return slices.Clone(formatNames[:]) }

// Parse reads a configured format ("" is FormatNone).
func (Format) Parse(s string) (Format, error) { return enum.Parse[Format](formatNames[:], s) }

// Level is a reasoning level; LevelNone is none chosen.
type Level uint8

// Levels, lowest first.
const (
	LevelNone Level = iota
	Off
	Low
	Medium
	High
	numLevels
)

var levelNames = [numLevels]string{"", "off", "low", "medium", "high"}

func (l Level) String() string { return levelNames[l] }

// Names are the configured names of the levels ("" is LevelNone).
func (Level) Names() []string { return slices.Clone(levelNames[:]) }

// Parse reads a configured level ("" is LevelNone).
func (Level) Parse(s string) (Level, error) { return enum.Parse[Level](levelNames[:], s) }

// ParseLevel reads a level, as Parse does, reporting only whether it is
// one.
func ParseLevel(s string) (Level, bool) {
	l, err := Level(0).Parse(s)
	return l, err == nil
}

// defaultBudget is thinking-budget's budget_tokens for a level.
func defaultBudget(l Level) int { return [numLevels]int{0, 0, 1024, 4096, 8192}[l] }

// Field is one request-body member a configuration sets.
type Field struct {
	Name  string
	Value json.RawMessage
}

// Reasoning is a route's resolved reasoning configuration. The zero value
// (no format) sends nothing and leaves the client's fields alone.
type Reasoning struct {
	Format Format
	// Level is the route's default level; LevelNone sends nothing unless
	// the client chooses one.
	Level Level
	// ClientEffort lets the client's reasoning_effort choose the level,
	// mapped onto Format (see EffortLevel).
	ClientEffort bool
	// Budgets overrides thinking-budget's budget_tokens per level, exactly
	// (0 keeps the default: 1024, 4096, 8192).
	Budgets [numLevels]int
	// Custom holds, per level, the fields the custom format sends.
	Custom [numLevels][]Field
	// Fields are explicit request-body fields; they win over generated ones.
	Fields []Field
}

// EffortLevel maps OpenAI's reasoning_effort values onto a level: none →
// off, minimal → low (the nearest), low/medium/high as they are, xhigh and
// max → high. ok is false for any other value.
func EffortLevel(effort string) (level Level, ok bool) {
	switch effort {
	case "none":
		return Off, true
	case "minimal", "low":
		return Low, true
	case "medium":
		return Medium, true
	case "high", "xhigh", "max":
		return High, true
	}
	return LevelNone, false
}

// Fitted says how thinking-budget's budget was made to fit a request's
// output limit: From the route's budget, To the one sent (0: thinking
// turned off for the request). The zero value: nothing changed.
type Fitted struct{ From, To int }

// MinBudget is the smallest thinking budget Anthropic takes
// (budget_tokens ≥ 1024).
const MinBudget = 1024

// fitBudget is the budget a request whose output limit is limit gets
// instead of one that does not fit: half the limit (room for the answer),
// 0 when that is under MinBudget.
func fitBudget(limit int) int {
	if b := limit / 2; b >= MinBudget {
		return b
	}
	return 0
}

// ApplyReasoning writes the route's reasoning fields into req and returns
// the level used ("" when none). A client reasoning_effort the route maps
// onto another format is removed from the request. thinking-budget's budget
// must be below the request's output limit (max_completion_tokens or
// max_tokens, after any clamp); one that is not is lowered to half the
// limit, or thinking turned off for the request when that is under
// MinBudget (Fitted says which) — the output limit is never raised.
func ApplyReasoning(req *wire.ChatRequest, r Reasoning) (Level, Fitted, error) {
	var fitted Fitted
	if r.Format == FormatNone {
		return LevelNone, fitted, nil
	}
	level := r.Level
	if raw, ok := req.Get("reasoning_effort"); ok && string(raw) != "null" && r.ClientEffort {
		var effort string
		if json.Unmarshal(raw, &effort) != nil {
			return LevelNone, fitted, &wire.ParamError{Param: "reasoning_effort", Msg: "must be a string such as \"low\", \"medium\" or \"high\""}
		}
		l, ok := EffortLevel(effort)
		if !ok {
			return LevelNone, fitted, &wire.ParamError{Param: "reasoning_effort", Msg: fmt.Sprintf("%q is not a reasoning effort; use none, minimal, low, medium or high", wire.Clip(effort))}
		}
		level = l
		if r.Format != FormatEffort {
			req.Delete("reasoning_effort")
		}
	}
	if level == LevelNone {
		return LevelNone, fitted, nil
	}
	on := level != Off
	set := func(k, v string) { req.Set(k, json.RawMessage(v)) }
	switch r.Format {
	case FormatEffort:
		effort := level.String()
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
		budget := r.Budget(level)
		if limit, _ := outputLimit(req); limit > 0 && budget >= limit {
			fitted = Fitted{From: budget, To: fitBudget(limit)}
			if budget = fitted.To; budget == 0 {
				level = Off
				set("thinking", `{"type":"disabled"}`)
				break
			}
		}
		set("thinking", fmt.Sprintf(`{"type":"enabled","budget_tokens":%d}`, budget))
	case FormatCustom:
		for _, f := range r.Custom[level] {
			req.Set(f.Name, f.Value)
		}
	}
	for _, f := range r.Fields {
		req.Set(f.Name, f.Value)
	}
	return level, fitted, nil
}

// Budget is the thinking budget (budget_tokens) the thinking-budget
// format sends at level, 0 for another format or a level without one.
func (r Reasoning) Budget(level Level) int {
	if r.Format != FormatBudget || level <= Off || level >= numLevels {
		return 0
	}
	if b := r.Budgets[level]; b != 0 {
		return b
	}
	return defaultBudget(level)
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
