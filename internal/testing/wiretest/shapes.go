package wiretest

import (
	"fmt"
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
func BodySized(t *testing.T, up func(*wire.ChatRequest, translate.Options) (translate.Request, error), size func(*wire.ChatRequest) int) {
	t.Helper()
	for name, body := range Shapes() {
		req, err := wire.DecodeRequest([]byte(body))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		r, err := up(req, translate.Options{Model: "m", DefaultMaxTokens: 100})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if n := size(req); cap(r.Body) != n || len(r.Body) < n*8/10 {
			t.Errorf("%s: %d bytes written in a buffer of %d, sized %d", name, len(r.Body), cap(r.Body), n)
		}
	}
}
