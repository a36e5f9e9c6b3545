package sim

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func postMessages(t *testing.T, url, body string, version bool) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url+"/v1/messages", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if version {
		req.Header.Set("anthropic-version", "2023-06-01")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// The Anthropic mode refuses each broken rule with Anthropic's wording,
// and accepts a request that keeps them all.
func TestAnthropicRules(t *testing.T) {
	srv := httptest.NewServer(New(Options{}))
	defer srv.Close()
	defer http.DefaultClient.CloseIdleConnections()
	signed := `{"type":"thinking","thinking":"Hm.","signature":"` + signature("Hm.") + `"}`
	use := `{"type":"tool_use","id":"toolu_1","name":"f","input":{}}`
	result := `{"type":"tool_result","tool_use_id":"toolu_1","content":"ok"}`
	for _, tc := range []struct {
		name, body, want string
	}{
		{"max_tokens required", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, "max_tokens: Field required"},
		{"C10: a result for no call", `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"ok"},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_9","content":"x"}]}]}`,
			"messages.2.content.0: unexpected `tool_use_id` found in `tool_result` blocks: toolu_9. Each `tool_result` block must have a corresponding `tool_use` block in the previous message."},
		{"C10: a call without its result", `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[` + use + `]},{"role":"user","content":"next"}]}`,
			"messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_1."},
		{"C10: results after text", `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[` + use + `]},{"role":"user","content":[{"type":"text","text":"x"},` + result + `]}]}`,
			"Did not find 1 tool_result block(s) at the beginning of this message"},
		{"C11: a repeated id", `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[` + use + `,` + use + `]}]}`,
			"messages.1.content.1: tool_use ids must be unique"},
		{"C12: an empty turn", `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":[]},{"role":"assistant","content":"x"}]}`,
			"messages.0: all messages must have non-empty content except for the optional final assistant message"},
		{"C13: a tool name", `{"model":"m","max_tokens":10,"tools":[{"name":"a/b","input_schema":{}}],"messages":[{"role":"user","content":"hi"}]}`,
			"tools.0.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,64}$'"},
		{"C14: a small budget", `{"model":"m","max_tokens":4000,"thinking":{"type":"enabled","budget_tokens":100},"messages":[{"role":"user","content":"hi"}]}`,
			"thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"},
		{"C14: a budget over max_tokens", `{"model":"m","max_tokens":2000,"thinking":{"type":"enabled","budget_tokens":2000},"messages":[{"role":"user","content":"hi"}]}`,
			"`max_tokens` must be greater than `thinking.budget_tokens`"},
		{"C14: the last tool turn without its thinking", `{"model":"m","max_tokens":4000,"thinking":{"type":"enabled","budget_tokens":1024},"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[` + use + `]},{"role":"user","content":[` + result + `]}]}`,
			"a final `assistant` message must start with a thinking block"},
		{"C14: a changed signature", `{"model":"m","max_tokens":4000,"thinking":{"type":"enabled","budget_tokens":1024},"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[` + strings.Replace(signed, "Hm.", "Hmm.", 1) + `,` + use + `]},{"role":"user","content":[` + result + `]}]}`,
			"messages.1.content.0: Invalid `signature` in `thinking` block"},
		{"a forced tool while thinking", `{"model":"m","max_tokens":4000,"thinking":{"type":"enabled","budget_tokens":1024},"tool_choice":{"type":"any"},"messages":[{"role":"user","content":"hi"}]}`,
			"Thinking may not be enabled when tool_choice forces tool use."},
	} {
		status, body := postMessages(t, srv.URL, tc.body, true)
		if status != 400 || !strings.Contains(body, `"type":"invalid_request_error"`) || !strings.Contains(body, tc.want) {
			t.Errorf("%s: %d %s", tc.name, status, body)
		}
	}
	if status, body := postMessages(t, srv.URL, `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`, false); status != 400 || !strings.Contains(body, "anthropic-version") {
		t.Errorf("no version: %d %s", status, body)
	}
	ok := `{"model":"sim-tool","max_tokens":4000,"stream":true,"thinking":{"type":"enabled","budget_tokens":1024},"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[` + signed + `,` + use + `]},{"role":"user","content":[` + result + `]}]}`
	status, body := postMessages(t, srv.URL, ok, true)
	order := []string{"event: message_start", "event: ping", "event: content_block_start", `"type":"thinking_delta"`, `"type":"signature_delta"`, "event: content_block_stop",
		`"type":"tool_use"`, `"type":"input_json_delta"`, "event: message_delta", `"stop_reason":"tool_use"`, "event: message_stop"}
	at := 0
	for _, o := range order {
		i := strings.Index(body[at:], o)
		if i < 0 {
			t.Fatalf("a valid request: %d, %q missing (in order) from\n%s", status, o, body)
		}
		at += i
	}
	if status, body := postMessages(t, srv.URL, `{"model":"sim-error-529","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`, true); status != 529 || !strings.Contains(body, `"type":"overloaded_error"`) {
		t.Errorf("529: %d %s", status, body)
	}
}
