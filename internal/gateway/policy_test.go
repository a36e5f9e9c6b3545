package gateway_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/testing/gatewaytest"
)

// cannedUpstream answers by model name, streamed or not, with shapes the
// policy must judge: text, one call, two calls, no finish reason, and (for
// streams) a finish followed by EOF without [DONE].
func cannedUpstream(t *testing.T) *httptest.Server {
	t.Helper()
	call := func(k int, id, name string) string {
		return fmt.Sprintf(`{"index":%d,"id":%q,"type":"function","function":{"name":%q,"arguments":"{}"}}`, k, id, name)
	}
	type answer struct {
		content string
		calls   []string
		finish  string
		done    bool
	}
	answers := map[string]answer{
		"text":     {content: "hi", finish: "stop", done: true},
		"call":     {calls: []string{call(0, "c1", "get")}, finish: "tool_calls", done: true},
		"two":      {calls: []string{call(0, "c1", "get"), call(1, "c2", "put")}, finish: "tool_calls", done: true},
		"nofinish": {content: "hi", done: true},
		"nodone":   {content: "hi", finish: "stop"},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model  string `json:"model"`
			Stream bool   `json:"stream"`
		}
		b, _ := io.ReadAll(r.Body)
		json.Unmarshal(b, &req)
		// "par-two" picks a route by its prefix and an answer by the rest.
		a := answers[req.Model[strings.LastIndex(req.Model, "-")+1:]]
		finish := "null"
		if a.finish != "" {
			finish = `"` + a.finish + `"`
		}
		content := "null"
		if a.content != "" {
			content = `"` + a.content + `"`
		}
		if !req.Stream {
			calls := ""
			if len(a.calls) > 0 {
				calls = `,"tool_calls":[` + strings.Join(a.calls, ",") + `]`
			}
			fmt.Fprintf(w, `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":%s%s},"finish_reason":%s}]}`, content, calls, finish)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		ev := func(delta, finish string) {
			fmt.Fprintf(w, "data: {\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":%s,\"finish_reason\":%s}]}\n\n", delta, finish)
		}
		ev(`{"role":"assistant","content":`+content+`}`, "null")
		for _, c := range a.calls {
			ev(`{"tool_calls":[`+c+`]}`, "null")
		}
		ev(`{}`, finish)
		if a.done {
			io.WriteString(w, "data: [DONE]\n\n")
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// Every policy rule through the gateway, streamed and not (docs/spec.md §3): the
// client gets the answer, or an error (a 502 before the stream starts, one
// error event after) — never a silent success. The upstream is strict, so
// nothing is normalized away.
func TestPolicyForms(t *testing.T) {
	up := cannedUpstream(t)
	e := gatewaytest.Start(t, up.URL, `
upstreams: [{name: u, url: "UPSTREAM_URL/v1", quirks: strict}]
routes:
  - {name: par, model: "par-*", upstream: u, enforce_parallel_tool_calls: true}
  - {name: def, model: "def-*", upstream: u, policy: default}
  - {name: off, model: "off-*", upstream: u, policy: "off"}
  - {name: session, model: "*", upstream: u}
`)
	tools := `"tools":[{"type":"function","function":{"name":"get"}},{"type":"function","function":{"name":"put"}}]`
	for _, tc := range []struct {
		name, model, extra string
		want               string // "ok", or the error code / a fragment of the error
	}{
		{"required answered with text", "text", tools + `,"tool_choice":"required"`, "completion_policy_violation"},
		{"required answered with a call", "call", tools + `,"tool_choice":"required"`, "ok"},
		{"auto with a call", "call", tools + `,"tool_choice":"auto"`, "ok"},
		{"none answered with a call", "call", tools + `,"tool_choice":"none"`, `\"none\"`},
		{"named function, another called", "call", tools + `,"tool_choice":{"type":"function","function":{"name":"put"}}`, `names \"put\"`},
		{"named function called", "call", tools + `,"tool_choice":{"type":"function","function":{"name":"get"}}`, "ok"},
		{"no tools declared, a call", "call", `"x":1`, "declares no tools"},
		{"default ignores tool_choice", "def-text", tools + `,"tool_choice":"required"`, "ok"},
		{"parallel false not judged by default", "two", tools + `,"parallel_tool_calls":false`, "ok"},
		{"parallel false enforced", "par-two", tools + `,"parallel_tool_calls":false`, "parallel_tool_calls is false"},
		{"response_format not matched", "text", `"response_format":{"type":"json_schema","json_schema":{"name":"r","schema":{"type":"object"}}}`, "response_format"},
		{"missing finish reason", "nofinish", `"x":1`, "no finish_reason"},
		{"policy off passes a call without tools", "off-call", `"x":1`, "ok"},
	} {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", tc.name, stream), func(t *testing.T) {
				body := fmt.Sprintf(`{"model":%q,"stream":%v,"messages":[{"role":"user","content":"x"}],%s}`, tc.model, stream, tc.extra)
				resp := e.Post(t, body)
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				got := string(b)
				if tc.want == "ok" {
					if resp.StatusCode != 200 || strings.Contains(got, `"error"`) || (stream && !strings.HasSuffix(got, "data: [DONE]\n\n")) {
						t.Fatalf("status %d:\n%s", resp.StatusCode, got)
					}
					return
				}
				if !strings.Contains(got, tc.want) || strings.Contains(got, "[DONE]") || (!stream && resp.StatusCode != 502) {
					t.Fatalf("status %d, want an error about %s:\n%s", resp.StatusCode, tc.want, got)
				}
			})
		}
	}
	// A stream that ends without [DONE] is incomplete, whatever it said.
	resp := e.Post(t, `{"model":"nodone","stream":true,"messages":[{"role":"user","content":"x"}]}`)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), "upstream_stream_incomplete") {
		t.Errorf("no [DONE]:\n%s", b)
	}
}
