package gateway_test

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/toolgate/toolgate/internal/sim"
	"github.com/toolgate/toolgate/internal/testing/gatewaytest"
)

// dialectEnv routes sim-q-<script> to a normalizing upstream and
// strict-<script> to a strict one, both the simulator.
func dialectEnv(t *testing.T) *gatewaytest.Env {
	e, _ := gatewaytest.StartSim(t, sim.Options{}, `
upstreams:
  - {name: sim, url: "UPSTREAM_URL/v1"}
  - {name: strict, url: "UPSTREAM_URL/v1", quirks: strict}
routes:
  - {model: "strict-noid", upstream: strict, upstream_model: sim-q-noid}
  - {model: "strict-blocks", upstream: strict, upstream_model: sim-q-blocks}
  - {model: "strict-postfinish", upstream: strict, upstream_model: sim-q-postfinish}
  - {model: "strict-postusage", upstream: strict, upstream_model: sim-q-postusage}
  - {model: "*", upstream: sim}
`)
	return e
}

// streamed is what an openai-go client made of one stream: the
// accumulated message and finish reason, every chunk's raw JSON, and the
// stream's error.
type streamed struct {
	msg    openai.ChatCompletionMessage
	finish string
	raw    []string
	usage  int64
	err    error
}

func streamWith(t *testing.T, e *gatewaytest.Env, model string, opts ...option.RequestOption) streamed {
	t.Helper()
	params := openai.ChatCompletionNewParams{
		Model: model, Messages: gatewaytest.UserMsg("weather in Paris?"),
		Tools:         []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "get_weather"})},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	}
	return accumulate(t, e, params, opts...)
}

// accumulate streams one request through openai-go's accumulator, which
// must take every chunk.
func accumulate(t *testing.T, e *gatewaytest.Env, params openai.ChatCompletionNewParams, opts ...option.RequestOption) streamed {
	t.Helper()
	stream := e.Client("k").Chat.Completions.NewStreaming(context.Background(), params, opts...)
	acc := openai.ChatCompletionAccumulator{}
	var s streamed
	for stream.Next() {
		if !acc.AddChunk(stream.Current()) {
			t.Errorf("openai-go's accumulator refused a chunk: %s", stream.Current().RawJSON())
		}
		s.raw = append(s.raw, stream.Current().RawJSON())
	}
	s.err = stream.Err()
	if len(acc.Choices) > 0 {
		s.msg, s.finish = acc.Choices[0].Message, string(acc.Choices[0].FinishReason)
	}
	s.usage = acc.Usage.TotalTokens
	return s
}

// chatToolLoop runs a three-step tool loop on model through openai-go's
// accumulator, the client rebuilding each assistant turn with ToParam
// (which keeps no provider extras) and answering each call "sunny": the
// first two steps must end in one call, the third in text starting
// "Hello". sent is the upstream's last request, shown on failure.
func chatToolLoop(t *testing.T, e *gatewaytest.Env, model string, sent func() []byte) {
	t.Helper()
	history := gatewaytest.UserMsg("weather in Paris, then Rome?")
	for step := 1; ; step++ {
		r := accumulate(t, e, openai.ChatCompletionNewParams{Model: model, Messages: history, Tools: weatherTool})
		switch {
		case r.err != nil:
			t.Fatalf("step %d: %v (sent %s)", step, r.err, sent())
		case step == 3:
			if r.finish != "stop" || !strings.HasPrefix(r.msg.Content, "Hello") {
				t.Fatalf("step 3: finish %q, content %q", r.finish, r.msg.Content)
			}
			return
		case r.finish != "tool_calls" || len(r.msg.ToolCalls) != 1:
			t.Fatalf("step %d: finish %q, %d calls", step, r.finish, len(r.msg.ToolCalls))
		}
		history = append(history, r.msg.ToParam(), openai.ToolMessage("sunny", r.msg.ToolCalls[0].ID))
	}
}

// deltaField concatenates choice 0's delta member name over the chunks.
func deltaField(t *testing.T, raw []string, name string) string {
	var out strings.Builder
	for _, r := range raw {
		var c struct {
			Choices []struct {
				Delta map[string]json.RawMessage `json:"delta"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(r), &c); err != nil {
			t.Fatalf("chunk %s: %v", r, err)
		}
		for _, ch := range c.Choices {
			var s string
			if json.Unmarshal(ch.Delta[name], &s) == nil {
				out.WriteString(s)
			}
		}
	}
	return out.String()
}

// A07: a call without an id gets one — OpenAI-safe, stable within the
// answer and from one identical answer to the next — and the stream
// passes; strict leaves it an incomplete call, a violation.
func TestMissingIDs(t *testing.T) {
	e := dialectEnv(t)
	for _, script := range []string{"noid", "noidfield"} {
		a, b := streamWith(t, e, "sim-q-"+script), streamWith(t, e, "sim-q-"+script)
		if a.err != nil || a.finish != "tool_calls" || len(a.msg.ToolCalls) != 1 {
			t.Fatalf("%s: err %v, finish %q, %d calls", script, a.err, a.finish, len(a.msg.ToolCalls))
		}
		id := a.msg.ToolCalls[0].ID
		if !strings.HasPrefix(id, "call_") || len(id) != 29 || strings.Trim(id[5:], "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz") != "" {
			t.Errorf("%s: synthesized id %q", script, id)
		}
		if len(b.msg.ToolCalls) != 1 || b.msg.ToolCalls[0].ID != id {
			t.Errorf("%s: the same answer got another id: %q, then %+v", script, id, b.msg.ToolCalls)
		}
		if a.msg.ToolCalls[0].Function.Arguments != `{"city":"Paris"}` {
			t.Errorf("%s: arguments %q", script, a.msg.ToolCalls[0].Function.Arguments)
		}
	}
	if s := streamWith(t, e, "strict-noid"); s.err == nil || !strings.Contains(s.err.Error(), "left without id") {
		t.Errorf("strict: err %v", s.err)
	}
}

// A31: content sent as typed blocks reaches the client as its text, the
// thinking blocks as reasoning in reasoning_content, the reference block
// dropped; strict passes the blocks on as they came.
func TestContentBlocks(t *testing.T) {
	e := dialectEnv(t)
	s := streamWith(t, e, "sim-q-blocks")
	if s.err != nil || s.msg.Content != "Looking it up." || s.finish != "tool_calls" || len(s.msg.ToolCalls) != 1 {
		t.Fatalf("err %v, content %q, finish %q, %d calls", s.err, s.msg.Content, s.finish, len(s.msg.ToolCalls))
	}
	if r := deltaField(t, s.raw, "reasoning_content"); r != "The user wants the weather." {
		t.Errorf("reasoning %q", r)
	}
	for _, r := range s.raw {
		if strings.Contains(r, `"type":"thinking"`) || strings.Contains(r, "reference") {
			t.Errorf("a block reached the client: %s", r)
		}
	}
	if s := streamWith(t, e, "strict-blocks"); !strings.Contains(strings.Join(s.raw, "\n"), `"type":"reference"`) {
		t.Errorf("strict altered the blocks: %v", s.raw)
	}
}

// A chunk after the finish chunk with finish_reason null (Azure's content
// filter results, OpenRouter's usage) erases the finish reason in
// openai-go's accumulator when it passes as it came (strict); normalized,
// the finish reason goes once, in the last chunk of the choice, with the
// content filter results, and the usage still reaches the client.
func TestPostFinishChunks(t *testing.T) {
	e := dialectEnv(t)
	for _, script := range []string{"postfinish", "postusage"} {
		if s := streamWith(t, e, "strict-"+script); s.err != nil || s.finish != "" {
			t.Errorf("strict %s: err %v, finish %q (the accumulator's reading of the upstream as it is)", script, s.err, s.finish)
		}
		s := streamWith(t, e, "sim-q-"+script)
		if s.err != nil || s.finish != "tool_calls" || len(s.msg.ToolCalls) != 1 || script == "postusage" && s.usage != 12 {
			t.Fatalf("%s: err %v, finish %q, %d calls, usage %d", script, s.err, s.finish, len(s.msg.ToolCalls), s.usage)
		}
		finishes := 0
		for i, r := range s.raw {
			if strings.Contains(r, `"finish_reason":"tool_calls"`) {
				finishes++
				if script == "postfinish" && !strings.Contains(r, `"content_filter_results":{"hate":{"filtered":false,"severity":"safe"}}`) {
					t.Errorf("the content filter results were not kept with the finish: %s", r)
				}
				// Only the usage chunk (no choices) may follow.
				for _, later := range s.raw[i+1:] {
					if !strings.Contains(later, `"choices":[]`) {
						t.Errorf("%s: a chunk for the choice after its finish: %s", script, later)
					}
				}
			}
		}
		if finishes != 1 {
			t.Errorf("%s: %d chunks with the finish reason", script, finishes)
		}
	}
}

// C04: an upstream that refuses tool-call ids over 40 characters (the
// simulator's strict mode, as OpenAI) gets them shortened, consistently
// in the call and its reply, for that request only, when the upstream says
// its limit; without it, OpenAI's 400 reaches the client.
func TestLongToolCallIDs(t *testing.T) {
	e, s := gatewaytest.StartSim(t, sim.Options{}, `
upstreams:
  - {name: openai, url: "UPSTREAM_URL/v1", max_tool_call_id_len: 40}
  - {name: unlimited, url: "UPSTREAM_URL/v1"}
routes:
  - {model: "limited", upstream: openai, upstream_model: sim-strict-text}
  - {model: "unlimited", upstream: unlimited, upstream_model: sim-strict-text}
`)
	long := "fc_68b7c3d9e0a48190b2a1c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8" // a Responses id, 53 characters
	transcript := `"messages":[{"role":"user","content":"weather?"},` +
		`{"role":"assistant","content":null,"tool_calls":[{"id":"` + long + `","type":"function","function":{"name":"get_weather","arguments":"{}"}}]},` +
		`{"role":"tool","tool_call_id":"` + long + `","content":"sunny"},{"role":"user","content":"thanks"}]}`
	resp := e.Post(t, `{"model":"unlimited",`+transcript)
	body, raw := gatewaytest.ReadError(t, resp)
	if resp.StatusCode != 400 || body.Error.Code == nil || *body.Error.Code != "string_above_max_length" || !strings.Contains(body.Error.Message, "maximum length 40, but got a string with length 53") {
		t.Fatalf("without the limit: %d %s", resp.StatusCode, raw)
	}
	resp = e.Post(t, `{"model":"limited",`+transcript)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("X-Toolgate-Normalize") != "shortened_call_ids=1" {
		t.Fatalf("with the limit: %d, X-Toolgate-Normalize %q", resp.StatusCode, resp.Header.Get("X-Toolgate-Normalize"))
	}
	sent := string(s.LastRequest())
	if strings.Contains(sent, long) || strings.Count(sent, `"call_`) != 2 {
		t.Errorf("the upstream got %s", sent)
	}
}
