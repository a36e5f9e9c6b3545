package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"

	"github.com/toolgate/toolgate/internal/sim"
	"github.com/toolgate/toolgate/internal/testing/gatewaytest"
	"github.com/toolgate/toolgate/internal/testing/wiretest"
)

// A route's reasoning format reaches the upstream as its fields, chosen by
// the client's reasoning_effort where allowed; a thinking budget that does
// not fit the output limit is lowered to fit, or thinking turned off for
// the request, said in X-Toolgate-Thinking and counted (docs/spec.md §4).
func TestReasoningThroughGateway(t *testing.T) {
	e, s := gatewaytest.StartSim(t, sim.Options{}, `
upstreams: [{name: sim, url: "UPSTREAM_URL/v1"}]
routes:
  - model: claude-like
    upstream: sim
    upstream_model: sim-text
    reasoning: {format: thinking-budget, level: low, client_effort: true, fields: {metadata: {via: toolgate}}}
`)
	resp := e.Post(t, `{"model":"claude-like","max_tokens":16000,"reasoning_effort":"high","messages":[{"role":"user","content":"x"}]}`)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	sent := string(s.LastRequest())
	if resp.StatusCode != 200 || !strings.Contains(sent, `"thinking":{"type":"enabled","budget_tokens":8192}`) ||
		strings.Contains(sent, "reasoning_effort") || !strings.Contains(sent, `"metadata":{"via":"toolgate"}`) {
		t.Fatalf("status %d, upstream got %s", resp.StatusCode, sent)
	}
	if a := e.WaitAccess(t, 1)[0]; a["reasoning"] != "high" {
		t.Errorf("access %v", a)
	}
	for _, c := range []struct{ body, sent, header, action string }{
		{`{"model":"claude-like","max_tokens":1000,"messages":[{"role":"user","content":"x"}]}`, `"thinking":{"type":"disabled"}`,
			"off; budget_tokens=1024 does not fit the output limit", "thinking_off"},
		{`{"model":"claude-like","max_tokens":6000,"reasoning_effort":"high","messages":[{"role":"user","content":"x"}]}`, `"thinking":{"type":"enabled","budget_tokens":3000}`,
			"budget_tokens=3000; lowered from 8192 to fit the output limit", "thinking_lowered"},
	} {
		resp := e.Post(t, c.body)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if sent := string(s.LastRequest()); resp.StatusCode != 200 || !strings.Contains(sent, c.sent) || !strings.Contains(sent, `"max_tokens":`) || resp.Header.Get("X-Toolgate-Thinking") != c.header {
			t.Errorf("%s: %d %q %s; sent %s", c.body, resp.StatusCode, resp.Header.Get("X-Toolgate-Thinking"), b, sent)
		}
		if n := e.Metric(t, "toolgate_repairs_total", map[string]string{"route": "claude-like", "action": c.action}); n != 1 {
			t.Errorf("%s counted %v", c.action, n)
		}
	}
}

// Reasoning reaches the client in reasoning_content whichever way the
// upstream is configured to send it: a "reasoning" field (A29) or inline
// <think> text split across chunks (A30), streamed and not; the text never
// carries the tags.
func TestReasoningResponse(t *testing.T) {
	e, _ := gatewaytest.StartSim(t, sim.Options{}, `
upstreams:
  - {name: field, url: "UPSTREAM_URL/v1", reasoning_field: reasoning}
  - {name: inline, url: "UPSTREAM_URL/v1", reasoning_field: think}
routes:
  - {model: sim-q-reasoningfield, upstream: field}
  - {model: sim-q-thinkinline, upstream: inline}
`)
	read := func(model string) string {
		resp := e.Post(t, `{"model":"`+model+`","stream":true,"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"get_weather"}}]}`)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return string(b)
	}
	body := read("sim-q-reasoningfield")
	if !strings.Contains(body, `"reasoning_content":"Checking the weather tool."`) || strings.Contains(body, `"reasoning":`) {
		t.Errorf("renamed:\n%s", body)
	}
	body = read("sim-q-thinkinline")
	var reasoning, content strings.Builder
	for data := range wiretest.Data(body) {
		var chunk struct {
			Choices []struct {
				Delta struct {
					Content          string `json:"content"`
					ReasoningContent string `json:"reasoning_content"`
				} `json:"delta"`
			} `json:"choices"`
		}
		if json.Unmarshal([]byte(data), &chunk) == nil && len(chunk.Choices) > 0 {
			reasoning.WriteString(chunk.Choices[0].Delta.ReasoningContent)
			content.WriteString(chunk.Choices[0].Delta.Content)
		}
	}
	if reasoning.String() != "The user wants weather." || content.String() != "Calling the tool." || !strings.HasSuffix(body, "data: [DONE]\n\n") {
		t.Errorf("reasoning %q, content %q:\n%s", reasoning.String(), content.String(), body)
	}
}

// A non-streamed answer with inline <think> reasoning reaches the client
// with the reasoning in reasoning_content and the tags gone.
func TestReasoningResponseWhole(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		io.WriteString(w, `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"<think>Think first.</think>The answer."},"finish_reason":"stop"}]}`)
	}))
	defer up.Close()
	e := gatewaytest.Start(t, up.URL, `
upstreams: [{name: u, url: "UPSTREAM_URL/v1", reasoning_field: think}]
routes: [{model: "*", upstream: u}]
`)
	resp := e.Post(t, `{"model":"m","messages":[{"role":"user","content":"x"}]}`)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), `"content":"The answer.","reasoning_content":"Think first."`) {
		t.Errorf("%s", b)
	}
}

// A three-turn tool conversation with a DeepSeek-style thinking upstream:
// openai-go drops reasoning_content when it replays the assistant turns,
// the gateway puts it back, and every turn succeeds; with restore off the
// upstream's own 400 reaches the client (docs/spec.md §4, docs/quirks.md C15).
func TestReasoningRestore(t *testing.T) {
	e, s := gatewaytest.StartSim(t, sim.Options{}, `
upstreams:
  - {name: ds, url: "UPSTREAM_URL/v1", restore_reasoning: true}
  - {name: plain, url: "UPSTREAM_URL/v1"}
routes:
  - {model: deepseek-restored, upstream: ds}
  - {model: deepseek-plain, upstream: plain}
`)
	converse := func(model string) error {
		msgs := gatewaytest.UserMsg("Weather in Paris, twice please.")
		tools := []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "get_weather"})}
		for turn := 0; turn < 3; turn++ {
			stream := e.Client("k").Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{Model: model, Messages: msgs, Tools: tools})
			acc := openai.ChatCompletionAccumulator{}
			for stream.Next() {
				acc.AddChunk(stream.Current())
			}
			if err := stream.Err(); err != nil {
				return err
			}
			m := acc.Choices[0].Message
			if len(m.ToolCalls) == 0 {
				if turn != 2 {
					return fmt.Errorf("turn %d: no call", turn)
				}
				return nil
			}
			msgs = append(msgs, m.ToParam(), openai.ToolMessage("sunny", m.ToolCalls[0].ID))
		}
		return fmt.Errorf("no final answer")
	}
	if err := converse("deepseek-restored"); err != nil {
		t.Fatalf("with restore: %v\nlast request: %s", err, s.LastRequest())
	}
	if !strings.Contains(string(s.LastRequest()), `"reasoning_content":"Thinking, step 2."`) {
		t.Errorf("reasoning not restored upstream: %s", s.LastRequest())
	}
	err := converse("deepseek-plain")
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || !strings.Contains(apiErr.Message, "must be passed back to the API") {
		t.Fatalf("without restore: err = %v", err)
	}
	if n := e.Metric(t, "toolgate_reasoning_restores_total", nil); n != 3 {
		t.Errorf("restores counted: %v, want 3 (1 on turn two, 2 on turn three)", n)
	}
}

// An upstream that refuses a forced tool_choice while thinking: the route
// either sends "auto" and lets the policy enforce "required", or turns
// thinking off; either way the client gets its call.
func TestForcedToolChoiceUnderThinking(t *testing.T) {
	e, s := gatewaytest.StartSim(t, sim.Options{}, `
upstreams:
  - {name: ds, url: "UPSTREAM_URL/v1", refuses_forced_tool_choice: true}
  - {name: naive, url: "UPSTREAM_URL/v1"}
routes:
  - {model: deepseek-auto, upstream: ds, reasoning: {format: thinking, level: high}}
  - {model: deepseek-off, upstream: ds, reasoning: {format: thinking, level: high, forced_tool_choice: disable_thinking}}
  - {model: deepseek-naive, upstream: naive, reasoning: {format: thinking, level: high}}
`)
	for model, sent := range map[string]string{"deepseek-auto": `"tool_choice":"auto"`, "deepseek-off": `"thinking":{"type":"disabled"}`} {
		resp := e.Post(t, `{"model":"`+model+`","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"get_weather"}}],"tool_choice":"required"}`)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(b), `"tool_calls"`) || !strings.Contains(string(s.LastRequest()), sent) {
			t.Errorf("%s: status %d %s\nupstream got %s", model, resp.StatusCode, b, s.LastRequest())
		}
	}
	resp := e.Post(t, `{"model":"deepseek-naive","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"get_weather"}}],"tool_choice":"required"}`)
	body, raw := gatewaytest.ReadError(t, resp)
	if resp.StatusCode != 400 || !strings.Contains(body.Error.Message, "Thinking may not be enabled") {
		t.Errorf("naive: %d %s", resp.StatusCode, raw)
	}
}

// A restore miss is counted and logged; with on_miss: disable_thinking the
// request goes with thinking off instead of as it is.
func TestReasoningRestoreMiss(t *testing.T) {
	e, s := gatewaytest.StartSim(t, sim.Options{}, `
upstreams: [{name: ds, url: "UPSTREAM_URL/v1", restore_reasoning: true}]
routes:
  - {model: deepseek-send, upstream: ds, reasoning: {format: thinking, level: high}}
  - {model: deepseek-off, upstream: ds, reasoning: {format: thinking, level: high, on_miss: disable_thinking}}
`)
	body := func(model string) string {
		return `{"model":"` + model + `","messages":[{"role":"user","content":"x"},` +
			`{"role":"assistant","content":null,"tool_calls":[{"id":"unknown","type":"function","function":{"name":"get_weather","arguments":"{}"}}]},` +
			`{"role":"tool","tool_call_id":"unknown","content":"r"}]}`
	}
	resp := e.Post(t, body("deepseek-send"))
	resp.Body.Close()
	if !strings.Contains(string(s.LastRequest()), `"thinking":{"type":"enabled"}`) {
		t.Errorf("send: %s", s.LastRequest())
	}
	resp = e.Post(t, body("deepseek-off"))
	resp.Body.Close()
	if !strings.Contains(string(s.LastRequest()), `"thinking":{"type":"disabled"}`) {
		t.Errorf("disable_thinking: %s", s.LastRequest())
	}
	if a := e.WaitAccess(t, 2); gatewaytest.WithField(a, "reasoning_restore_misses", int64(1)) == nil {
		t.Errorf("no miss logged: %v", a)
	}
}
