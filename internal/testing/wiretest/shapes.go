package wiretest

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/translate"
	"github.com/toolgate/toolgate/internal/wire"
)

// Shapes are chat requests of the transcript shapes that cost an
// upstream's translation the most per byte, each of about 100 KB, by
// name: what a body's buffer is sized for (translate.BodySize) and held
// to (each upstream translator's TestBodySized).
func Shapes() map[string]string {
	var agent, files, tiny, parallel, parts strings.Builder
	source := strings.Repeat(`func f(x int) string {\n\treturn fmt.Sprintf(\"%d\", x)\n}\n`, 70)
	for i := range 150 {
		call := fmt.Sprintf(`{"id":"call_%d","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"City %d\"}"}}`, i, i)
		fmt.Fprintf(&agent, `,{"role":"user","content":"Step %d: %s"},{"role":"assistant","content":null,"tool_calls":[%s]},{"role":"tool","tool_call_id":"call_%d","content":"{\"temp\":%d}"}`,
			i, strings.Repeat("check the next city. ", 12), call, i, i)
		if i < 25 {
			fmt.Fprintf(&files, `,{"role":"user","content":"read file %d"},{"role":"assistant","content":null,"tool_calls":[%s]},{"role":"tool","tool_call_id":"call_%d","content":"%s"}`, i, call, i, source)
		}
		fmt.Fprintf(&parts, `,{"role":"user","content":[%s]},{"role":"assistant","content":"b"}`, strings.TrimSuffix(strings.Repeat(`{"type":"text","text":"a"},`, 20), ","))
	}
	for range 1600 {
		tiny.WriteString(`,{"role":"user","content":"a"},{"role":"assistant","content":"b"}`)
	}
	for i := range 60 {
		var calls, replies []string
		for k := range 8 {
			id := fmt.Sprintf("call_%d_%d", i, k)
			calls = append(calls, fmt.Sprintf(`{"id":"%s","type":"function","function":{"name":"mcp__github__create_pull_request_review","arguments":"{}"}}`, id))
			replies = append(replies, fmt.Sprintf(`{"role":"tool","tool_call_id":"%s","content":"ok"}`, id))
		}
		fmt.Fprintf(&parallel, `,{"role":"user","content":"go"},{"role":"assistant","content":null,"tool_calls":[%s]},%s`, strings.Join(calls, ","), strings.Join(replies, ","))
	}
	tools := `"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}},` +
		`{"type":"function","function":{"name":"mcp__github__create_pull_request_review","parameters":{"type":"object"}}}]`
	out := map[string]string{}
	for name, msgs := range map[string]string{"agent": agent.String(), "files": files.String(), "tiny": tiny.String(), "parallel calls": parallel.String(), "tiny parts": parts.String()} {
		out[name] = `{"model":"m","messages":[{"role":"system","content":"Be careful."}` + msgs + `,{"role":"user","content":"Summarize."}],` + tools + `}`
	}
	return out
}

// BodySized holds an upstream translator to its sizing (size: the
// buffer it writes a request's body into) over each of Shapes: the body
// is written into that buffer, never a larger one (growing it would cost
// the body once more, and more), and fills at least 80% of it.
// Each shape is held so as a client sent it, and with its long strings
// put apart (Apart), as a client API's translation gives it.
func BodySized(t *testing.T, up func(*wire.ChatRequest, translate.Options) (translate.Request, error), size func(*wire.ChatRequest) int) {
	t.Helper()
	for name, body := range Shapes() {
		sent, err := wire.DecodeRequest([]byte(body))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, req := range []*wire.ChatRequest{sent, Apart(t, body)} {
			r, err := up(req, translate.Options{Model: "m", DefaultMaxTokens: 100})
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if n := size(req); cap(r.Body) != n || len(r.Body) < n*8/10 {
				t.Errorf("%s (apart: %v): %d bytes written in a buffer of %d, sized %d", name, req != sent, len(r.Body), cap(r.Body), n)
			}
		}
	}
}

// Apart decodes a chat body as a client API's translator writes it with
// translate.ChatWriter's Apart: each message's content that is a long
// string (translate.Apart) named by its index (wire.KeptContent), not
// held. It fails the test when the body does not decode.
func Apart(t TB, body string) *wire.ChatRequest {
	t.Helper()
	var top map[string]json.RawMessage
	var msgs []map[string]json.RawMessage
	if err := json.Unmarshal([]byte(body), &top); err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	if err := json.Unmarshal(top["messages"], &msgs); err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	var named []json.RawMessage
	for _, m := range msgs {
		if tok, ok := wire.StringToken(m["content"]); ok && translate.Apart(tok) {
			delete(m, "content")
			m[wire.KeptContent] = json.RawMessage(strconv.Itoa(len(named)))
			named = append(named, tok)
		}
	}
	top["messages"], _ = json.Marshal(msgs)
	b, _ := json.Marshal(top)
	req, err := wire.DecodeTranslated(b, nil, named)
	if err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	return req
}
