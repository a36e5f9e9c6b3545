package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"

	"github.com/toolgate/toolgate/internal/sim"
	"github.com/toolgate/toolgate/internal/testing/gatewaytest"
	"github.com/toolgate/toolgate/internal/testing/testredis"
)

const responsesConfig = `
responses: {store: memory}
upstreams:
  - {name: sim, url: "UPSTREAM_URL/v1"}
  - {name: claude, protocol: anthropic, url: "UPSTREAM_URL/v1"}
routes:
  - {name: effort, model: "effort-*", upstream: sim, upstream_model: sim-text, reasoning: {format: reasoning-effort, client_effort: true}}
  - {name: claude, model: "claude-*", upstream: claude}
  - {model: "*", upstream: sim}
`

var weatherFunction = []responses.ToolUnionParam{responses.ToolParamOfFunction("get_weather",
	map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}}, false)}

// respStreamed is what an openai-go Responses client saw of one stream.
type respStreamed struct {
	types    []string
	final    responses.Response
	terminal string
	err      error
}

func streamResponse(t *testing.T, e *gatewaytest.Env, params responses.ResponseNewParams, opts ...option.RequestOption) respStreamed {
	t.Helper()
	stream := e.Client("k").Responses.NewStreaming(context.Background(), params, opts...)
	defer stream.Close() // a stream that ended in an error may not have been read to its end
	var r respStreamed
	seq := int64(0)
	for stream.Next() {
		ev := stream.Current()
		if ev.SequenceNumber != seq {
			t.Errorf("event %s has sequence_number %d, want %d", ev.Type, ev.SequenceNumber, seq)
		}
		seq++
		r.types = append(r.types, ev.Type)
		switch ev.Type {
		case "response.completed", "response.incomplete", "response.failed":
			r.terminal, r.final = ev.Type, ev.Response
		}
	}
	r.err = stream.Err()
	return r
}

func input(s string) responses.ResponseNewParamsInputUnion {
	return responses.ResponseNewParamsInputUnion{OfString: openai.String(s)}
}

// Text through the Responses API, streamed and not: the documented event
// sequence (created, in_progress, the message item's added, part, deltas
// and done events, completed) with sequence numbers, the output text,
// the usage; the non-streamed response object is the same.
func TestResponsesText(t *testing.T) {
	e, _ := gatewaytest.StartSim(t, sim.Options{}, responsesConfig)
	r := streamResponse(t, e, responses.ResponseNewParams{Model: "sim-text", Input: input("hi")})
	if r.err != nil || r.terminal != "response.completed" || !strings.HasPrefix(r.final.OutputText(), "Hello from the toolgate simulator") || r.final.Usage.TotalTokens == 0 {
		t.Fatalf("err %v, terminal %q, text %q, usage %+v", r.err, r.terminal, r.final.OutputText(), r.final.Usage)
	}
	want := []string{"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added", "response.output_text.delta"}
	if strings.Join(r.types[:5], " ") != strings.Join(want, " ") {
		t.Errorf("events begin %v", r.types[:5])
	}
	tail := []string{"response.output_text.done", "response.content_part.done", "response.output_item.done", "response.completed"}
	if got := r.types[len(r.types)-4:]; strings.Join(got, " ") != strings.Join(tail, " ") {
		t.Errorf("events end %v", got)
	}
	resp, err := e.Client("k").Responses.New(context.Background(), responses.ResponseNewParams{Model: "sim-text", Input: input("hi"),
		Instructions: openai.String("Be brief.")})
	if err != nil || resp.Status != "completed" || !strings.HasPrefix(resp.OutputText(), "Hello") || resp.Instructions.OfString != "Be brief." || !strings.HasPrefix(resp.ID, "resp_") {
		t.Fatalf("non-streamed: %v %+v", err, resp)
	}
}

// Function calls through the Responses API: one streamed call, two
// parallel calls (an upstream that sends both at index 0, normalized),
// each a function_call item with its call_id, name and arguments; a call
// to an Anthropic upstream the same way.
func TestResponsesFunctionCalls(t *testing.T) {
	e, _ := gatewaytest.StartSim(t, sim.Options{}, responsesConfig)
	for _, tc := range []struct {
		model string
		calls int
	}{{"sim-tool", 1}, {"sim-q-sameindex", 2}, {"claude-parallel", 2}} {
		r := streamResponse(t, e, responses.ResponseNewParams{Model: tc.model, Input: input("weather?"), Tools: weatherFunction})
		if r.err != nil || r.terminal != "response.completed" {
			t.Fatalf("%s: err %v, terminal %q", tc.model, r.err, r.terminal)
		}
		var calls []responses.ResponseFunctionToolCall
		for _, it := range r.final.Output {
			if it.Type == "function_call" {
				calls = append(calls, it.AsFunctionCall())
			}
		}
		if len(calls) != tc.calls {
			t.Fatalf("%s: %d calls in %+v", tc.model, len(calls), r.final.Output)
		}
		for _, c := range calls {
			if c.CallID == "" || c.Name != "get_weather" || !json.Valid([]byte(c.Arguments)) || !strings.HasPrefix(c.ID, "fc_") {
				t.Errorf("%s: call %+v", tc.model, c)
			}
		}
		if !strings.Contains(strings.Join(r.types, " "), "response.function_call_arguments.done") {
			t.Errorf("%s: events %v", tc.model, r.types)
		}
	}
}

// toolLoop runs three turns of a tool conversation through stored
// responses: each follow-up names the previous response and sends only
// the function_call_output. The gateway's expansion must be the whole
// transcript, paired: nothing for repair to do, every earlier call and its
// output sent upstream (whose strict mode checks the pairing).
func toolLoop(t *testing.T, s *sim.Sim, envs ...*gatewaytest.Env) {
	t.Helper()
	prev := ""
	var calls []string
	for turn := 0; turn < 3; turn++ {
		e := envs[turn%len(envs)]
		params := responses.ResponseNewParams{Model: "sim-strict-tool", Tools: weatherFunction, Input: input("weather?")}
		if prev != "" {
			call := lastCall(t, e, prev)
			calls = append(calls, call)
			params.PreviousResponseID = openai.String(prev)
			params.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{
				{OfFunctionCallOutput: &responses.ResponseInputItemFunctionCallOutputParam{CallID: openai.String(call), Output: responses.ResponseInputItemFunctionCallOutputOutputUnionParam{OfString: openai.String("sunny")}}}}}
		}
		var raw *http.Response
		resp, err := e.Client("k").Responses.New(context.Background(), params, option.WithResponseInto(&raw))
		if err != nil {
			t.Fatalf("turn %d: %v", turn+1, err)
		}
		if r := raw.Header.Get("X-Toolgate-Repair"); r != "" {
			t.Errorf("turn %d: the expanded transcript needed repair: %s", turn+1, r)
		}
		sent := string(s.LastRequest())
		for _, c := range calls {
			if !strings.Contains(sent, `"tool_call_id":"`+c+`"`) || !strings.Contains(sent, `"id":"`+c+`"`) {
				t.Errorf("turn %d: call %s or its output missing from %s", turn+1, c, sent)
			}
		}
		prev = resp.ID
	}
}

// lastCall is the call_id of a stored response's function call (GET).
func lastCall(t *testing.T, e *gatewaytest.Env, id string) string {
	t.Helper()
	resp, err := e.Client("k").Responses.Get(context.Background(), id, responses.ResponseGetParams{})
	if err != nil {
		t.Fatalf("GET %s: %v", id, err)
	}
	for _, it := range resp.Output {
		if it.Type == "function_call" {
			return it.CallID
		}
	}
	t.Fatalf("no call in %s", id)
	return ""
}

// A tool loop with previous_response_id, stored in memory, then in a real
// Redis shared by two replicas.
func TestResponsesToolLoop(t *testing.T) {
	e, s := gatewaytest.StartSim(t, sim.Options{}, responsesConfig)
	toolLoop(t, s, e)
	srv := testredis.Start(t)
	a, b, s2 := twoGateways(t, srv, `
state: {store: redis, redis_url: "REDIS_URL", timeout: 10s}
responses: {store: redis}
upstreams: [{name: sim, url: "UPSTREAM_URL/v1"}]
routes: [{model: "*", upstream: sim}]
`)
	toolLoop(t, s2, a, b)
}

// A reloaded transcript with a function_call never answered and an output
// that answers nothing: sealed and dropped before it leaves, so the strict
// upstream accepts it.
func TestResponsesReloadedTranscript(t *testing.T) {
	e, s := gatewaytest.StartSim(t, sim.Options{}, responsesConfig)
	items := responses.ResponseInputParam{
		responses.ResponseInputItemParamOfMessage("weather in Paris and Rome?", responses.EasyInputMessageRoleUser),
		responses.ResponseInputItemParamOfFunctionCall(`{"city":"Paris"}`, "call_paris", "get_weather"),
		responses.ResponseInputItemParamOfFunctionCall(`{"city":"Rome"}`, "call_rome", "get_weather"),
		{OfFunctionCallOutput: &responses.ResponseInputItemFunctionCallOutputParam{CallID: openai.String("call_gone"), Output: responses.ResponseInputItemFunctionCallOutputOutputUnionParam{OfString: openai.String("stale")}}},
		{OfFunctionCallOutput: &responses.ResponseInputItemFunctionCallOutputParam{CallID: openai.String("call_paris"), Output: responses.ResponseInputItemFunctionCallOutputOutputUnionParam{OfString: openai.String("sunny")}}},
	}
	var raw *http.Response
	resp, err := e.Client("k").Responses.New(context.Background(), responses.ResponseNewParams{Model: "sim-strict-text", Tools: weatherFunction,
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: items}}, option.WithResponseInto(&raw))
	if err != nil || resp.Status != "completed" {
		t.Fatalf("%v %+v\nsent %s", err, resp, s.LastRequest())
	}
	if got := raw.Header.Get("X-Toolgate-Repair"); got != "sealed=1; dropped=1; moved=0" {
		t.Errorf("X-Toolgate-Repair %q", got)
	}
}

// A stream cut after it started ends with response.failed, never
// response.completed; reasoning effort reaches the route's mapping.
func TestResponsesCutAndEffort(t *testing.T) {
	e, s := gatewaytest.StartSim(t, sim.Options{}, responsesConfig)
	r := streamResponse(t, e, responses.ResponseNewParams{Model: "sim-cut", Input: input("hi")})
	if r.terminal != "response.failed" || strings.Contains(strings.Join(r.types, " "), "response.completed") || r.final.Error.Code != "upstream_stream_incomplete" {
		t.Fatalf("cut: terminal %q, events %v, error %+v, err %v", r.terminal, r.types, r.final.Error, r.err)
	}
	_, err := e.Client("k").Responses.New(context.Background(), responses.ResponseNewParams{Model: "effort-x", Input: input("hi"),
		Reasoning: shared.ReasoningParam{Effort: shared.ReasoningEffortHigh}})
	if err != nil || !strings.Contains(string(s.LastRequest()), `"reasoning_effort":"high"`) {
		t.Fatalf("effort: %v, sent %s", err, s.LastRequest())
	}
}

// Stored responses: GET returns one, DELETE removes it, store: false keeps
// none; previous_response_id without a store is a 400 saying how to
// enable it; other tool types are refused naming the type.
func TestResponsesStoredAndRefused(t *testing.T) {
	e, _ := gatewaytest.StartSim(t, sim.Options{}, responsesConfig)
	c := e.Client("k")
	resp, err := c.Responses.New(context.Background(), responses.ResponseNewParams{Model: "sim-text", Input: input("hi")})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := c.Responses.Get(context.Background(), resp.ID, responses.ResponseGetParams{}); err != nil || got.ID != resp.ID || got.OutputText() != resp.OutputText() {
		t.Fatalf("GET: %v %+v", err, got)
	}
	if err := c.Responses.Delete(context.Background(), resp.ID); err != nil {
		t.Fatalf("DELETE: %v", err)
	}
	if _, err := c.Responses.Get(context.Background(), resp.ID, responses.ResponseGetParams{}); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("GET after DELETE: %v", err)
	}
	unstored, err := c.Responses.New(context.Background(), responses.ResponseNewParams{Model: "sim-text", Input: input("hi"), Store: openai.Bool(false)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Responses.Get(context.Background(), unstored.ID, responses.ResponseGetParams{}); err == nil {
		t.Error("store: false was stored")
	}
	plain, _ := gatewaytest.StartSim(t, sim.Options{})
	_, err = plain.Client("k").Responses.New(context.Background(), responses.ResponseNewParams{Model: "sim-text", Input: input("hi"), PreviousResponseID: openai.String("resp_1")})
	if apiErr, ok := errors.AsType[*openai.Error](err); !ok || apiErr.StatusCode != 400 || apiErr.Param != "previous_response_id" || !strings.Contains(apiErr.Message, "set responses.store to memory or redis") {
		t.Errorf("previous_response_id without a store: %v", err)
	}
	// A hosted tool an upstream of another protocol cannot run is left
	// out, and said so (refuse_hosted_tools refuses it: TestCodexToolsEveryRoute).
	dropped, err := http.Post(e.URL+"/responses", "application/json", strings.NewReader(`{"model":"sim-text","input":"hi","tools":[{"type":"web_search"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(dropped.Body)
	dropped.Body.Close()
	if dropped.StatusCode != 200 || dropped.Header.Get("X-Toolgate-Dropped") != "tool:web_search" {
		t.Errorf("a web_search tool: %d %q %s", dropped.StatusCode, dropped.Header.Get("X-Toolgate-Dropped"), raw)
	}
}

// A chain of previous responses is held to the body limit: each request
// is small, the conversation they add up to is refused once it passes
// server.max_body_bytes.
func TestResponsesChainBounded(t *testing.T) {
	e, _ := gatewaytest.StartSim(t, sim.Options{}, `
server: {max_body_bytes: 4096}
responses: {store: memory}
upstreams: [{name: sim, url: "UPSTREAM_URL/v1"}]
routes: [{model: "*", upstream: sim}]
`)
	prev := ""
	for turn := 1; turn <= 20; turn++ {
		params := responses.ResponseNewParams{Model: "sim-text", Input: input(strings.Repeat("x", 500))}
		if prev != "" {
			params.PreviousResponseID = openai.String(prev)
		}
		resp, err := e.Client("k").Responses.New(context.Background(), params)
		if err != nil {
			if apiErr, ok := errors.AsType[*openai.Error](err); !ok || apiErr.StatusCode != 413 || !strings.Contains(apiErr.Message, "previous responses") || turn < 3 {
				t.Fatalf("turn %d: %v", turn, err)
			}
			return
		}
		prev = resp.ID
	}
	t.Fatal("20 turns of 500 characters passed a 4096-byte limit")
}

// The bound is the conversation's, not its translation's: on a Responses
// route, which keeps each item beside the chat message made from it, a
// request well within the limit is served.
func TestResponsesBoundOnItems(t *testing.T) {
	e, _ := gatewaytest.StartSim(t, sim.Options{}, `
server: {max_body_bytes: 4096}
upstreams: [{name: oai, protocol: responses, url: "UPSTREAM_URL/v1"}]
routes: [{model: "*", upstream: oai}]
`)
	if _, err := e.Client("k").Responses.New(context.Background(), responses.ResponseNewParams{Model: "text", Input: input(strings.Repeat("x", 2500))}); err != nil {
		t.Fatal(err)
	}
}
