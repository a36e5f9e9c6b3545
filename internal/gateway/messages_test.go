package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	aoption "github.com/anthropics/anthropic-sdk-go/option"

	"github.com/toolgate/toolgate/internal/sim"
	"github.com/toolgate/toolgate/internal/testing/gatewaytest"
)

// messagesEnv runs the gateway in front of the simulator: "claude-*" and
// "think-*" go to its Anthropic mode (strict: Anthropic's own rules),
// "think-*" with thinking on; every other model to its chat completions
// mode (sim-deepseek with reasoning, sim-q-* with quirks). Clients use the
// official Anthropic SDK for Go.
func messagesEnv(t *testing.T, yaml ...string) (*gatewaytest.Env, *sim.Sim, anthropic.Client) {
	cfg := messagesConfig
	if len(yaml) > 0 {
		cfg = yaml[0]
	}
	e, s := gatewaytest.StartSim(t, sim.Options{}, cfg)
	c := anthropic.NewClient(aoption.WithBaseURL("http://"+e.Addr+"/"), aoption.WithAPIKey("client-key"), aoption.WithMaxRetries(0))
	return e, s, c
}

const messagesConfig = `
upstreams:
  - {name: claude, protocol: anthropic, url: "UPSTREAM_URL/v1", api_key: "${UPSTREAM_KEY}"}
  - {name: sim, url: "UPSTREAM_URL/v1"}
routes:
  - {name: think, model: "think-*", upstream: claude, reasoning: {format: thinking-budget, level: low}}
  - {name: claude, model: "claude-*", upstream: claude, retries: 1, retry_backoff: 1ms, hosted_tools: [web_search]}
  - {name: other, model: "*", upstream: sim}
`

var messagesTools = []anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{Name: "get_weather",
	InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{"city": map[string]any{"type": "string"}}}}}}

// streamMessage streams one request and accumulates it with the SDK's own
// accumulator (which checks the event sequence).
func streamMessage(t *testing.T, c anthropic.Client, params anthropic.MessageNewParams, opts ...aoption.RequestOption) (anthropic.Message, error) {
	t.Helper()
	stream := c.Messages.NewStreaming(context.Background(), params, opts...)
	defer stream.Close() // a stream that ended in an error may not have been read to its end
	var msg anthropic.Message
	for stream.Next() {
		if err := msg.Accumulate(stream.Current()); err != nil {
			return msg, err
		}
	}
	return msg, stream.Err()
}

func userText(s string) []anthropic.MessageParam {
	return []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(s))}
}

// blocksOf lists a message's content block types.
func blocksOf(m anthropic.Message) string {
	var types []string
	for _, b := range m.Content {
		types = append(types, b.Type)
	}
	return strings.Join(types, " ")
}

// Through an Anthropic upstream: text, a streamed tool use, parallel tool
// uses, streamed and whole, the SDK's accumulator taking every event;
// stop reasons and usage as Anthropic's.
func TestMessagesAnthropicUpstream(t *testing.T) {
	_, s, c := messagesEnv(t)
	text, err := streamMessage(t, c, anthropic.MessageNewParams{Model: "claude-text", MaxTokens: 1024, Messages: userText("hi")})
	if err != nil || blocksOf(text) != "text" || !strings.HasPrefix(text.Content[0].Text, "Hello") || text.StopReason != "end_turn" ||
		text.Usage.InputTokens != 20 || text.Usage.CacheReadInputTokens != 5 || text.Usage.OutputTokens != 12 {
		t.Fatalf("text: %v %s %+v", err, blocksOf(text), text.Usage)
	}
	tool, err := streamMessage(t, c, anthropic.MessageNewParams{Model: "claude-tool", MaxTokens: 1024, Messages: userText("weather?"), Tools: messagesTools})
	if err != nil || blocksOf(tool) != "tool_use" || tool.StopReason != "tool_use" || tool.Content[0].Name != "get_weather" || string(tool.Content[0].Input) != `{"city":"Paris"}` {
		t.Fatalf("tool: %v %s %+v", err, blocksOf(tool), tool.Content)
	}
	par, err := c.Messages.New(context.Background(), anthropic.MessageNewParams{Model: "claude-parallel", MaxTokens: 1024, Messages: userText("weather?"), Tools: messagesTools})
	if err != nil || blocksOf(*par) != "text tool_use tool_use" || par.Content[1].ID == par.Content[2].ID {
		t.Fatalf("parallel, whole: %v %+v", err, par)
	}
	// The tools go as the client declared them (the SDK writes input_schema first).
	if !strings.Contains(string(s.LastRequest()), `"tools":[{"input_schema":{"properties":{"city":{"type":"string"}},"type":"object"},"name":"get_weather"}]`) {
		t.Errorf("sent %s", s.LastRequest())
	}
}

// A thinking tool loop, by Anthropic's rules (the strict simulator:
// signatures, the final turn's thinking), streamed and whole. "keeps": the
// client sends each turn back as the SDK accumulated it, and each step
// goes through a new gateway, whose store is empty: only the signed blocks
// the client was handed (signature_delta, byte for byte) can be accepted.
// "drops": the client leaves its thinking blocks out, and the gateway's
// store puts the signed ones back.
func TestMessagesThinkingLoop(t *testing.T) {
	for _, tc := range []struct {
		name         string
		keep, stream bool
	}{{"keeps, streamed", true, true}, {"keeps, whole", true, false}, {"drops, streamed", false, true}} {
		t.Run(tc.name, func(t *testing.T) {
			s := sim.New(sim.Options{})
			up := httptest.NewServer(s)
			defer up.Close()
			client := func() anthropic.Client {
				e := gatewaytest.Start(t, up.URL, messagesConfig)
				return anthropic.NewClient(aoption.WithBaseURL("http://"+e.Addr+"/"), aoption.WithAPIKey("client-key"), aoption.WithMaxRetries(0))
			}
			c := client()
			history := userText("weather in Paris, then Rome?")
			var signatures []string
			for step := 1; step <= 3; step++ {
				if tc.keep {
					c = client() // nothing of the earlier steps in its store
				}
				params := anthropic.MessageNewParams{Model: "think-toolloop", MaxTokens: 4096, Messages: history, Tools: messagesTools}
				var last anthropic.Message
				var err error
				if tc.stream {
					last, err = streamMessage(t, c, params)
				} else {
					var m *anthropic.Message
					if m, err = c.Messages.New(context.Background(), params); err == nil {
						last = *m
					}
				}
				if err != nil {
					t.Fatalf("step %d: %v (sent %s)", step, err, s.LastRequest())
				}
				if !strings.HasPrefix(blocksOf(last), "thinking ") {
					t.Fatalf("step %d: blocks %s", step, blocksOf(last))
				}
				if step == 3 {
					if blocksOf(last) != "thinking text" || last.StopReason != "end_turn" {
						t.Fatalf("step 3: %s %s", blocksOf(last), last.StopReason)
					}
					break
				}
				if tc.keep && last.Content[0].Signature == "" {
					t.Fatalf("step %d: the client was handed no signature", step)
				}
				signatures = append(signatures, last.Content[0].Signature)
				turn := last.ToParam()
				if !tc.keep {
					turn.Content = turn.Content[1:]
				}
				history = append(history, turn, anthropic.NewUserMessage(anthropic.NewToolResultBlock(last.Content[1].ID, "sunny", false)))
			}
			sent := string(s.LastRequest())
			if n := strings.Count(sent, `"signature":"`); n != 2 {
				t.Errorf("%d signed thinking blocks sent back: %s", n, sent)
			}
			for _, sig := range signatures {
				if tc.keep && !strings.Contains(sent, `"signature":"`+sig+`"`) {
					t.Errorf("the signature %q the client kept was not sent back as it is: %s", sig, sent)
				}
			}
		})
	}
}

// Claude Code-shaped broken transcripts, each refused by Anthropic's rules
// as sent, are repaired before they leave and accepted: an interrupted
// tool use followed by new user text, a result for an unknown tool_use
// id, one tool_use id twice, a tool_result after text.
func TestMessagesBrokenTranscripts(t *testing.T) {
	e, s, _ := messagesEnv(t)
	use := `{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Paris"}}]}`
	for name, msgs := range map[string]string{
		"interrupted tool use": `{"role":"user","content":"weather?"},` + use + `,{"role":"user","content":"never mind, what time is it?"}`,
		"unknown tool_use_id":  `{"role":"user","content":"weather?"},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_gone","content":"x"}]},{"role":"user","content":"hi"}`,
		"duplicate tool_use id": `{"role":"user","content":"weather?"},{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Paris"}},{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Rome"}}]},` +
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"sunny"}]}`,
		"tool_result after text": `{"role":"user","content":"weather?"},` + use + `,{"role":"user","content":[{"type":"text","text":"here:"},{"type":"tool_result","tool_use_id":"toolu_1","content":"sunny"}]}`,
	} {
		body := `{"model":"claude-text","max_tokens":1024,"tools":[{"name":"get_weather","input_schema":{"type":"object"}}],"messages":[` + msgs + `]}`
		resp, b := e.Do(t, http.MethodPost, "/v1/messages", body, "anthropic-version", "2023-06-01")
		if resp.StatusCode != 200 || !strings.Contains(b, `"type":"message"`) {
			t.Errorf("%s: %d %s (sent %s)", name, resp.StatusCode, b, s.LastRequest())
		}
		if name == "interrupted tool use" && !strings.Contains(resp.Header.Get("X-Toolgate-Repair"), "sealed=1") {
			t.Errorf("%s: repair header %q", name, resp.Header.Get("X-Toolgate-Repair"))
		}
	}
}

// Failures reach the SDK as its typed errors: a cut stream raises; an
// overloaded upstream (529) is retried, then an overloaded_error with
// status 529; a bad key is an authentication_error; an Anthropic-only
// beta on a route to another protocol is refused naming it, while Claude
// Code's betas pass.
func TestMessagesErrors(t *testing.T) {
	_, s, c := messagesEnv(t)
	if _, err := streamMessage(t, c, anthropic.MessageNewParams{Model: "claude-cut", MaxTokens: 1024, Messages: userText("hi")}); err == nil {
		t.Error("a cut stream did not raise")
	}
	before := s.Requests()
	_, err := c.Messages.New(context.Background(), anthropic.MessageNewParams{Model: "claude-error-529", MaxTokens: 1024, Messages: userText("hi")})
	var ae *anthropic.Error
	if !errors.As(err, &ae) || ae.StatusCode != 529 || string(ae.Type()) != "overloaded_error" || s.Requests()-before != 2 {
		t.Errorf("529: %v after %d requests", err, s.Requests()-before)
	}
	_, err = c.Messages.New(context.Background(), anthropic.MessageNewParams{Model: "sim-text", MaxTokens: 1024, Messages: userText("hi")},
		aoption.WithHeader("anthropic-beta", "computer-use-2025-01-24"))
	if !errors.As(err, &ae) || ae.StatusCode != 400 || !strings.Contains(ae.Error(), "computer-use-2025-01-24") {
		t.Errorf("beta: %v", err)
	}
	if _, err := c.Messages.New(context.Background(), anthropic.MessageNewParams{Model: "sim-text", MaxTokens: 1024, Messages: userText("hi")},
		aoption.WithHeader("anthropic-beta", "claude-code-20250219,fine-grained-tool-streaming-2025-05-14")); err != nil {
		t.Errorf("Claude Code's betas: %v", err)
	}
	keyed, _, kc := messagesEnv(t, `
keys: [{name: team, sha256: "`+gatewaytest.KeyHash("right-key")+`"}]
upstreams: [{name: claude, protocol: anthropic, url: "UPSTREAM_URL/v1"}]
routes: [{model: "*", upstream: claude}]
`)
	_, err = kc.Messages.New(context.Background(), anthropic.MessageNewParams{Model: "claude-text", MaxTokens: 1024, Messages: userText("hi")})
	if !errors.As(err, &ae) || ae.StatusCode != 401 || string(ae.Type()) != "authentication_error" {
		t.Errorf("bad key: %v", err)
	}
	good := anthropic.NewClient(aoption.WithBaseURL("http://"+keyed.Addr+"/"), aoption.WithAPIKey("right-key"), aoption.WithMaxRetries(0))
	if _, err := good.Messages.New(context.Background(), anthropic.MessageNewParams{Model: "claude-text", MaxTokens: 1024, Messages: userText("hi")}); err != nil {
		t.Errorf("x-api-key: %v", err)
	}
}

// Through a chat completions upstream: text, a tool use, two parallel
// calls the upstream sent both at index 0 arriving as two clean tool_use
// blocks, reasoning as a thinking block; usage and stop reasons mapped.
func TestMessagesOpenAIUpstream(t *testing.T) {
	_, s, c := messagesEnv(t)
	text, err := streamMessage(t, c, anthropic.MessageNewParams{Model: "sim-text", MaxTokens: 1024, Messages: userText("hi")})
	if err != nil || blocksOf(text) != "text" || text.StopReason != "end_turn" || text.Usage.OutputTokens == 0 {
		t.Fatalf("text: %v %s %+v", err, blocksOf(text), text.Usage)
	}
	if !strings.Contains(string(s.LastRequest()), `"max_tokens":1024`) || !strings.Contains(string(s.LastRequest()), `"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]`) {
		t.Errorf("sent %s", s.LastRequest())
	}
	quirky, err := streamMessage(t, c, anthropic.MessageNewParams{Model: "sim-q-sameindex", MaxTokens: 1024, Messages: userText("weather?"), Tools: messagesTools})
	if err != nil || blocksOf(quirky) != "tool_use tool_use" || quirky.StopReason != "tool_use" || quirky.Content[0].ID == quirky.Content[1].ID ||
		string(quirky.Content[1].Input) != `{"city":"Rome"}` {
		t.Fatalf("two calls at index 0: %v %s %+v", err, blocksOf(quirky), quirky.Content)
	}
	reasoning, err := streamMessage(t, c, anthropic.MessageNewParams{Model: "sim-deepseek", MaxTokens: 1024, Messages: userText("weather?"), Tools: messagesTools})
	if err != nil || blocksOf(reasoning) != "thinking tool_use" || !strings.HasPrefix(reasoning.Content[0].Thinking, "Thinking") {
		t.Fatalf("reasoning: %v %s %+v", err, blocksOf(reasoning), reasoning.Content)
	}
	whole, err := c.Messages.New(context.Background(), anthropic.MessageNewParams{Model: "sim-tool", MaxTokens: 1024, Messages: userText("weather?"), Tools: messagesTools})
	if err != nil || whole.StopReason != "tool_use" || blocksOf(*whole) != "tool_use" {
		t.Fatalf("whole: %v %+v", err, whole)
	}
}

// count_tokens: from the Anthropic upstream's own endpoint, else the
// gateway's estimate. A block the chat model has no slot for (a
// document) is counted as the client sent it.
func TestMessagesCountTokens(t *testing.T) {
	e, s, c := messagesEnv(t)
	params := anthropic.MessageCountTokensParams{Model: "claude-text", Messages: userText("how many tokens is this?")}
	n, err := c.Messages.CountTokens(context.Background(), params)
	var sent map[string]any
	_ = json.Unmarshal(s.LastRequest(), &sent)
	if err != nil || n.InputTokens == 0 || sent["max_tokens"] != nil || sent["messages"] == nil {
		t.Fatalf("anthropic: %v %+v (sent %s)", err, n, s.LastRequest())
	}
	document := `{"type":"document","source":{"type":"text","media_type":"text/plain","data":"the whole report"},"title":"report"}`
	resp, body := e.Do(t, "POST", "/v1/messages/count_tokens", `{"model":"claude-text","messages":[{"role":"user","content":[`+document+`,{"type":"text","text":"how long?"}]}]}`,
		"x-api-key", "client-key", "anthropic-version", "2023-06-01")
	if resp.StatusCode != 200 || !strings.Contains(string(s.LastRequest()), `"content":[`+document+`,{"type":"text","text":"how long?"}]`) {
		t.Errorf("a document counted: %d %s (sent %s)", resp.StatusCode, body, s.LastRequest())
	}
	before := s.Requests()
	params.Model = "sim-text"
	n, err = c.Messages.CountTokens(context.Background(), params)
	if err != nil || n.InputTokens == 0 || s.Requests() != before {
		t.Fatalf("estimate: %v %+v, %d requests upstream", err, n, s.Requests()-before)
	}
}

// Through an Anthropic upstream, block for block: Anthropic's web search
// server tool is declared and used (server_tool_use, its
// web_search_tool_result, text with a citation reach the SDK, streamed
// and whole), and the turn sent back as the SDK keeps it reaches the
// strict simulator as the client sent it — which checks each result's
// encrypted_content and that the result follows its use.
func TestMessagesServerTools(t *testing.T) {
	_, s, c := messagesEnv(t)
	search := []anthropic.ToolUnionParam{{OfWebSearchTool20250305: &anthropic.WebSearchTool20250305Param{MaxUses: anthropic.Int(2)}}}
	for _, stream := range []bool{true, false} {
		history := userText("weather in Paris today?")
		params := anthropic.MessageNewParams{Model: "claude-search", MaxTokens: 1024, Messages: history, Tools: append(search, messagesTools...)}
		var msg anthropic.Message
		var err error
		if stream {
			msg, err = streamMessage(t, c, params)
		} else {
			var m *anthropic.Message
			if m, err = c.Messages.New(context.Background(), params); err == nil {
				msg = *m
			}
		}
		if err != nil || blocksOf(msg) != "server_tool_use web_search_tool_result text" {
			t.Fatalf("stream %v: %v %s (sent %s)", stream, err, blocksOf(msg), s.LastRequest())
		}
		if len(msg.Content[2].Citations) != 1 || msg.Content[2].Citations[0].URL != "https://weather.example/paris" || msg.Content[0].Name != "web_search" ||
			!strings.Contains(string(msg.Content[0].Input), "weather in Paris") {
			t.Errorf("stream %v: %+v", stream, msg.Content)
		}
		if sent := string(s.LastRequest()); !strings.Contains(sent, `{"max_uses":2,"name":"web_search","type":"web_search_20250305"}`) {
			t.Errorf("the server tool was not declared as the client declared it: %s", sent)
		}
		params.Messages = append(history, msg.ToParam(), anthropic.NewUserMessage(anthropic.NewTextBlock("and tomorrow?")))
		params.Model = "claude-text"
		next, err := c.Messages.New(context.Background(), params)
		if err != nil || next.StopReason != "end_turn" {
			t.Fatalf("stream %v, the turn sent back: %v (sent %s)", stream, err, s.LastRequest())
		}
		if sent := string(s.LastRequest()); !strings.Contains(sent, `"type":"server_tool_use"`) || !strings.Contains(sent, `"encrypted_content":"Ev`) {
			t.Errorf("stream %v: the server blocks were not sent back: %s", stream, sent)
		}
	}
}

// What the chat model has no slot for goes to an Anthropic upstream as
// the client sent it: a tool_result with an image, is_error and
// cache_control (what Claude Code sends after reading an image), a
// document block, members such as service_tier — while repair still
// applies to the turns it must change. A chat client cannot send the
// gateway's own members to get the same.
func TestMessagesBlockForBlock(t *testing.T) {
	e, s, _ := messagesEnv(t)
	result := `{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"the chart"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBOR"}}],"is_error":true,"cache_control":{"type":"ephemeral"}}`
	document := `{"type":"document","source":{"type":"base64","media_type":"application/pdf","data":"JVBERi0"},"title":"report.pdf"}`
	use := `{"role":"assistant","content":[{"type":"text","text":"Reading it."},{"type":"tool_use","id":"toolu_1","name":"read","input":{"path":"chart.png"}}]}`
	body := `{"model":"claude-text","max_tokens":1024,"service_tier":"auto","tools":[{"name":"read","input_schema":{"type":"object"},"cache_control":{"type":"ephemeral"}}],"messages":[` +
		`{"role":"user","content":[{"type":"text","text":"read chart.png"},` + document + `]},` + use + `,{"role":"user","content":[` + result + `,{"type":"text","text":"what does it show?"}]}]}`
	resp, b := e.Do(t, http.MethodPost, "/v1/messages", body, "anthropic-version", "2023-06-01")
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s (sent %s)", resp.StatusCode, b, s.LastRequest())
	}
	sent := string(s.LastRequest())
	for _, want := range []string{result, document, `"service_tier":"auto"`, `"cache_control":{"type":"ephemeral"}}]`,
		`{"type":"text","text":"Reading it."},{"type":"tool_use","id":"toolu_1","name":"read","input":{"path":"chart.png"}}`} {
		if !strings.Contains(sent, want) {
			t.Errorf("not sent as the client sent it: %s\nin %s", want, sent)
		}
	}
	// Repair: the interrupted tool use is sealed (the turn after it is
	// the gateway's), the kept blocks of the others still go as sent.
	interrupted := `{"model":"claude-text","max_tokens":1024,"messages":[{"role":"user","content":[` + document + `]},` + use + `,{"role":"user","content":"never mind"}]}`
	resp, b = e.Do(t, http.MethodPost, "/v1/messages", interrupted, "anthropic-version", "2023-06-01")
	if resp.StatusCode != 200 || !strings.Contains(resp.Header.Get("X-Toolgate-Repair"), "sealed=1") || !strings.Contains(string(s.LastRequest()), document) {
		t.Errorf("repaired: %d %s %q (sent %s)", resp.StatusCode, b, resp.Header.Get("X-Toolgate-Repair"), s.LastRequest())
	}
	// A chat client's own members are dropped, not forwarded.
	resp, b = e.Do(t, http.MethodPost, "/v1/chat/completions", `{"model":"claude-text","messages":[{"role":"user","content":"hi","toolgate_blocks":[`+document+`]}],`+
		`"toolgate_request":{"service_tier":"priority","tools":[{"type":"web_search_20250305","name":"web_search"}]}}`)
	if sent := string(s.LastRequest()); resp.StatusCode != 200 || strings.Contains(sent, "priority") || strings.Contains(sent, "web_search") || strings.Contains(sent, "document") {
		t.Errorf("a chat client's own members: %d %s (sent %s)", resp.StatusCode, b, sent)
	}
}

// What an inbound translator keeps for an upstream of its own protocol
// (the client's blocks and items, its other members, thinking blocks)
// never reaches an upstream of another protocol: a Messages request whose
// Anthropic route fails falls back to a chat completions route and to a
// Responses route, a Responses request whose Responses route fails to a
// chat completions route and to an Anthropic route; each is answered,
// and no upstream body carries the gateway's own members or the other
// API's.
func TestOwnMembersNotSentElsewhere(t *testing.T) {
	e, s := gatewaytest.StartSim(t, sim.Options{}, `
upstreams:
  - {name: claude, protocol: anthropic, url: "UPSTREAM_URL/v1"}
  - {name: oai, protocol: responses, url: "UPSTREAM_URL/v1"}
  - {name: sim, url: "UPSTREAM_URL/v1"}
routes:
  - {name: claude-chat, model: "claude-error-529-chat", upstream: claude, fallbacks: [chat]}
  - {name: claude-resp, model: "claude-error-529-resp", upstream: claude, fallbacks: [resp]}
  - {name: oai-chat, model: "oai-error-500-chat", upstream: oai, fallbacks: [chat]}
  - {name: oai-anth, model: "oai-error-500-anth", upstream: oai, fallbacks: [anth]}
  - {name: chat, model: "fallback-chat", upstream: sim, upstream_model: "sim-text"}
  - {name: resp, model: "fallback-resp", upstream: oai, upstream_model: "text"}
  - {name: anth, model: "fallback-anth", upstream: claude, upstream_model: "claude-text"}
`)
	messages := func(model string) string {
		return `{"model":"` + model + `","max_tokens":100,"service_tier":"auto","messages":[{"role":"user","content":[{"type":"text","text":"hi"}]},` +
			`{"role":"assistant","content":[{"type":"text","text":"yo"}]},{"role":"user","content":"again"}]}`
	}
	responses := func(model string) string {
		return `{"model":"` + model + `","truncation":"auto","input":[{"role":"user","content":"hi"},{"type":"message","role":"assistant","content":[{"type":"output_text","text":"yo"}]},{"role":"user","content":"again"}]}`
	}
	for _, tc := range []struct{ path, body, upstreamModel string }{
		{"/v1/messages", messages("claude-error-529-chat"), "sim-text"},
		{"/v1/messages", messages("claude-error-529-resp"), "text"},
		{"/v1/responses", responses("oai-error-500-chat"), "sim-text"},
		{"/v1/responses", responses("oai-error-500-anth"), "claude-text"},
	} {
		resp, b := e.Do(t, http.MethodPost, tc.path, tc.body, "anthropic-version", "2023-06-01")
		if sent := string(s.LastRequest()); resp.StatusCode != 200 || !strings.Contains(sent, `"model":"`+tc.upstreamModel+`"`) || strings.Contains(sent, "toolgate_") ||
			strings.Contains(sent, "service_tier") || strings.Contains(sent, "truncation") {
			t.Errorf("%s to %s: %d %s (the upstream got %s)", tc.path, tc.upstreamModel, resp.StatusCode, b, sent)
		}
	}
}

// Anthropic's error types survive to a Messages client (docs/spec.md §8):
// an error event in the middle of an Anthropic stream keeps its type, so
// that Anthropic's Go SDK raises an *anthropic.Error of that type
// (overloaded_error, rate_limit_error, api_error, invalid_request_error,
// …); a whole answer's error has the type and status Anthropic gives it
// (529 for overloaded_error) — but for the upstream refusing the
// gateway's own credentials or billing, which is an api_error of the
// gateway's (502), not the client key's. A chat completions upstream's
// error object named invalid_request_error is not taken for the Messages
// API's type (the scope guard): its client gets api_error.
func TestMessagesErrorTypes(t *testing.T) {
	e, _, c := messagesEnv(t)
	for _, typ := range []string{"overloaded_error", "rate_limit_error", "api_error", "invalid_request_error", "timeout_error", "not_found_error"} {
		_, err := streamMessage(t, c, anthropic.MessageNewParams{Model: anthropic.Model("claude-midstream-" + typ), MaxTokens: 1024, Messages: userText("hi")})
		var ae *anthropic.Error
		if !errors.As(err, &ae) || string(ae.Type()) != typ {
			t.Errorf("mid-stream %s: the SDK raised %v", typ, err)
		}
	}
	for _, tc := range []struct {
		status     int
		wantStatus int
		typ        string
	}{{400, 400, "invalid_request_error"}, {404, 404, "not_found_error"}, {413, 413, "request_too_large"}, {429, 429, "rate_limit_error"},
		{500, 502, "api_error"}, {504, 504, "timeout_error"}, {529, 529, "overloaded_error"},
		{401, 502, "api_error"}, {403, 502, "api_error"}, {402, 502, "api_error"}} {
		_, err := c.Messages.New(context.Background(), anthropic.MessageNewParams{Model: anthropic.Model(fmt.Sprintf("claude-error-%d", tc.status)), MaxTokens: 1024, Messages: userText("hi")})
		var ae *anthropic.Error
		if !errors.As(err, &ae) || ae.StatusCode != tc.wantStatus || string(ae.Type()) != tc.typ {
			t.Errorf("whole %d: the SDK raised %v, want %d %s", tc.status, err, tc.wantStatus, tc.typ)
		}
	}
	body := `{"model":"sim-q-errorevent","max_tokens":1024,"stream":true,"messages":[{"role":"user","content":"hi"}]}`
	if _, b := e.Do(t, http.MethodPost, "/v1/messages", body); !strings.Contains(b, `"type":"api_error"`) {
		t.Errorf("a chat upstream's error event reached the Messages client as\n%s", b)
	}
	groq := strings.Replace(body, "sim-q-errorevent", "sim-q-toolusefailed", 1)
	if _, b := e.Do(t, http.MethodPost, "/v1/messages", groq); !strings.Contains(b, `"type":"api_error"`) || !strings.Contains(b, "Failed to call a function") {
		t.Errorf("a chat upstream's invalid_request_error mid-stream reached the Messages client as\n%s", b)
	}
}

// Anthropic's TypeScript SDK raises its typed errors through the gateway:
// OverloadedError for an overloaded upstream's whole answer (529), and,
// for an error event in the middle of a stream, the APIError whose type
// is the upstream's (the SDK raises a plain APIError for every stream
// error event, typed by its type member).
func TestNodeMessagesErrors(t *testing.T) {
	e, _, _ := messagesEnv(t)
	var got []struct {
		Model, Class, Type   string
		Status               int
		Overloaded, APIError bool
	}
	models := []string{"claude-error-529", "claude-error-429", "claude-error-504", "claude-midstream:stream", "claude-midstream-rate_limit_error:stream", "claude-midstream-api_error:stream"}
	runNodeScript(t, "messages-errors.mjs", &got, append([]string{"http://" + e.Addr}, models...)...)
	want := map[string]string{"claude-error-529": "OverloadedError 529 overloaded_error", "claude-error-429": "RateLimitError 429 rate_limit_error",
		"claude-error-504": "GatewayTimeoutError 504 timeout_error", "claude-midstream:stream": "APIError 0 overloaded_error",
		"claude-midstream-rate_limit_error:stream": "APIError 0 rate_limit_error", "claude-midstream-api_error:stream": "APIError 0 api_error"}
	if len(got) != len(models) {
		t.Fatalf("the SDK read %d of %d", len(got), len(models))
	}
	for _, g := range got {
		if s := fmt.Sprintf("%s %d %s", g.Class, g.Status, g.Type); s != want[g.Model] || !g.APIError || g.Overloaded != (g.Model == "claude-error-529") {
			t.Errorf("%s: the SDK raised %s (OverloadedError %v, APIError %v), want %s", g.Model, s, g.Overloaded, g.APIError, want[g.Model])
		}
	}
}

// Each attempt's request is built for the protocol it goes to
// (docs/spec.md §8, §9): a Messages request with thinking, cache_control
// and top_k whose Anthropic route fails reaches the chat completions
// fallback with none of them (the cache marks dropped and counted), and
// reaches a chat completions deployment of the same route the same way;
// one with a server tool, or a beta only Anthropic honours, is not sent to
// a chat completions fallback at all: the client gets the Anthropic
// upstream's failure (an overload stays overloaded_error, 529), its
// message naming the member that stopped the fallback. A Responses request
// with a hosted tool falling back from a Responses upstream likewise. The
// scope guard: with no fallback, the server tool goes to Anthropic. (Each
// route allows these hosted tools, hosted_tools; one that does not leaves
// them out.)
func TestTranslatedPerAttempt(t *testing.T) {
	e, s := gatewaytest.StartSim(t, sim.Options{}, `
upstreams:
  - {name: claude, protocol: anthropic, url: "UPSTREAM_URL/v1"}
  - {name: oai, protocol: responses, url: "UPSTREAM_URL/v1"}
  - {name: sim, url: "UPSTREAM_URL/v1"}
  - {name: gone, protocol: anthropic, url: "http://127.0.0.1:1/v1"}
routes:
  - {name: claude, model: "claude-error-529", upstream: claude, fallbacks: [chat], hosted_tools: [web_search]}
  - {name: mixed, model: "mixed", upstream_model: "sim-text", upstreams: [{name: gone, weight: 1}, {name: sim, weight: 0}]}
  - {name: oai, model: "oai-error-500", upstream: oai, fallbacks: [chat], hosted_tools: [file_search], org_wide: [vector_stores]}
  - {name: chat, model: "fallback-chat", upstream: sim, upstream_model: "sim-text", refuse_hosted_tools: true, hosted_tools: [web_search, file_search], org_wide: [vector_stores]}
  - {name: direct, model: "claude-search", upstream: claude, hosted_tools: [web_search]}
`)
	c := anthropic.NewClient(aoption.WithBaseURL("http://"+e.Addr+"/"), aoption.WithAPIKey("k"), aoption.WithMaxRetries(0))
	rich := func(model, tools string) string {
		return `{"model":"` + model + `","max_tokens":4096,"top_k":5,"thinking":{"type":"enabled","budget_tokens":2048},` +
			`"system":[{"type":"text","text":"be brief","cache_control":{"type":"ephemeral"}}],"tools":[` + tools + `],` +
			`"messages":[{"role":"user","content":[{"type":"text","text":"hi","cache_control":{"type":"ephemeral"}}]}]}`
	}
	client := `{"name":"get_weather","input_schema":{"type":"object"}}`
	for _, model := range []string{"claude-error-529", "mixed"} {
		resp, b := e.Do(t, http.MethodPost, "/v1/messages", rich(model, client))
		sent := string(s.LastRequest())
		if resp.StatusCode != 200 || !strings.Contains(sent, `"model":"`) || strings.Contains(sent, "cache_control") || strings.Contains(sent, "thinking") ||
			strings.Contains(sent, "top_k") || strings.Contains(sent, "toolgate_") || strings.Contains(sent, `"system":`) {
			t.Errorf("%s: %d %s (the chat upstream got %s)", model, resp.StatusCode, b, sent)
		}
	}
	for _, route := range []string{"chat", "mixed"} {
		if n := e.Metric(t, "toolgate_repairs_total", map[string]string{"route": route, "action": "dropped_cache_control"}); n != 2 {
			t.Errorf("dropped_cache_control counted %v times on route %s, want 2", n, route)
		}
	}
	before := s.Requests()
	search := `{"type":"web_search_20250305","name":"web_search","max_uses":2}`
	_, err := c.Messages.New(context.Background(), anthropic.MessageNewParams{Model: "claude-error-529", MaxTokens: 1024, Messages: userText("news?"),
		Tools: []anthropic.ToolUnionParam{{OfWebSearchTool20250305: &anthropic.WebSearchTool20250305Param{MaxUses: anthropic.Int(2)}}}})
	var ae *anthropic.Error
	if !errors.As(err, &ae) || ae.StatusCode != 529 || string(ae.Type()) != "overloaded_error" || !strings.Contains(ae.Error(), "web_search_20250305") ||
		!strings.Contains(ae.Error(), "route chat") || s.Requests()-before != 1 {
		t.Errorf("a server tool falling back: %v, after %d upstream requests", err, s.Requests()-before)
	}
	_, err = c.Messages.New(context.Background(), anthropic.MessageNewParams{Model: "claude-error-529", MaxTokens: 1024, Messages: userText("hi")},
		aoption.WithHeader("anthropic-beta", "computer-use-2025-01-24"))
	if !errors.As(err, &ae) || ae.StatusCode != 529 || !strings.Contains(ae.Error(), "computer-use-2025-01-24") {
		t.Errorf("an Anthropic-only beta falling back: %v", err)
	}
	before = s.Requests()
	body := `{"model":"oai-error-500","input":"find it","tools":[{"type":"file_search","vector_store_ids":["vs_1"]}]}`
	resp, b := e.Do(t, http.MethodPost, "/v1/responses", body)
	if resp.StatusCode != 502 || !strings.Contains(b, "file_search") || !strings.Contains(b, "route chat") || s.Requests()-before != 1 {
		t.Errorf("a hosted tool falling back: %d %s, after %d upstream requests", resp.StatusCode, b, s.Requests()-before)
	}
	resp, b = e.Do(t, http.MethodPost, "/v1/messages", `{"model":"claude-search","max_tokens":1024,"tools":[`+search+`],"messages":[{"role":"user","content":"news?"}]}`)
	if resp.StatusCode != 200 || !strings.Contains(string(s.LastRequest()), `"web_search_20250305"`) {
		t.Errorf("a server tool without a fallback: %d %s", resp.StatusCode, b)
	}
}

// Betas by meaning: on a route to another protocol, each beta Claude Code
// and Anthropic's SDKs send whose absence changes nothing the client
// relies on is left out (named in X-Toolgate-Dropped, counted), and each
// one the answer would be wrong without is refused by name. An Anthropic
// route passes every beta on.
func TestBetasByMeaning(t *testing.T) {
	e, s, _ := messagesEnv(t)
	body := `{"model":%q,"max_tokens":1024,"messages":[{"role":"user","content":"hi"}],"context_management":{"edits":[{"type":"clear_thinking_20251015","keep":"all"}]},` +
		`"tools":[{"name":"get_weather","input_schema":{"type":"object"}},{"name":"DeferredToolPlaceholder","input_schema":{"type":"object"},"defer_loading":true}]}`
	dropped := []string{"claude-code-20250219", "interleaved-thinking-2025-05-14", "context-management-2025-06-27", "thinking-token-count-2026-05-13",
		"advanced-tool-use-2025-11-20", "thinking-display-updates-2026-08-18", "fine-grained-tool-streaming-2025-05-14", "token-efficient-tools-2025-02-19",
		"prompt-caching-2024-07-31", "extended-cache-ttl-2025-04-11", "output-128k-2025-02-19", "context-1m-2025-08-07", "effort-2025-11-24",
		"tool-search-tool-2025-10-19", "tool-examples-2025-10-29", "redact-thinking-2026-02-12", "model-context-window-exceeded-2025-08-26",
		"fast-mode-2026-02-01", "oauth-2025-04-20"}
	for n, beta := range dropped {
		resp, b := e.Do(t, "POST", "/messages", fmt.Sprintf(body, "sim-text"), "x-api-key", "k", "anthropic-beta", beta)
		if resp.StatusCode != 200 || resp.Header.Get("X-Toolgate-Dropped") != "anthropic-beta:"+beta {
			t.Errorf("%s: %d %q %s", beta, resp.StatusCode, resp.Header.Get("X-Toolgate-Dropped"), b)
		}
		if got := e.Metric(t, "toolgate_repairs_total", map[string]string{"route": "other", "action": "dropped_anthropic_beta"}); got != float64(n+1) {
			t.Errorf("%s: counted %v", beta, got)
		}
	}
	sent := string(s.LastRequest())
	if strings.Contains(sent, "context_management") || strings.Contains(sent, "defer_loading") || !strings.Contains(sent, `"name":"DeferredToolPlaceholder"`) {
		t.Errorf("the deferred tool goes in full, without context_management: %s", sent)
	}
	// Claude Code's own header, all at once.
	resp, b := e.Do(t, "POST", "/messages", fmt.Sprintf(body, "sim-text"), "x-api-key", "k", "anthropic-beta",
		"claude-code-20250219,interleaved-thinking-2025-05-14,context-management-2025-06-27,thinking-token-count-2026-05-13,advanced-tool-use-2025-11-20")
	if resp.StatusCode != 200 || strings.Count(resp.Header.Get("X-Toolgate-Dropped"), "anthropic-beta:") != 5 {
		t.Errorf("Claude Code's betas: %d %q %s", resp.StatusCode, resp.Header.Get("X-Toolgate-Dropped"), b)
	}
	for _, beta := range []string{"files-api-2025-04-14", "code-execution-2025-08-25", "mcp-client-2025-11-20", "computer-use-2025-01-24",
		"skills-2025-10-02", "structured-outputs-2025-11-13", "compact-2026-01-12", "web-fetch-2025-09-10", "search-results-2025-06-09", "some-new-beta-2027-01-01"} {
		resp, b := e.Do(t, "POST", "/messages", fmt.Sprintf(body, "sim-text"), "x-api-key", "k", "anthropic-beta", "claude-code-20250219,"+beta)
		if resp.StatusCode != 400 || !strings.Contains(b, beta) || resp.Header.Get("X-Toolgate-Dropped") != "" {
			t.Errorf("%s: %d %s", beta, resp.StatusCode, b)
		}
	}
	// A refused request is filed under the route it matched.
	if line := gatewaytest.WithField(e.Access(), "status", int64(400)); line == nil || line["route"] != "other" {
		t.Errorf("the refusal's access line: %v", line)
	}
	resp, b = e.Do(t, "POST", "/messages", fmt.Sprintf(body, "claude-text"), "x-api-key", "k", "anthropic-beta", "files-api-2025-04-14,context-management-2025-06-27")
	if resp.StatusCode != 200 || resp.Header.Get("X-Toolgate-Dropped") != "" || s.LastHeader().Get("Anthropic-Beta") != "files-api-2025-04-14,context-management-2025-06-27" {
		t.Errorf("anthropic: %d %q %v %s", resp.StatusCode, resp.Header.Get("X-Toolgate-Dropped"), s.LastHeader(), b)
	}
}
