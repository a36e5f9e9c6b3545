package policy

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/wire"
)

// fields returns the request's reasoning-related members after Apply.
func applied(t *testing.T, extra string, r Reasoning) (Level, string, error) {
	t.Helper()
	q := req(t, extra)
	level, _, err := ApplyReasoning(q, r)
	var got []string
	for _, k := range []string{"reasoning_effort", "thinking", "enable_thinking", "chat_template_kwargs", "x"} {
		if v, ok := q.Get(k); ok {
			got = append(got, k+"="+string(v))
		}
	}
	return level, strings.Join(got, " "), err
}

// Every format × level generates exactly docs/spec.md §4's fields.
func TestReasoningFormats(t *testing.T) {
	var custom [numLevels][]Field
	custom[Off] = []Field{{"chat_template_kwargs", json.RawMessage(`{"enable_thinking":false}`)}}
	custom[High] = []Field{{"chat_template_kwargs", json.RawMessage(`{"enable_thinking":true}`)}}
	want := map[Format]map[string]string{
		FormatEffort:         {"off": `reasoning_effort="none"`, "low": `reasoning_effort="low"`, "medium": `reasoning_effort="medium"`, "high": `reasoning_effort="high"`},
		FormatThinking:       {"off": `thinking={"type":"disabled"}`, "low": `thinking={"type":"enabled"}`, "medium": `thinking={"type":"enabled"}`, "high": `thinking={"type":"enabled"}`},
		FormatEnableThinking: {"off": `enable_thinking=false`, "low": `enable_thinking=true`, "medium": `enable_thinking=true`, "high": `enable_thinking=true`},
		FormatBudget: {"off": `thinking={"type":"disabled"}`, "low": `thinking={"type":"enabled","budget_tokens":1024}`,
			"medium": `thinking={"type":"enabled","budget_tokens":4096}`, "high": `thinking={"type":"enabled","budget_tokens":8192}`},
		FormatCustom: {"off": `chat_template_kwargs={"enable_thinking":false}`, "low": ``, "medium": ``, "high": `chat_template_kwargs={"enable_thinking":true}`},
	}
	for format, levels := range want {
		for _, level := range []Level{Off, Low, Medium, High} {
			got, fields, err := applied(t, `,"max_tokens":20000`, Reasoning{Format: format, Level: level, Custom: custom})
			if err != nil || got != level || fields != levels[level.String()] {
				t.Errorf("%s/%s: level %q fields %q err %v; want %q", format, level, got, fields, err, levels[level.String()])
			}
		}
	}
}

// The client's reasoning_effort chooses the level when the route allows
// it, mapped onto the route's format; OpenAI's extra values map to the
// nearest level; an unknown value is refused before sending.
func TestClientEffort(t *testing.T) {
	for effort, want := range map[string]string{"none": `thinking={"type":"disabled"}`, "minimal": `thinking={"type":"enabled"}`, "xhigh": `thinking={"type":"enabled"}`} {
		_, fields, err := applied(t, `,"reasoning_effort":"`+effort+`"`, Reasoning{Format: FormatThinking, Level: Off, ClientEffort: true})
		if err != nil || fields != want {
			t.Errorf("%s: %q %v", effort, fields, err)
		}
	}
	// Not allowed: the route's level stands and the client's field is left as sent.
	_, fields, _ := applied(t, `,"reasoning_effort":"high"`, Reasoning{Format: FormatThinking, Level: Off})
	if fields != `reasoning_effort="high" thinking={"type":"disabled"}` {
		t.Errorf("%q", fields)
	}
	_, _, err := applied(t, `,"reasoning_effort":"turbo"`, Reasoning{Format: FormatEffort, ClientEffort: true})
	var re *wire.ParamError
	if !errors.As(err, &re) || re.Param != "reasoning_effort" {
		t.Errorf("err = %v", err)
	}
}

// Configured fields win over generated ones; budgets override exactly.
func TestReasoningPrecedence(t *testing.T) {
	_, fields, _ := applied(t, "", Reasoning{Format: FormatThinking, Level: High, Fields: []Field{{"thinking", json.RawMessage(`{"type":"adaptive"}`)}, {"x", json.RawMessage(`1`)}}})
	if fields != `thinking={"type":"adaptive"} x=1` {
		t.Errorf("%q", fields)
	}
	_, fields, _ = applied(t, `,"max_tokens":5000`, Reasoning{Format: FormatBudget, Level: Low, Budgets: [numLevels]int{Low: 2048}})
	if fields != `thinking={"type":"enabled","budget_tokens":2048}` {
		t.Errorf("%q", fields)
	}
}

// A budget not below the request's output limit is made to fit: half the
// limit while that is Anthropic's minimum or more, else thinking off for
// the request — never a refusal, and the limit never raised.
func TestReasoningBudgetFits(t *testing.T) {
	for _, c := range []struct {
		extra  string
		level  Level
		want   string
		fitted Fitted
	}{
		{`,"max_completion_tokens":4096`, Medium, `max_completion_tokens=4096 thinking={"type":"enabled","budget_tokens":2048}`, Fitted{4096, 2048}},
		{`,"max_tokens":256`, Low, `max_tokens=256 thinking={"type":"disabled"}`, Fitted{1024, 0}},
		{`,"max_tokens":2047`, Medium, `max_tokens=2047 thinking={"type":"disabled"}`, Fitted{4096, 0}},
		{`,"max_tokens":2048`, Medium, `max_tokens=2048 thinking={"type":"enabled","budget_tokens":1024}`, Fitted{4096, 1024}},
		{`,"max_tokens":1025`, Low, `max_tokens=1025 thinking={"type":"enabled","budget_tokens":1024}`, Fitted{}},
	} {
		q := req(t, c.extra)
		level, fitted, err := ApplyReasoning(q, Reasoning{Format: FormatBudget, Level: c.level})
		var got []string
		for _, k := range []string{"max_tokens", "max_completion_tokens", "thinking"} {
			if v, ok := q.Get(k); ok {
				got = append(got, k+"="+string(v))
			}
		}
		wantLevel := c.level
		if c.fitted.From > 0 && c.fitted.To == 0 {
			wantLevel = Off
		}
		if err != nil || strings.Join(got, " ") != c.want || fitted != c.fitted || level != wantLevel {
			t.Errorf("%s: %q %+v %v %v", c.extra, got, fitted, level, err)
		}
	}
}
