package gateway_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"

	"github.com/toolgate/toolgate/internal/sim"
	"github.com/toolgate/toolgate/internal/testing/gatewaytest"
)

// streamTools runs one streamed request with a declared get_weather tool
// through openai-go's accumulator and returns the calls, the finish reason
// and the stream's error. refused counts chunks the accumulator refused.
func streamTools(t *testing.T, e *gatewaytest.Env, model string, refused ...*int) ([]openai.ChatCompletionMessageToolCallUnion, string, error) {
	t.Helper()
	stream := e.Client("k").Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
		Model: model, Messages: gatewaytest.UserMsg("weather in Paris?"),
		Tools: []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "get_weather"})},
	})
	acc := openai.ChatCompletionAccumulator{}
	for stream.Next() {
		if !acc.AddChunk(stream.Current()) {
			if len(refused) == 0 {
				t.Errorf("openai-go's accumulator refused a chunk: %s", stream.Current().RawJSON())
			} else {
				*refused[0]++
			}
		}
	}
	if len(acc.Choices) == 0 {
		return nil, "", stream.Err()
	}
	return acc.Choices[0].Message.ToolCalls, acc.Choices[0].FinishReason, stream.Err()
}

// Every quirk script of the simulator (docs/quirks.md section A) reaches an
// openai-go client as a canonical stream — complete calls with unique ids,
// string arguments and finish_reason "tool_calls" — or, for the ones that
// cannot be fixed without guessing, as an error (docs/spec.md §2).
func TestQuirksNormalized(t *testing.T) {
	e, _ := gatewaytest.StartSim(t, sim.Options{}, `
upstreams: [{name: sim, url: "UPSTREAM_URL/v1"}]
routes: [{model: "*", upstream: sim}]
`)
	unfixable := map[string]string{
		"cutargs": "broke off", "negindex": "non-negative integer", "dupid": "already used",
		"truncated": "cut off or garbled: Failed to parse arguments", "repeatargs": "cut off or garbled", "errorevent": "Provider returned error", "nonjson": "not a JSON object",
		"placeholderid": "left without name", "toolusefailed": "Failed to call a function",
	}
	// Markup leaked into content (A41) cannot be told from text: it passes
	// as a text answer.
	asText := map[string]bool{"markup": true}
	for _, name := range sim.QuirkNames() {
		t.Run(name, func(t *testing.T) {
			calls, finish, err := streamTools(t, e, "sim-q-"+name)
			if asText[name] {
				if err != nil || len(calls) != 0 || finish != "stop" {
					t.Fatalf("err %v, %d calls, finish %q", err, len(calls), finish)
				}
				return
			}
			if want, ok := unfixable[name]; ok {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Fatalf("err = %v, want one saying %q", err, want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if finish != "tool_calls" || len(calls) == 0 {
				t.Fatalf("finish %q, %d calls", finish, len(calls))
			}
			ids := map[string]bool{}
			for _, c := range calls {
				if c.ID == "" || ids[c.ID] || c.Function.Name != "get_weather" || !json.Valid([]byte(c.Function.Arguments)) {
					t.Errorf("call %+v", c)
				}
				ids[c.ID] = true
			}
			if (name == "sameindex" || name == "sameindexwhole" || name == "interleaved") && len(calls) != 2 {
				t.Errorf("%d calls, want 2", len(calls))
			}
			if name == "extracontent" {
				resp := e.Post(t, `{"model":"sim-q-extracontent","stream":true,"messages":[{"role":"user","content":"x"}]}`)
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if !strings.Contains(string(b), `"extra_content":{"google":{"thought_signature":"sig=="}}`) {
					t.Errorf("extra_content lost:\n%s", b)
				}
			}
		})
	}
	// Each script's normalization is counted, once per time it was
	// applied, against the upstream.
	for kind, want := range map[string]float64{
		"index_reuse":           3, // sameindex and sameindexwhole (the second call at index 0), placeholderid (a second id at index 0)
		"arguments_object":      1, // argsobject
		"second_finish_reason":  1, // twofinish
		"missing_finish_reason": 1, // nofinish
		"no_done":               1, // nodone
		"placeholder_chunk":     1, // chunkids
		"missing_index":         2, // noindex: both fragments
		"choice_index":          3, // choiceindex: every chunk
		"missing_id":            2, // noid, noidfield
		"content_blocks":        2, // blocks: both content chunks
		"dropped_block":         1, // blocks: the reference
		"post_finish_chunk":     2, // postfinish, postusage
	} {
		if n := e.Metric(t, "toolgate_normalizations_total", map[string]string{"kind": kind, "upstream": "sim"}); n != want {
			t.Errorf("toolgate_normalizations_total{kind=%q} = %v, want %v", kind, n, want)
		}
	}
}

// With quirks: strict, the same quirks are protocol errors or policy
// violations, never a silently altered stream; conforming variations
// (sparse indexes, a late name, keep-alives) still pass.
func TestQuirksStrict(t *testing.T) {
	e, _ := gatewaytest.StartSim(t, sim.Options{}, `
upstreams: [{name: sim, url: "UPSTREAM_URL/v1", quirks: strict}]
routes: [{model: "*", upstream: sim}]
`)
	// chunkids passes unchanged: a chunk id that changes breaks no protocol
	// rule, so strict leaves it (and openai-go's accumulator drops chunks).
	pass := map[string]bool{"sparse": true, "latename": true, "keepalive": true, "chunkids": true, "emptyfinish": true,
		"emptytoolcalls": true, "extracontent": true, "interleaved": true, "multiline": true, "notype": true, "onechunk": true, "usageonly": true,
		"cumulativeusage": true, "markup": true, "reasoningfield": true, "thinkinline": true, "blocks": true, "postfinish": true, "postusage": true}
	for _, name := range sim.QuirkNames() {
		t.Run(name, func(t *testing.T) {
			var refused int
			_, _, err := streamTools(t, e, "sim-q-"+name, &refused)
			if pass[name] != (err == nil) {
				t.Fatalf("err = %v, want pass=%v", err, pass[name])
			}
		})
	}
}

// The completion policy through the gateway: tool_choice "required"
// answered with text is a violation the client sees as an error; an
// unknown tool_choice is refused before anything is sent (docs/spec.md §3).
func TestPolicyThroughGateway(t *testing.T) {
	e, s := gatewaytest.StartSim(t, sim.Options{})
	stream := e.Client("k").Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
		Model: "sim-text", Messages: gatewaytest.UserMsg("hi"),
		Tools:      []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "get_weather"})},
		ToolChoice: openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String("required")},
	})
	n := 0
	for stream.Next() {
		n++
	}
	if stream.Err() == nil || !strings.Contains(stream.Err().Error(), "completion_policy_violation") || n == 0 {
		t.Fatalf("chunks %d, err %v", n, stream.Err())
	}
	before := s.Requests()
	resp := e.Post(t, `{"model":"sim-text","messages":[{"role":"user","content":"x"}],"tool_choice":"any"}`)
	body, raw := gatewaytest.ReadError(t, resp)
	if resp.StatusCode != 400 || body.Error.Param == nil || *body.Error.Param != "tool_choice" || s.Requests() != before {
		t.Fatalf("status %d body %s", resp.StatusCode, raw)
	}
	if gatewaytest.WithField(e.WaitAccess(t, 2), "outcome", "violation") == nil {
		t.Error("no access line with outcome violation")
	}
}

// Argument validation through the gateway: a call whose arguments break
// the declared schema ends the stream as a violation on a reject route,
// and passes, logged and counted, on an annotate route (docs/spec.md §2).
func TestArgumentValidationThroughGateway(t *testing.T) {
	e, _ := gatewaytest.StartSim(t, sim.Options{}, `
upstreams: [{name: sim, url: "UPSTREAM_URL/v1"}]
routes:
  - {model: strict-args, upstream: sim, upstream_model: sim-tool, validate_arguments: reject}
  - {model: loose-args, upstream: sim, upstream_model: sim-tool}
`)
	params := shared.FunctionParameters{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "integer"}}}
	run := func(model string) error {
		stream := e.Client("k").Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
			Model: model, Messages: gatewaytest.UserMsg("weather?"),
			Tools: []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "get_weather", Parameters: params})},
		})
		for stream.Next() {
		}
		return stream.Err()
	}
	if err := run("strict-args"); err == nil || !strings.Contains(err.Error(), "invalid tool-call arguments") {
		t.Fatalf("reject route: err = %v", err)
	}
	if err := run("loose-args"); err != nil {
		t.Fatalf("annotate route: %v", err)
	}
	a := gatewaytest.WithField(e.WaitAccess(t, 2), "route", "loose-args")
	if s, _ := a["invalid_arguments"].(string); !strings.Contains(s, "call_sim_1") {
		t.Errorf("access %v", a)
	}
}

// tool_calls: buffer holds every fragment until the response is complete
// and judged: the client gets each call whole, in one chunk; with reject
// validation an invalid call never reaches the client at all.
func TestBufferedToolCalls(t *testing.T) {
	e, _ := gatewaytest.StartSim(t, sim.Options{}, `
upstreams: [{name: sim, url: "UPSTREAM_URL/v1"}]
routes:
  - {model: buffered, upstream: sim, upstream_model: sim-tool, tool_calls: buffer}
  - {model: strict-args, upstream: sim, upstream_model: sim-tool, validate_arguments: reject}
`)
	tools := `"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"integer"}}}}}]`
	read := func(model string) string {
		resp := e.Post(t, `{"model":"`+model+`","stream":true,"messages":[{"role":"user","content":"x"}],`+tools+`}`)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return string(b)
	}
	body := read("buffered")
	if n := strings.Count(body, `"tool_calls":[`); n != 1 || !strings.Contains(body, `"arguments":"{\"city\":\"Paris\"}"`) ||
		!strings.HasSuffix(body, "data: [DONE]\n\n") || strings.Index(body, `"tool_calls":[`) > strings.Index(body, `"finish_reason":"tool_calls"`) {
		t.Errorf("buffered stream:\n%s", body)
	}
	body = read("strict-args")
	if strings.Contains(body, `"tool_calls":[`) || !strings.Contains(body, "completion_policy_violation") || strings.Contains(body, "[DONE]") {
		t.Errorf("rejected stream:\n%s", body)
	}
}

// response_format json_schema through the gateway: the simulator's prose
// answer does not match, and the stream ends with an error, not [DONE].
func TestResponseFormatThroughGateway(t *testing.T) {
	e, _ := gatewaytest.StartSim(t, sim.Options{})
	resp := e.Post(t, `{"model":"sim-text","stream":true,"messages":[{"role":"user","content":"x"}],`+
		`"response_format":{"type":"json_schema","json_schema":{"name":"r","schema":{"type":"object"}}}}`)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), "response_format") || strings.Contains(string(b), "[DONE]") {
		t.Errorf("stream:\n%s", b)
	}
}

// A route with retries asks the upstream again when a response breaks off
// or violates the policy before anything reached the client; without
// retries the client gets the error (docs/spec.md §3).
func TestRetryBeforeCommit(t *testing.T) {
	var hits atomic.Int32
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		n := hits.Add(1)
		if r.Header.Get("Accept") == "text/event-stream" {
			w.Header().Set("Content-Type", "text/event-stream")
			if n%2 == 1 {
				return // broken before the first event
			}
			io.WriteString(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
			return
		}
		if n%2 == 1 { // text although a call is required
			io.WriteString(w, `{"choices":[{"index":0,"message":{"role":"assistant","content":"no"},"finish_reason":"stop"}]}`)
			return
		}
		io.WriteString(w, `{"choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}`)
	}))
	defer up.Close()
	e := gatewaytest.Start(t, up.URL, `
upstreams: [{name: u, url: "UPSTREAM_URL/v1"}]
routes:
  - {model: again, upstream: u, retries: 1}
  - {model: once, upstream: u}
`)
	tools := `"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"required"`
	resp := e.Post(t, `{"model":"again","messages":[{"role":"user","content":"x"}],`+tools+`}`)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || hits.Load() != 2 {
		t.Fatalf("status %d after %d upstream calls: %s", resp.StatusCode, hits.Load(), b)
	}
	resp = e.Post(t, `{"model":"again","stream":true,"messages":[{"role":"user","content":"x"}]}`)
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.HasSuffix(string(b), "data: [DONE]\n\n") || hits.Load() != 4 {
		t.Fatalf("stream after %d calls: %s", hits.Load(), b)
	}
	resp = e.Post(t, `{"model":"once","messages":[{"role":"user","content":"x"}],`+tools+`}`)
	body, raw := gatewaytest.ReadError(t, resp)
	if resp.StatusCode != 502 || body.Error.Code == nil || *body.Error.Code != "completion_policy_violation" || hits.Load() != 5 {
		t.Fatalf("status %d: %s", resp.StatusCode, raw)
	}
	retried := 0
	for _, l := range e.WaitAccess(t, 3) {
		if l["attempts"] == int64(2) {
			retried++
		}
	}
	if retried != 2 {
		t.Errorf("%d access lines say attempts=2, want 2", retried)
	}
}

// A non-streamed response goes through the same collector and judge: an
// object given as arguments becomes a string and "stop" after calls
// becomes "tool_calls", so openai-go decodes the call (docs/quirks.md A12, A15).
func TestNonStreamQuirks(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		io.WriteString(w, `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,`+
			`"tool_calls":[{"id":"c1","type":"function","function":{"name":"get_weather","arguments":{"city":"Paris"}},"extra_content":{"k":1}}]},"finish_reason":"stop"}]}`)
	}))
	defer up.Close()
	e := gatewaytest.Start(t, up.URL, gatewaytest.SimConfig)
	res, err := e.Client("k").Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model: "m", Messages: gatewaytest.UserMsg("weather?"),
		Tools: []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "get_weather"})},
	})
	if err != nil {
		t.Fatal(err)
	}
	c := res.Choices[0]
	if c.FinishReason != "tool_calls" || len(c.Message.ToolCalls) != 1 || c.Message.ToolCalls[0].Function.Arguments != `{"city":"Paris"}` ||
		!strings.Contains(c.Message.ToolCalls[0].RawJSON(), `"extra_content":{"k":1}`) {
		t.Fatalf("%s", c.RawJSON())
	}
}

// A single-choice request answered with one choice per call has its calls
// folded into choice 0, so clients reading choices[0] see them all
// (docs/quirks.md A28).
func TestMergedChoices(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		call := func(id, city string) string {
			return `{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"` + id +
				`","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"` + city + `\"}"}}]},"finish_reason":"tool_calls"}`
		}
		io.WriteString(w, `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[`+call("a", "Paris")+`,`+strings.Replace(call("b", "Rome"), `"index":0`, `"index":1`, 1)+`]}`)
	}))
	defer up.Close()
	e := gatewaytest.Start(t, up.URL, gatewaytest.SimConfig)
	res, err := e.Client("k").Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model: "m", Messages: gatewaytest.UserMsg("weather?"),
		Tools: []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "get_weather"})},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Choices) != 1 || len(res.Choices[0].Message.ToolCalls) != 2 || res.Choices[0].Message.ToolCalls[1].ID != "b" {
		t.Fatalf("%s", res.RawJSON())
	}
}
