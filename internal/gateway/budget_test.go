package gateway_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/sim"
	"github.com/toolgate/toolgate/internal/testing/gatewaytest"
	"github.com/toolgate/toolgate/internal/testing/wait"
	"github.com/toolgate/toolgate/internal/testing/wiretest"
)

// Budgets through the gateway (docs/spec.md §5): maxInputChars refuses (exactly
// at the limit passes, one over is refused, nothing sent) or trims whole
// oldest turns; maxOutputTokens clamps; callTimeoutMs ends the call with
// 504 or a timeout error event.
func TestBudgets(t *testing.T) {
	// The call timeout fires on an upstream that never answers in time
	// (its slow model waits a minute between chunks), and a call inside
	// its timeout is one whose timeout no machine reaches.
	hang := httptest.NewServer(sim.New(sim.Options{SlowDelay: wait.Patience}))
	t.Cleanup(hang.Close)
	e, s := gatewaytest.StartSim(t, sim.Options{SlowDelay: 20 * time.Millisecond}, `
upstreams: [{name: sim, url: "UPSTREAM_URL/v1"}, {name: hang, url: "`+hang.URL+`/v1"}]
routes:
  - {model: refuse, upstream: sim, upstream_model: sim-text, budget: {preset: small, max_input_chars: 8}}
  - {model: trim, upstream: sim, upstream_model: sim-text, budget: {max_input_chars: 8, on_input_over: trim}}
  - {model: clamp, upstream: sim, upstream_model: sim-text, budget: {preset: small}}
  - {model: slow, upstream: hang, upstream_model: sim-slow, budget: {call_timeout_ms: 100}}
  - {model: slow-ok, upstream: sim, upstream_model: sim-slow, budget: {call_timeout_ms: 600000}}
  - {model: short, upstream: sim, upstream_model: sim-text, budget: {max_output_chars: 30}}
  - {model: fits, upstream: sim, upstream_model: sim-text, budget: {max_output_chars: `+fmt.Sprint(len(simAnswer))+`}}
  - {model: over-by-one, upstream: sim, upstream_model: sim-text, budget: {max_output_chars: `+fmt.Sprint(len(simAnswer)-1)+`}}
`)
	post := func(model, msgs, extra string) (int, string) {
		resp := e.Post(t, `{"model":"`+model+`","messages":`+msgs+extra+`}`)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode, string(b)
	}
	eight := `[{"role":"user","content":"aaaa"},{"role":"assistant","content":"bbbb"}]`
	nine := `[{"role":"user","content":"aaaa"},{"role":"assistant","content":"bbbbb"}]`
	if code, body := post("refuse", eight, ""); code != 200 {
		t.Errorf("at the limit: %d %s", code, body)
	}
	before := s.Requests()
	if code, body := post("refuse", nine, ""); code != 400 || !strings.Contains(body, "budget_exceeded") || !strings.Contains(body, "9 characters") || s.Requests() != before {
		t.Errorf("one over: %d %s", code, body)
	}
	code, body := post("trim", `[{"role":"system","content":"s"},{"role":"user","content":"old turn"},{"role":"assistant","content":"reply"},{"role":"user","content":"new"}]`, "")
	if sent := string(s.LastRequest()); code != 200 || strings.Contains(sent, "old turn") || !strings.Contains(sent, `"content":"new"`) || !strings.Contains(sent, `"content":"s"`) {
		t.Errorf("trim: %d %s\nupstream got %s", code, body, sent)
	}
	post("clamp", eight, `,"max_tokens":5000`)
	if sent := string(s.LastRequest()); !strings.Contains(sent, `"max_tokens":512`) {
		t.Errorf("clamp: %s", sent)
	}
	post("clamp", eight, `,"max_tokens":512`)
	if sent := string(s.LastRequest()); !strings.Contains(sent, `"max_tokens":512`) {
		t.Errorf("at the limit: %s", sent)
	}
	post("clamp", eight, `,"max_tokens":513`)
	if sent := string(s.LastRequest()); !strings.Contains(sent, `"max_tokens":512`) {
		t.Errorf("one over: %s", sent)
	}
	post("clamp", eight, "")
	if sent := string(s.LastRequest()); !strings.Contains(sent, `"max_tokens":512`) {
		t.Errorf("inject: %s", sent)
	}
	if code, body := post("slow-ok", eight, `,"stream":true`); code != 200 || !strings.HasSuffix(body, "data: [DONE]\n\n") {
		t.Errorf("a call inside its timeout: %d %s", code, body)
	}
	if code, body := post("slow", eight, ""); code != 504 || !strings.Contains(body, "upstream_timeout") {
		t.Errorf("timeout, not streamed: %d %s", code, body)
	}
	if code, body := post("slow", eight, `,"stream":true`); code != 200 || !strings.Contains(body, "upstream_timeout") || strings.Contains(body, "[DONE]") {
		t.Errorf("timeout, streamed: %d %s", code, body)
	}
	// maxOutputChars: the client gets exactly that much text, then the
	// stream ends with finish_reason "length" and [DONE]; an answer that
	// exactly fits ends as the upstream ended it.
	for _, tc := range []struct {
		model, text, finish string
	}{
		{"short", simAnswer[:30], "length"},
		{"fits", simAnswer, "stop"},
		{"over-by-one", simAnswer[:len(simAnswer)-1], "length"},
	} {
		code, body = post(tc.model, eight, `,"stream":true`)
		text, finish := sseText(body)
		if code != 200 || text != tc.text || finish != tc.finish || !strings.HasSuffix(body, "data: [DONE]\n\n") {
			t.Errorf("%s: %d, text %q, finish %q\n%s", tc.model, code, text, finish, body)
		}
	}
	e.WaitAccess(t, 13)
	for reason, want := range map[string]float64{"maxInputChars": 1, "callTimeoutMs": 2, "maxOutputChars": 2} {
		if n := e.Metric(t, "toolgate_budget_rejections_total", map[string]string{"reason": reason, "key": "none"}); n != want {
			t.Errorf("rejections{%s} = %v, want %v", reason, n, want)
		}
	}
	if a := gatewaytest.WithField(e.Access(), "trimmed", int64(2)); a == nil {
		t.Error("no access line says trimmed=2")
	}
}

// maxCalls: a session (header, else the request's user) makes exactly
// max_calls calls; the next is a 429 with Retry-After, and nothing is sent.
func TestMaxCalls(t *testing.T) {
	e, s := gatewaytest.StartSim(t, sim.Options{}, `
upstreams: [{name: sim, url: "UPSTREAM_URL/v1"}]
routes: [{model: "*", upstream: sim, budget: {max_calls: 2}}]
`)
	call := func(hdr ...string) (int, string) {
		resp := e.Post(t, `{"model":"sim-text","user":"u1","messages":[{"role":"user","content":"x"}]}`, hdr...)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, resp.Header.Get("Retry-After")
	}
	for i := range 2 {
		if code, _ := call(); code != 200 {
			t.Fatalf("call %d: %d", i+1, code)
		}
	}
	before := s.Requests()
	if code, after := call(); code != 429 || after == "" || s.Requests() != before {
		t.Fatalf("third call: %d, Retry-After %q", code, after)
	}
	e.WaitAccess(t, 3)
	if n := e.Metric(t, "toolgate_budget_rejections_total", map[string]string{"reason": "maxCalls"}); n != 1 {
		t.Errorf("rejections{maxCalls} = %v", n)
	}
	if code, _ := call("X-Session-Id", "other"); code != 200 {
		t.Errorf("another session: %d", code)
	}
	// The request's metadata.session_id, when there is no header or user.
	for i, want := range []int{200, 200, 429} {
		resp := e.Post(t, `{"model":"sim-text","metadata":{"session_id":"m1"},"messages":[{"role":"user","content":"x"}]}`)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("metadata session, call %d: %d", i+1, resp.StatusCode)
		}
	}
	// A request with neither a session header nor a user is not counted.
	for i := range 3 {
		resp := e.Post(t, `{"model":"sim-text","messages":[{"role":"user","content":"x"}]}`)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("anonymous call %d: %d", i+1, resp.StatusCode)
		}
	}
}

// sseText returns the text content and the last finish reason of an SSE
// body's chunks.
func sseText(body string) (text, finish string) {
	for data := range wiretest.Data(body) {
		var c struct {
			Choices []struct {
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"`
				FinishReason string `json:"finish_reason"`
			} `json:"choices"`
		}
		if json.Unmarshal([]byte(data), &c) != nil || len(c.Choices) == 0 {
			continue
		}
		text += c.Choices[0].Delta.Content
		if c.Choices[0].FinishReason != "" {
			finish = c.Choices[0].FinishReason
		}
	}
	return text, finish
}

// max_input_chars counts what the model reads as text, wherever the
// client's protocol puts it: 200,000 characters in a document's text
// source, a search result, a tool's description or schema, past
// thinking, a hosted tool's item, a member no protocol here knows — each
// is over an 8,000-character budget, refused 400 budget_exceeded with
// nothing sent, on each client API and a route of its own protocol. A
// binary part (a base64 image of as many bytes) is not text: it passes.
func TestInputCharsCountEveryText(t *testing.T) {
	e, s := gatewaytest.StartSim(t, sim.Options{}, `
upstreams:
  - {name: compat, url: "UPSTREAM_URL/v1"}
  - {name: claude, protocol: anthropic, url: "UPSTREAM_URL/v1"}
  - {name: oai, protocol: responses, url: "UPSTREAM_URL/v1"}
routes:
  - {model: "sim-*", upstream: compat, budget: {max_input_chars: 8000}}
  - {model: "claude-*", upstream: claude, budget: {max_input_chars: 8000}}
  - {model: "oai/*", upstream: oai, upstream_model: sim-text, budget: {max_input_chars: 8000}}
`)
	big := strings.Repeat("a", 200000)
	for _, tc := range []struct{ name, path, body string }{
		{"a document's text", "/messages", `{"model":"claude-text","max_tokens":16,"messages":[{"role":"user","content":[{"type":"document","source":{"type":"text","media_type":"text/plain","data":"BIG"}},{"type":"text","text":"summarize"}]}]}`},
		{"a search result", "/messages", `{"model":"claude-text","max_tokens":16,"messages":[{"role":"user","content":[{"type":"search_result","source":"https://example.com","title":"t","content":[{"type":"text","text":"BIG"}]},{"type":"text","text":"cite it"}]}]}`},
		{"a Messages tool's description", "/messages", `{"model":"claude-text","max_tokens":16,"tools":[{"name":"f","description":"BIG","input_schema":{"type":"object"}}],"messages":[{"role":"user","content":"hi"}]}`},
		{"past thinking", "/messages", `{"model":"claude-text","max_tokens":16,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"thinking","thinking":"BIG","signature":"sig"},{"type":"text","text":"hello"}]},{"role":"user","content":"again"}]}`},
		{"a chat tool's schema", "/chat/completions", `{"model":"sim-text","tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"q":{"type":"string","description":"BIG"}}}}}],"messages":[{"role":"user","content":"hi"}]}`},
		{"an unknown member", "/chat/completions", `{"model":"sim-text","prediction":{"type":"content","content":"BIG"},"messages":[{"role":"user","content":"hi"}]}`},
		{"a Responses tool's description", "/responses", `{"model":"oai/x","tools":[{"type":"function","name":"f","description":"BIG","parameters":{"type":"object"}}],"input":"hi"}`},
		{"a hosted tool's item", "/responses", `{"model":"oai/x","input":[{"role":"user","content":"hi"},{"type":"web_search_call","id":"ws_1","status":"completed","action":{"type":"search","query":"BIG"}},{"role":"user","content":"and?"}]}`},
	} {
		before := s.Requests()
		resp, b := e.Do(t, "POST", tc.path, strings.Replace(tc.body, "BIG", big, 1), "Authorization", "Bearer k", "x-api-key", "k", "anthropic-version", "2023-06-01")
		if resp.StatusCode != 400 || !strings.Contains(b, "maxInputChars") || s.Requests() != before {
			t.Errorf("%s: %d %.300s, %d upstream requests", tc.name, resp.StatusCode, b, s.Requests()-before)
		}
	}
	image := `{"model":"sim-text","messages":[{"role":"user","content":[{"type":"text","text":"what is it?"},{"type":"image_url","image_url":{"url":"data:image/png;base64,` + strings.Repeat("A", 200000) + `"}}]}]}`
	if resp, b := e.Do(t, "POST", "/chat/completions", image, "Authorization", "Bearer k"); resp.StatusCode != 200 {
		t.Errorf("a base64 image: %d %.300s", resp.StatusCode, b)
	}
}
