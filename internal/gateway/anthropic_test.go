package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"

	"github.com/toolgate/toolgate/internal/sim"
	"github.com/toolgate/toolgate/internal/testing/gatewaytest"
)

// claudeEnv runs the gateway in front of the simulator's Anthropic mode:
// "think-*" routes think (a low reasoning level: a 1024-token budget),
// every other model is sent as it is named, retried once.
func claudeEnv(t *testing.T) (*gatewaytest.Env, *sim.Sim) {
	return gatewaytest.StartSim(t, sim.Options{}, `
upstreams: [{name: claude, protocol: anthropic, url: "UPSTREAM_URL/v1", api_key: "${UPSTREAM_KEY}"}]
routes:
  - {name: think, model: "think-*", upstream: claude, reasoning: {format: thinking-budget, level: low}}
  - {name: claude, model: "*", upstream: claude, retries: 1, retry_backoff: 1ms}
`)
}

var weatherTool = []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
	Name: "get_weather", Parameters: shared.FunctionParameters{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}},
})}

// Text, a streamed tool call and two parallel calls reach openai-go as
// chat completions: the text whole, one call per tool_use block with its
// id and arguments, dense indexes, Anthropic's stop reasons as finish
// reasons, its usage (cache reads included) as OpenAI's.
func TestAnthropicStreams(t *testing.T) {
	e, s := claudeEnv(t)
	text := accumulate(t, e, openai.ChatCompletionNewParams{Model: "claude-text", Messages: gatewaytest.UserMsg("hi"),
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}})
	if text.err != nil || !strings.HasPrefix(text.msg.Content, "Hello from the toolgate simulator") || text.finish != "stop" || text.usage != 37 {
		t.Fatalf("text: err %v, content %q, finish %q, usage %d", text.err, text.msg.Content, text.finish, text.usage)
	}
	var sent map[string]any
	if err := json.Unmarshal(s.LastRequest(), &sent); err != nil || sent["max_tokens"] != float64(4096) || s.LastHeader().Get("anthropic-version") != "2023-06-01" ||
		s.LastHeader().Get("x-api-key") != gatewaytest.UpstreamKey || s.LastHeader().Get("Authorization") != "" {
		t.Errorf("sent %s with headers %v", s.LastRequest(), s.LastHeader())
	}
	tool := accumulate(t, e, openai.ChatCompletionNewParams{Model: "claude-tool", Messages: gatewaytest.UserMsg("weather?"), Tools: weatherTool})
	if tool.err != nil || tool.finish != "tool_calls" || len(tool.msg.ToolCalls) != 1 || !strings.HasPrefix(tool.msg.ToolCalls[0].ID, "toolu_sim_") ||
		tool.msg.ToolCalls[0].Function.Name != "get_weather" || tool.msg.ToolCalls[0].Function.Arguments != `{"city":"Paris"}` {
		t.Fatalf("tool: err %v, finish %q, calls %+v", tool.err, tool.finish, tool.msg.ToolCalls)
	}
	par := accumulate(t, e, openai.ChatCompletionNewParams{Model: "claude-parallel", Messages: gatewaytest.UserMsg("weather?"), Tools: weatherTool})
	if par.err != nil || par.finish != "tool_calls" || len(par.msg.ToolCalls) != 2 || par.msg.Content != "Checking both." ||
		par.msg.ToolCalls[1].Function.Arguments != `{"city":"Rome"}` || par.msg.ToolCalls[0].ID == par.msg.ToolCalls[1].ID {
		t.Fatalf("parallel: err %v, finish %q, content %q, calls %+v", par.err, par.finish, par.msg.Content, par.msg.ToolCalls)
	}
	whole, err := e.Client("k").Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "claude-parallel", Messages: gatewaytest.UserMsg("weather?"), Tools: weatherTool})
	if err != nil || whole.Choices[0].FinishReason != "tool_calls" || len(whole.Choices[0].Message.ToolCalls) != 2 || whole.Usage.PromptTokens != 25 || whole.Usage.PromptTokensDetails.CachedTokens != 5 {
		t.Fatalf("non-streamed: %v %+v", err, whole)
	}
}

// A three-turn tool conversation with thinking whose client drops the
// reasoning from its history: the thinking blocks, signatures unchanged,
// are put back before the calls of their turn (the simulator checks the
// signatures and that the last tool turn starts with its thinking), and
// the client gets the thinking text in reasoning_content.
func TestAnthropicThinkingRestored(t *testing.T) {
	e, s := claudeEnv(t)
	history := gatewaytest.UserMsg("weather in Paris, then Rome?")
	for turn := 1; turn <= 3; turn++ {
		r := accumulate(t, e, openai.ChatCompletionNewParams{Model: "think-toolloop", Messages: history, Tools: weatherTool})
		if r.err != nil {
			t.Fatalf("turn %d: %v", turn, r.err)
		}
		if got := deltaField(t, r.raw, "reasoning_content"); !strings.HasPrefix(got, "Thinking about it, step") {
			t.Errorf("turn %d: reasoning %q", turn, got)
		}
		if turn == 3 {
			if r.finish != "stop" || !strings.HasPrefix(r.msg.Content, "Hello") {
				t.Fatalf("turn 3: finish %q, content %q", r.finish, r.msg.Content)
			}
			break
		}
		if r.finish != "tool_calls" || len(r.msg.ToolCalls) != 1 {
			t.Fatalf("turn %d: finish %q, %d calls", turn, r.finish, len(r.msg.ToolCalls))
		}
		// The client keeps the call, not the reasoning.
		history = append(history, r.msg.ToParam(), openai.ToolMessage("sunny", r.msg.ToolCalls[0].ID))
	}
	var sent struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"` // a user's text may be a string
		} `json:"messages"`
	}
	if err := json.Unmarshal(s.LastRequest(), &sent); err != nil {
		t.Fatal(err)
	}
	thoughts := 0
	for _, m := range sent.Messages {
		var blocks []struct{ Type, Signature string }
		if m.Role == "assistant" && json.Unmarshal(m.Content, &blocks) == nil && blocks[0].Type == "thinking" && blocks[0].Signature != "" {
			thoughts++
		}
	}
	if thoughts != 2 {
		t.Errorf("%d assistant turns sent with their thinking: %s", thoughts, s.LastRequest())
	}
}

// Anthropic's failures through the gateway: an overloaded upstream (529)
// is retried, then answered 503; a stream cut after it started ends with
// an error event; Anthropic's 400 reaches the client with its message.
func TestAnthropicErrors(t *testing.T) {
	e, s := claudeEnv(t)
	before := s.Requests()
	resp := e.Post(t, `{"model":"claude-error-529","messages":[{"role":"user","content":"hi"}]}`)
	body, raw := gatewaytest.ReadError(t, resp)
	if resp.StatusCode != http.StatusServiceUnavailable || body.Error.Code == nil || *body.Error.Code != "upstream_unavailable" || s.Requests()-before != 2 {
		t.Fatalf("529: %d %s after %d attempts", resp.StatusCode, raw, s.Requests()-before)
	}
	cut := accumulate(t, e, openai.ChatCompletionNewParams{Model: "claude-cut-text", Messages: gatewaytest.UserMsg("hi")})
	if cut.err == nil || !strings.Contains(cut.err.Error(), "upstream_stream_incomplete") {
		t.Fatalf("cut: %v", cut.err)
	}
	mid := e.Post(t, `{"model":"claude-midstream-text","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	b, _ := io.ReadAll(mid.Body)
	mid.Body.Close()
	if !strings.Contains(string(b), `"message":"The upstream claude reported an error: Overloaded"`) || strings.Contains(string(b), "[DONE]") || !strings.Contains(string(b), "Hello") {
		t.Fatalf("an error event mid-stream reached the client as:\n%s", b)
	}
	resp = e.Post(t, `{"model":"claude-text","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"bad/name"}}]}`)
	body, raw = gatewaytest.ReadError(t, resp)
	if resp.StatusCode != 400 || !strings.Contains(body.Error.Message, "tools.0.custom.name: String should match pattern") {
		t.Fatalf("400: %d %s", resp.StatusCode, raw)
	}
}

// A forced tool choice: "required" becomes Anthropic's "any" and the call
// comes; on a thinking route, where Anthropic refuses a forced choice, it
// is sent as "auto" and the completion policy still holds the answer to
// the forced call.
func TestAnthropicForcedToolChoice(t *testing.T) {
	e, s := claudeEnv(t)
	required := openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String("required")}
	r := accumulate(t, e, openai.ChatCompletionNewParams{Model: "claude-tool", Messages: gatewaytest.UserMsg("weather?"), Tools: weatherTool, ToolChoice: required})
	if r.err != nil || len(r.msg.ToolCalls) != 1 || !strings.Contains(string(s.LastRequest()), `"tool_choice":{"type":"any"}`) {
		t.Fatalf("required: err %v, %d calls, sent %s", r.err, len(r.msg.ToolCalls), s.LastRequest())
	}
	named := openai.ChatCompletionToolChoiceOptionUnionParam{OfFunctionToolChoice: &openai.ChatCompletionNamedToolChoiceParam{Function: openai.ChatCompletionNamedToolChoiceFunctionParam{Name: "get_weather"}}}
	r = accumulate(t, e, openai.ChatCompletionNewParams{Model: "think-tool", Messages: gatewaytest.UserMsg("weather?"), Tools: weatherTool, ToolChoice: named})
	if r.err != nil || len(r.msg.ToolCalls) != 1 || !strings.Contains(string(s.LastRequest()), `"thinking":{"type":"enabled","budget_tokens":1024}`) || strings.Contains(string(s.LastRequest()), `"tool_choice":{"type":"tool"`) {
		t.Fatalf("named while thinking: err %v, %d calls, sent %s", r.err, len(r.msg.ToolCalls), s.LastRequest())
	}
	r = accumulate(t, e, openai.ChatCompletionNewParams{Model: "think-text", Messages: gatewaytest.UserMsg("weather?"), Tools: weatherTool, ToolChoice: named})
	if r.err == nil || !strings.Contains(r.err.Error(), "completion_policy_violation") {
		t.Fatalf("a forced call answered with text: %v", r.err)
	}
}

// The same thinking tool conversation with a broken transcript — a reply
// that answers nothing, a call that was never answered — is repaired
// before it is translated, and Anthropic's pairing rules (the
// simulator's) accept it.
func TestAnthropicBrokenTranscript(t *testing.T) {
	e, s := claudeEnv(t)
	first := accumulate(t, e, openai.ChatCompletionNewParams{Model: "think-toolloop", Messages: gatewaytest.UserMsg("weather?"), Tools: weatherTool})
	if first.err != nil || len(first.msg.ToolCalls) != 1 {
		t.Fatalf("first turn: %v %+v", first.err, first.msg)
	}
	history := append(gatewaytest.UserMsg("weather?"), openai.ToolMessage("stale", "toolu_gone"), first.msg.ToParam(), openai.UserMessage("still there?"))
	resp, err := e.Client("k").Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "think-toolloop", Messages: history, Tools: weatherTool})
	if err != nil {
		t.Fatalf("broken transcript: %v (sent %s)", err, s.LastRequest())
	}
	if len(resp.Choices[0].Message.ToolCalls) != 1 && resp.Choices[0].Message.Content == "" {
		t.Errorf("answer %+v", resp.Choices[0].Message)
	}
	sent := string(s.LastRequest())
	if strings.Contains(sent, "toolu_gone") || !strings.Contains(sent, `"tool_use_id":"`+first.msg.ToolCalls[0].ID+`"`) || !strings.Contains(sent, "never completed") {
		t.Errorf("sent %s", sent)
	}
}

// A reloaded conversation whose last assistant turn is a tool call the
// gateway holds no thinking for (it came from another model), with the
// call's result and then a user message: Anthropic's rule is about the
// final assistant message, so thinking is turned off for the request —
// recorded as off — and the strict simulator accepts it.
func TestAnthropicUnthoughtFinalTurn(t *testing.T) {
	e, s := claudeEnv(t)
	body := `{"model":"think-toolloop","tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}],"messages":[` +
		`{"role":"user","content":"weather?"},` +
		`{"role":"assistant","content":null,"tool_calls":[{"id":"toolu_elsewhere","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},` +
		`{"role":"tool","tool_call_id":"toolu_elsewhere","content":"sunny"},` +
		`{"role":"user","content":"and tomorrow?"}]}`
	resp, b := e.Do(t, http.MethodPost, "/v1/chat/completions", body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%d %s (sent %s)", resp.StatusCode, b, s.LastRequest())
	}
	if strings.Contains(string(s.LastRequest()), `"thinking"`) {
		t.Errorf("sent with thinking: %s", s.LastRequest())
	}
	if gatewaytest.WithField(e.WaitAccess(t, 1), "reasoning", "off") == nil {
		t.Errorf("no access line with reasoning off: %v", e.Access())
	}
}

// A call nothing answered reaches an Anthropic upstream sealed as a failed
// result — the seal's sentence with is_error: true, as Anthropic marks a
// tool that failed or was interrupted — whether a Messages client or a chat
// client sent the transcript (docs/spec.md §1.4, §9; docs/quirks.md C09);
// a chat completions upstream gets the seal's JSON content, without
// is_error (the scope guard).
func TestSealedResultToAnthropic(t *testing.T) {
	e, s := gatewaytest.StartSim(t, sim.Options{}, `
upstreams:
  - {name: claude, protocol: anthropic, url: "UPSTREAM_URL/v1"}
  - {name: openai, url: "UPSTREAM_URL/v1"}
routes:
  - {name: chat, model: "sim-*", upstream: openai}
  - {name: claude, model: "*", upstream: claude}
`)
	sealed := `{"type":"tool_result","tool_use_id":"toolu_1","content":"This tool call was never completed — the session was reloaded or the history was trimmed.","is_error":true}`
	messages := `{"model":"claude-text","max_tokens":1024,"tools":[{"name":"get_weather","input_schema":{"type":"object"}}],"messages":[` +
		`{"role":"user","content":"weather?"},{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Paris"}}]},` +
		`{"role":"user","content":"never mind"}]}`
	chat := `{"model":"%s","tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}],"messages":[` +
		`{"role":"user","content":"weather?"},{"role":"assistant","content":null,"tool_calls":[{"id":"toolu_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},` +
		`{"role":"user","content":"never mind"}]}`
	for _, tc := range []struct{ name, path, body, want, not string }{
		{"Messages client", "/v1/messages", messages, sealed, ""},
		{"chat client", "/v1/chat/completions", fmt.Sprintf(chat, "claude-text"), sealed, ""},
		{"chat client, chat upstream", "/v1/chat/completions", fmt.Sprintf(chat, "sim-text"),
			`{"role":"tool","content":"{\"success\":false,\"error\":\"This tool call was never completed — the session was reloaded or the history was trimmed.\"}","tool_call_id":"toolu_1"}`, "is_error"},
	} {
		resp, b := e.Do(t, http.MethodPost, tc.path, tc.body)
		sent := string(s.LastRequest())
		if resp.StatusCode != 200 || resp.Header.Get("X-Toolgate-Repair") != "sealed=1; dropped=0; moved=0" {
			t.Errorf("%s: %d %s", tc.name, resp.StatusCode, b)
		}
		if !strings.Contains(sent, tc.want) || tc.not != "" && strings.Contains(sent, tc.not) {
			t.Errorf("%s: the upstream got\n%s\nwant it to hold\n%s", tc.name, sent, tc.want)
		}
	}
}
