package gateway_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/toolgate/toolgate/internal/sim"
	"github.com/toolgate/toolgate/internal/testing/gatewaytest"
)

// geminiEnv runs the gateway in front of the simulator's Gemini mode:
// "think-*" routes think (reasoning-effort high: thinkingLevel, thoughts
// included), "compat-*" routes go to Gemini's OpenAI-compatible dialect,
// every other model is sent as it is named, retried once.
func geminiEnv(t *testing.T) (*gatewaytest.Env, *sim.Sim) {
	return gatewaytest.StartSim(t, sim.Options{}, `
responses: {store: memory}
upstreams:
  - {name: gemini, protocol: gemini, url: "UPSTREAM_URL/v1beta", api_key: "${UPSTREAM_KEY}"}
  - {name: gemini-compat, url: "UPSTREAM_URL/v1beta/openai"}
routes:
  - {name: think, model: "think-*", upstream: gemini, reasoning: {format: reasoning-effort, level: high}}
  - {name: compat, model: "compat-*", upstream: gemini-compat}
  - {name: gemini, model: "*", upstream: gemini, retries: 1, retry_backoff: 1ms}
`)
}

// sentGemini is the part of the request the simulator last received that
// the tests read.
type sentGemini struct {
	Contents []struct {
		Role  string `json:"role"`
		Parts []struct {
			Text             *string `json:"text"`
			ThoughtSignature string  `json:"thoughtSignature"`
			FunctionCall     *struct {
				ID, Name string
			} `json:"functionCall"`
			FunctionResponse *struct {
				ID, Name string
			} `json:"functionResponse"`
		} `json:"parts"`
	} `json:"contents"`
	GenerationConfig map[string]any `json:"generationConfig"`
}

func lastGemini(t *testing.T, s *sim.Sim) sentGemini {
	t.Helper()
	var sent sentGemini
	if err := json.Unmarshal(s.LastRequest(), &sent); err != nil {
		t.Fatalf("%v: %s", err, s.LastRequest())
	}
	return sent
}

// Text, a streamed call and parallel calls reach openai-go as chat
// completions: the thoughts as reasoning_content, the text whole, each
// functionCall one call with a stable synthesized id and its arguments,
// Gemini's finish reasons and usage (thoughts as reasoning tokens, cached
// content as cached tokens) as OpenAI's; the key in x-goog-api-key.
func TestGeminiStreams(t *testing.T) {
	e, s := geminiEnv(t)
	text := accumulate(t, e, openai.ChatCompletionNewParams{Model: "think-text", Messages: gatewaytest.UserMsg("hi"),
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}})
	if text.err != nil || !strings.HasPrefix(text.msg.Content, "Hello from the toolgate simulator") || text.finish != "stop" || text.usage != 39 {
		t.Fatalf("text: err %v, content %q, finish %q, usage %d", text.err, text.msg.Content, text.finish, text.usage)
	}
	if got := deltaField(t, text.raw, "reasoning_content"); got != "Thinking about it, step 1." || strings.Contains(text.msg.Content, "Thinking") {
		t.Errorf("reasoning %q, content %q", got, text.msg.Content)
	}
	if h := s.LastHeader(); h.Get("x-goog-api-key") != gatewaytest.UpstreamKey || h.Get("Authorization") != "" {
		t.Errorf("headers %v", h)
	}
	if tc := lastGemini(t, s).GenerationConfig["thinkingConfig"]; tc == nil || tc.(map[string]any)["thinkingLevel"] != "high" || tc.(map[string]any)["includeThoughts"] != true {
		t.Errorf("thinkingConfig %v", tc)
	}
	tool := accumulate(t, e, openai.ChatCompletionNewParams{Model: "sim-gemini-tool", Messages: gatewaytest.UserMsg("weather?"), Tools: weatherTool})
	if tool.err != nil || tool.finish != "tool_calls" || len(tool.msg.ToolCalls) != 1 || !strings.HasPrefix(tool.msg.ToolCalls[0].ID, "call_") ||
		tool.msg.ToolCalls[0].Function.Name != "get_weather" || tool.msg.ToolCalls[0].Function.Arguments != `{"city":"Paris"}` {
		t.Fatalf("tool: err %v, finish %q, calls %+v", tool.err, tool.finish, tool.msg.ToolCalls)
	}
	par := accumulate(t, e, openai.ChatCompletionNewParams{Model: "sim-gemini-parallel", Messages: gatewaytest.UserMsg("weather?"), Tools: weatherTool})
	if par.err != nil || par.finish != "tool_calls" || len(par.msg.ToolCalls) != 2 || par.msg.Content != "Checking both." ||
		par.msg.ToolCalls[1].Function.Arguments != `{"city":"Rome"}` || par.msg.ToolCalls[0].ID == par.msg.ToolCalls[1].ID {
		t.Fatalf("parallel: err %v, finish %q, content %q, calls %+v", par.err, par.finish, par.msg.Content, par.msg.ToolCalls)
	}
	// Both results, the client having dropped the signatures: accepted.
	history := append(gatewaytest.UserMsg("weather?"), par.msg.ToParam(),
		openai.ToolMessage("sunny", par.msg.ToolCalls[0].ID), openai.ToolMessage("rainy", par.msg.ToolCalls[1].ID))
	whole, err := e.Client("k").Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "think-parallel", Messages: history, Tools: weatherTool})
	if err != nil || whole.Choices[0].FinishReason != "stop" || whole.Usage.CompletionTokensDetails.ReasoningTokens != 7 || whole.Usage.PromptTokensDetails.CachedTokens != 5 {
		t.Fatalf("non-streamed, after parallel calls: %v %+v", err, whole)
	}
}

// A three-step tool loop whose client rebuilds each assistant turn from
// the parsed call (openai-go's ToParam keeps no extra_content): the
// gateway puts each call's thought signature back, the simulator checks
// them (HMAC) and accepts every step; a client that keeps the signature
// has it passed unchanged.
func TestGeminiSignaturesRestored(t *testing.T) {
	e, s := geminiEnv(t)
	chatToolLoop(t, e, "think-toolloop", s.LastRequest)
	signed := 0
	for _, c := range lastGemini(t, s).Contents {
		for _, p := range c.Parts {
			if p.FunctionCall != nil && p.ThoughtSignature != "" && p.ThoughtSignature != "skip_thought_signature_validator" {
				signed++
			}
		}
	}
	if signed != 2 {
		t.Errorf("%d calls sent with their signatures: %s", signed, s.LastRequest())
	}
	if n := e.Metric(t, "toolgate_reasoning_restores_total", map[string]string{"route": "think", "result": "restored"}); n != 3 {
		t.Errorf("restores = %v, want 3 (one turn, then two)", n)
	}
	// A client that keeps the signature (the raw history) sends it as is.
	first := accumulate(t, e, openai.ChatCompletionNewParams{Model: "sim-gemini-tool", Messages: gatewaytest.UserMsg("weather?"), Tools: weatherTool})
	call := first.msg.ToolCalls[0]
	sig := gjsonString(t, first.raw, "extra_content")
	kept := `{"model":"sim-gemini-tool","tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}],"messages":[{"role":"user","content":"weather?"},` +
		`{"role":"assistant","content":null,"tool_calls":[{"id":"` + call.ID + `","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"},"extra_content":{"google":{"thought_signature":` + sig + `}}}]},` +
		`{"role":"tool","tool_call_id":"` + call.ID + `","content":"sunny"}]}`
	if resp, b := e.Do(t, http.MethodPost, "/v1/chat/completions", kept); resp.StatusCode != 200 {
		t.Fatalf("kept signature: %d %s", resp.StatusCode, b)
	}
	if got := lastGemini(t, s).Contents[1].Parts[0].ThoughtSignature; `"`+got+`"` != sig {
		t.Errorf("the kept signature was sent as %q, want %s", got, sig)
	}
}

// gjsonString finds the thought signature in a stream's raw chunks.
func gjsonString(t *testing.T, raw []string, _ string) string {
	t.Helper()
	for _, r := range raw {
		if i := strings.Index(r, `"thought_signature":`); i >= 0 {
			rest := r[i+len(`"thought_signature":`):]
			return rest[:strings.Index(rest[1:], `"`)+2]
		}
	}
	t.Fatalf("no thought_signature in %v", raw)
	return ""
}

// A call the gateway has no signature for — one the client made up — is
// sent with skip_thought_signature_validator (counted), and accepted.
func TestGeminiInjectedCall(t *testing.T) {
	e, s := geminiEnv(t)
	body := `{"model":"sim-gemini-tool","tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}],"messages":[` +
		`{"role":"user","content":"weather?"},` +
		`{"role":"assistant","content":null,"tool_calls":[{"id":"call_made_up","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}}]},` +
		`{"role":"tool","tool_call_id":"call_made_up","content":"snow"}]}`
	if resp, b := e.Do(t, http.MethodPost, "/v1/chat/completions", body); resp.StatusCode != 200 {
		t.Fatalf("%d %s (sent %s)", resp.StatusCode, b, s.LastRequest())
	}
	if got := lastGemini(t, s).Contents[1].Parts[0].ThoughtSignature; got != "skip_thought_signature_validator" {
		t.Errorf("signature %q", got)
	}
	if n := e.Metric(t, "toolgate_reasoning_restores_total", map[string]string{"route": "gemini", "result": "placeholder"}); n != 1 {
		t.Errorf("placeholders = %v", n)
	}
}

// Gemini's failures: a stream cut before its finishReason ends with an
// error event; 429 RESOURCE_EXHAUSTED is a 429 with the retryDelay as
// Retry-After; 503 UNAVAILABLE is retried, then answered 503; a
// MALFORMED_FUNCTION_CALL finish is an upstream error, never a silent
// stop; Google's 400 reaches the client with its message.
func TestGeminiErrors(t *testing.T) {
	e, s := geminiEnv(t)
	cut := accumulate(t, e, openai.ChatCompletionNewParams{Model: "sim-gemini-cut", Messages: gatewaytest.UserMsg("hi")})
	if cut.err == nil || !strings.Contains(cut.err.Error(), "upstream_stream_incomplete") {
		t.Fatalf("cut: %v", cut.err)
	}
	resp, b := e.Do(t, http.MethodPost, "/v1/chat/completions", `{"model":"sim-gemini-error-429","messages":[{"role":"user","content":"hi"}]}`)
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "2" || !strings.Contains(b, "upstream_rate_limited") {
		t.Errorf("429: %d %v %s", resp.StatusCode, resp.Header, b)
	}
	before := s.Requests()
	resp, b = e.Do(t, http.MethodPost, "/v1/chat/completions", `{"model":"sim-gemini-error-503","messages":[{"role":"user","content":"hi"}]}`)
	if resp.StatusCode != 503 || !strings.Contains(b, "upstream_unavailable") || s.Requests()-before != 2 {
		t.Errorf("503: %d %s after %d requests", resp.StatusCode, b, s.Requests()-before)
	}
	for _, stream := range []bool{true, false} {
		body := `{"model":"sim-gemini-malformed","stream":` + map[bool]string{true: "true", false: "false"}[stream] + `,"messages":[{"role":"user","content":"hi"}]}`
		resp, b = e.Do(t, http.MethodPost, "/v1/chat/completions", body)
		if !strings.Contains(b, "MALFORMED_FUNCTION_CALL") || strings.Contains(b, "[DONE]") {
			t.Errorf("malformed (stream %v): %d %s", stream, resp.StatusCode, b)
		}
	}
	resp, b = e.Do(t, http.MethodPost, "/v1/chat/completions", `{"model":"sim-gemini-error-400","messages":[{"role":"user","content":"hi"}]}`)
	if resp.StatusCode != 400 || !strings.Contains(b, "Request contains an invalid argument.") {
		t.Errorf("400: %d %s", resp.StatusCode, b)
	}
	resp, b = e.Do(t, http.MethodPost, "/v1/chat/completions", `{"model":"sim-gemini","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","not":{"required":["x"]}}}}]}`)
	if resp.StatusCode != 400 || !strings.Contains(b, "tools[0].function.parameters.not") {
		t.Errorf("unmappable schema: %d %s", resp.StatusCode, b)
	}
}

// A broken transcript — a reply that answers nothing, a call never
// answered — is repaired before it is translated, and Gemini's rules (the
// simulator's: as many responses as calls) accept it.
func TestGeminiBrokenTranscript(t *testing.T) {
	e, s := geminiEnv(t)
	first := accumulate(t, e, openai.ChatCompletionNewParams{Model: "think-toolloop", Messages: gatewaytest.UserMsg("weather?"), Tools: weatherTool})
	if first.err != nil || len(first.msg.ToolCalls) != 1 {
		t.Fatalf("first turn: %v %+v", first.err, first.msg)
	}
	history := append(gatewaytest.UserMsg("weather?"), openai.ToolMessage("stale", "call_gone"), first.msg.ToParam(), openai.UserMessage("still there?"))
	resp, err := e.Client("k").Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "think-toolloop", Messages: history, Tools: weatherTool})
	if err != nil {
		t.Fatalf("broken transcript: %v (sent %s)", err, s.LastRequest())
	}
	if len(resp.Choices[0].Message.ToolCalls) != 1 {
		t.Errorf("answer %+v", resp.Choices[0].Message)
	}
	sent := string(s.LastRequest())
	if strings.Contains(sent, "call_gone") || !strings.Contains(sent, "never completed") {
		t.Errorf("sent %s", sent)
	}
}

// The Responses API's tool loop on a Gemini route: a streamed function
// call, then its output with previous_response_id; the stored turn is
// replayed without its signature, which the gateway restores.
func TestGeminiResponsesLoop(t *testing.T) {
	e, s := geminiEnv(t)
	r := streamResponse(t, e, responses.ResponseNewParams{Model: "think-tool", Input: input("weather?"), Tools: weatherFunction})
	if r.err != nil || r.terminal != "response.completed" {
		t.Fatalf("first: %v %q", r.err, r.terminal)
	}
	var callID string
	for _, it := range r.final.Output {
		if it.Type == "function_call" {
			callID = it.CallID
		}
	}
	if callID == "" {
		t.Fatalf("no function call in %+v", r.final.Output)
	}
	out := responses.ResponseInputParam{{OfFunctionCallOutput: &responses.ResponseInputItemFunctionCallOutputParam{
		CallID: openai.String(callID), Output: responses.ResponseInputItemFunctionCallOutputOutputUnionParam{OfString: openai.String("sunny")}}}}
	second, err := e.Client("k").Responses.New(context.Background(), responses.ResponseNewParams{Model: "think-tool", PreviousResponseID: openai.String(r.final.ID),
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: out}, Tools: weatherFunction})
	if err != nil || !strings.HasPrefix(second.OutputText(), "Hello") {
		t.Fatalf("second: %v (sent %s)", err, s.LastRequest())
	}
	if sig := lastGemini(t, s).Contents[1].Parts[0].ThoughtSignature; sig == "" || sig == "skip_thought_signature_validator" {
		t.Errorf("the stored call was sent with signature %q", sig)
	}
}

// Gemini's OpenAI-compatible dialect (protocol openai, quirk
// thought_signatures, on in all): the calls' signatures ride in
// extra_content, the client drops them, the gateway puts them back, and
// the dialect's checks accept the loop.
func TestGeminiCompatSignatures(t *testing.T) {
	e, s := geminiEnv(t)
	chatToolLoop(t, e, "compat-toolloop", s.LastRequest)
	if n := strings.Count(string(s.LastRequest()), `"thought_signature"`); n != 2 {
		t.Errorf("%d signatures sent back: %s", n, s.LastRequest())
	}
}
