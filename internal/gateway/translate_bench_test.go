package gateway_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/testing/wiretest"
	"github.com/toolgate/toolgate/internal/translate"
	"github.com/toolgate/toolgate/internal/translate/anthropic"
	"github.com/toolgate/toolgate/internal/translate/bedrock"
	"github.com/toolgate/toolgate/internal/translate/gemini"
	"github.com/toolgate/toolgate/internal/translate/responses"
	"github.com/toolgate/toolgate/internal/wire"
)

// agentTurns is an agent's transcript of n turns, each a user step, an
// assistant call and its result, as each client API writes it: the shape
// of the requests the gateway translates most.
func agentTurns(api string, n int) []byte { return agentTurnsOf(api, n, 0) }

// agentTurnsOf is agentTurns whose results are, with file > 0, a source
// file of about that many bytes each (what a coding agent's read tool
// returns: quotes, tabs and newlines, escaped in JSON).
func agentTurnsOf(api string, n, file int) []byte {
	step := func(i int) string {
		return fmt.Sprintf("Step %d: %s", i, strings.Repeat("check the next city and report. ", 8))
	}
	line := "func f(x int) string {\n\treturn fmt.Sprintf(\"%d\", x)\n}\n"
	source := strings.Repeat(line, file/len(line)+1)[:file]
	result := func(i int) string {
		if file > 0 {
			return fmt.Sprintf("// file %d\n", i) + source
		}
		return fmt.Sprintf(`{"city":"City %d","temp":%d,"sky":"%s"}`, i, 10+i%15, strings.Repeat("clear ", 10))
	}
	args := func(i int) string { return fmt.Sprintf(`{"city":"City %d","unit":"c"}`, i) }
	var msgs []any
	switch api {
	case "messages":
		for i := range n {
			id := fmt.Sprintf("toolu_%d", i)
			msgs = append(msgs, map[string]any{"role": "user", "content": step(i)},
				map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": id, "name": "get_weather", "input": json.RawMessage(args(i))}}},
				map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": id, "content": result(i)}}})
		}
		msgs = append(msgs, map[string]any{"role": "user", "content": "Summarize."})
		b, _ := json.Marshal(map[string]any{"model": "MODEL", "max_tokens": 1024, "system": "You are a careful agent.", "messages": msgs,
			"tools": []any{map[string]any{"name": "get_weather", "description": "Weather for a city.", "input_schema": json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"},"unit":{"type":"string"}},"required":["city"]}`)}}})
		return b
	case "responses":
		for i := range n {
			id := fmt.Sprintf("call_%d", i)
			msgs = append(msgs, map[string]any{"role": "user", "content": step(i)},
				map[string]any{"type": "function_call", "call_id": id, "name": "get_weather", "arguments": args(i)},
				map[string]any{"type": "function_call_output", "call_id": id, "output": result(i)})
		}
		msgs = append(msgs, map[string]any{"role": "user", "content": "Summarize."})
		b, _ := json.Marshal(map[string]any{"model": "MODEL", "instructions": "You are a careful agent.", "input": msgs, "store": false,
			"tools": []any{map[string]any{"type": "function", "name": "get_weather", "description": "Weather for a city.", "parameters": json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"},"unit":{"type":"string"}},"required":["city"]}`)}}})
		return b
	}
	msgs = append(msgs, map[string]any{"role": "system", "content": "You are a careful agent."})
	for i := range n {
		id := fmt.Sprintf("call_%d", i)
		msgs = append(msgs, map[string]any{"role": "user", "content": step(i)},
			map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{"id": id, "type": "function", "function": map[string]any{"name": "get_weather", "arguments": args(i)}}}},
			map[string]any{"role": "tool", "tool_call_id": id, "content": result(i)})
	}
	msgs = append(msgs, map[string]any{"role": "user", "content": "Summarize."})
	b, _ := json.Marshal(map[string]any{"model": "MODEL", "messages": msgs,
		"tools": []any{map[string]any{"type": "function", "function": map[string]any{"name": "get_weather", "description": "Weather for a city.", "parameters": json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"},"unit":{"type":"string"}},"required":["city"]}`)}}}})
	return b
}

// quietUpstream reads each request whole and answers it with a short
// text in its protocol, allocating next to nothing: what a benchmark of
// the gateway's memory counts is the gateway's.
func quietUpstream(b *testing.B) string {
	answers := map[string][]byte{
		"/chat/completions": []byte(`{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`),
		"/messages":         []byte(`{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}`),
		"/responses":        []byte(`{"id":"resp_1","object":"response","created_at":1,"status":"completed","model":"m","output":[{"type":"message","id":"msg_1","role":"assistant","status":"completed","content":[{"type":"output_text","text":"ok","annotations":[]}]}],"usage":{"input_tokens":1,"output_tokens":1,"total_tokens":2}}`),
		"/converse":         []byte(`{"output":{"message":{"role":"assistant","content":[{"text":"ok"}]}},"stopReason":"end_turn","usage":{"inputTokens":1,"outputTokens":1,"totalTokens":2}}`),
		":generateContent":  []byte(`{"candidates":[{"content":{"role":"model","parts":[{"text":"ok"}]},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":1,"candidatesTokenCount":1,"totalTokenCount":2}}`),
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		for suffix, a := range answers {
			if strings.HasSuffix(r.URL.Path, suffix) {
				_, _ = w.Write(a)
				return
			}
		}
		http.NotFound(w, r)
	}))
	b.Cleanup(srv.Close)
	return srv.URL
}

// BenchmarkTranslationMemory is what a request costs the gateway in
// memory, per byte of its body, on each client API × upstream protocol:
// an agent transcript decoded, translated for the route's upstream,
// repaired and encoded, served in process against an upstream that
// answers in a few bytes. alloc-per-body-byte is every byte the process
// allocated for a 100-turn transcript (about 60 KB) over the body's
// length (reading the body and writing the upstream's request included);
// marginal-alloc-per-byte what each byte more costs, from a 400-turn one
// (the per-request costs, such as the transport's copy buffer, left out).
func BenchmarkTranslationMemory(b *testing.B) {
	translationMemory(b, func(api string, n int) []byte { return agentTurnsOf(api, n, 0) })
}

// BenchmarkTranslationMemoryFiles is BenchmarkTranslationMemory on a
// coding agent's transcript: each result a 4 KB source file.
func BenchmarkTranslationMemoryFiles(b *testing.B) {
	translationMemory(b, func(api string, n int) []byte { return agentTurnsOf(api, n, 4096) })
}

// BenchmarkTranslationMemoryTiny is BenchmarkTranslationMemory on the
// costliest shape per byte: a transcript of one-letter messages, each
// turn a user's and an assistant's (the count of messages, not the
// body's size, bounds what it costs: server.max_messages).
func BenchmarkTranslationMemoryTiny(b *testing.B) {
	translationMemory(b, func(api string, n int) []byte {
		turn, head := `{"role":"user","content":"a"},{"role":"assistant","content":"b"},`, `{"model":"MODEL","messages":[`
		switch api {
		case "messages":
			head = `{"model":"MODEL","max_tokens":10,"messages":[`
		case "responses":
			head = `{"model":"MODEL","store":false,"input":[`
		}
		return []byte(head + strings.Repeat(turn, n) + `{"role":"user","content":"a"}]}`)
	})
}

// translationMemory serves transcripts of 100 and 400 turns (turns) on
// each client API × upstream protocol.
func translationMemory(b *testing.B, turns func(api string, n int) []byte) {
	up := quietUpstream(b)
	g := newBenchGateway(b, `
upstreams:
  - {name: openai, url: "`+up+`/v1"}
  - {name: anthropic, protocol: anthropic, url: "`+up+`/v1"}
  - {name: gemini, protocol: gemini, url: "`+up+`/v1beta"}
  - {name: responses, protocol: responses, url: "`+up+`/v1"}
  - {name: bedrock, protocol: bedrock, url: "`+up+`"}
routes:
  - {model: "openai", upstream: openai}
  - {model: "anthropic", upstream: anthropic}
  - {model: "gemini", upstream: gemini}
  - {model: "responses", upstream: responses}
  - {model: "bedrock", upstream: bedrock}
`)
	paths := map[string]string{"chat": "/v1/chat/completions", "messages": "/v1/messages", "responses": "/v1/responses"}
	for _, api := range []string{"chat", "messages", "responses"} {
		for _, protocol := range []string{"openai", "anthropic", "gemini", "responses", "bedrock"} {
			body := func(n int) []byte {
				return bytes.Replace(turns(api, n), []byte(`"MODEL"`), []byte(`"`+protocol+`"`), 1)
			}
			small, large := body(100), body(400)
			b.Run(api+"/"+protocol, func(b *testing.B) {
				serve := func(body []byte) func() {
					return func() {
						r := httptest.NewRequest("POST", paths[api], bytes.NewReader(body))
						r.Header.Set("Content-Type", "application/json")
						r.Header.Set("Anthropic-Version", "2023-06-01")
						w := httptest.NewRecorder()
						g.ServeHTTP(w, r)
						if w.Code != 200 {
							b.Fatalf("%d %s", w.Code, w.Body.String())
						}
					}
				}
				serve(small)()
				serve(large)()
				wiretest.MarginalAllocPerByte(b, len(small), serve(small), len(large), serve(large))
			})
		}
	}
}

// BenchmarkDecodeTranslate is what decoding and translating an agent
// transcript (agentTurns) costs in memory on each client API × upstream
// protocol, apart from serving it: the client's body decoded (translated
// into the chat form, the long strings put apart where the gateway puts
// them), repaired, counted against the input budget, and written for the
// upstream (encoded, for chat completions), as the gateway does between
// reading the body and sending it. alloc-per-body-byte is for a 100-turn
// transcript, marginal-alloc-per-byte each byte more, from a 400-turn
// one.
func BenchmarkDecodeTranslate(b *testing.B) {
	for _, api := range []string{"chat", "messages", "responses"} {
		for _, p := range []translate.Protocol{translate.OpenAI, translate.Anthropic, translate.Gemini, translate.Responses, translate.Bedrock} {
			small, large := agentTurns(api, 100), agentTurns(api, 400)
			b.Run(api+"/"+p.String(), func(b *testing.B) {
				run := func(body []byte) func() {
					return func() {
						if out, _ := translateClient(api, body, p, p != translate.OpenAI); out.Err != "" {
							b.Fatal(out.Err)
						}
					}
				}
				wiretest.MarginalAllocPerByte(b, len(small), run(small), len(large), run(large))
			})
		}
	}
}

// BenchmarkUpstreamTranslation is what each upstream translator costs,
// on its own, on the chat form of a 100-turn agent transcript
// (agentTurns): time, bytes and allocations per request body written.
func BenchmarkUpstreamTranslation(b *testing.B) {
	req, err := wire.DecodeRequest(agentTurns("chat", 100))
	if err != nil {
		b.Fatal(err)
	}
	o := translate.Options{Model: "m", DefaultMaxTokens: 4096, CarriedMember: "carried"}
	for _, c := range []struct {
		name      string
		translate func(*wire.ChatRequest, translate.Options) (translate.Request, error)
	}{{"anthropic", anthropic.UpstreamRequest}, {"gemini", gemini.Request}, {"responses", responses.UpstreamRequest}, {"bedrock", bedrock.Request}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.translate(req, o); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
