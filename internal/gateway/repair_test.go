package gateway_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/toolgate/toolgate/internal/sim"
	"github.com/toolgate/toolgate/internal/testing/gatewaytest"
)

// startStrict runs the simulator in front of three routes whose only
// difference is the repair mode; the simulator answers OpenAI's 400 to any
// transcript that breaks its pairing rules.
func startStrict(t *testing.T) (*gatewaytest.Env, *sim.Sim) {
	t.Helper()
	return gatewaytest.StartSim(t, sim.Options{Strict: true}, `
upstreams: [{name: sim, url: "UPSTREAM_URL/v1"}]
routes:
  - {model: fix-model, upstream: sim, upstream_model: sim-text}
  - {model: off-model, upstream: sim, upstream_model: sim-text, repair: "off"}
  - {model: reject-model, upstream: sim, upstream_model: sim-text, repair: reject}
`)
}

// reloaded is a session restored mid-turn: a call with no reply (call_b),
// and a reply (call_a) that landed after a later user message.
func reloaded() []openai.ChatCompletionMessageParamUnion {
	call := func(id, args string) openai.ChatCompletionMessageToolCallUnionParam {
		return openai.ChatCompletionMessageToolCallUnionParam{OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
			ID: id, Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: "read_file", Arguments: args},
		}}
	}
	return []openai.ChatCompletionMessageParamUnion{
		openai.SystemMessage("You are a coding agent."),
		openai.UserMessage("Read a.md and b.md."),
		{OfAssistant: &openai.ChatCompletionAssistantMessageParam{ToolCalls: []openai.ChatCompletionMessageToolCallUnionParam{
			call("call_a", `{"path":"a.md"}`), call("call_b", `{"path":"b.md"}`),
		}}},
		openai.UserMessage("(session reloaded) Go on."),
		openai.ToolMessage("contents of a.md", "call_a"),
	}
}

// With repair: fix, a reloaded session goes through a strict upstream, the
// client sees what was done in X-Toolgate-Repair, and the upstream receives
// a paired transcript (docs/spec.md §1, end to end with openai-go).
func TestRepairFix(t *testing.T) {
	e, s := startStrict(t)
	var raw *http.Response
	res, err := e.Client("k").Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model: "fix-model", Messages: reloaded(),
	}, option.WithResponseInto(&raw))
	if err != nil {
		t.Fatal(err)
	}
	if res.Choices[0].Message.Content == "" {
		t.Error("no answer")
	}
	if got := raw.Header.Get("X-Toolgate-Repair"); got != "sealed=1; dropped=0; moved=1" {
		t.Errorf("X-Toolgate-Repair = %q", got)
	}
	sent := string(s.LastRequest())
	if !strings.Contains(sent, `{"role":"tool","content":"{\"success\":false,\"error\":\"This tool call was never completed — the session was reloaded or the history was trimmed.\"}","tool_call_id":"call_b"}`) {
		t.Errorf("no seal for call_b upstream: %s", sent)
	}
	if i, j := strings.Index(sent, `"tool_call_id":"call_a"`), strings.Index(sent, "(session reloaded)"); i < 0 || i > j {
		t.Errorf("the reply was not moved before the later user message: %s", sent)
	}
	a := e.WaitAccess(t, 1)[0]
	if a["repair"] != "sealed=1; dropped=0; moved=1" {
		t.Errorf("access %v", a)
	}
	want := `
# HELP toolgate_repairs_total Transcript repairs, by route and action (sealed, dropped, moved, and request normalizations).
# TYPE toolgate_repairs_total counter
toolgate_repairs_total{action="moved",route="fix-model"} 1
toolgate_repairs_total{action="sealed",route="fix-model"} 1
`
	if err := testutil.GatherAndCompare(e.Reg, strings.NewReader(want), "toolgate_repairs_total"); err != nil {
		t.Error(err)
	}
}

// With repair: off, the upstream's own 400 reaches the client as an OpenAI
// error, with OpenAI's wording.
func TestRepairOff(t *testing.T) {
	e, _ := startStrict(t)
	_, err := e.Client("k").Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model: "off-model", Messages: reloaded(),
	})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 ||
		!strings.Contains(apiErr.Message, "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'") {
		t.Fatalf("err = %v", err)
	}
	if apiErr.Param != "messages.[2].role" {
		t.Errorf("param %q", apiErr.Param)
	}
}

// With repair: reject, the gateway answers its own 400 listing what is
// wrong, and nothing is sent upstream.
func TestRepairReject(t *testing.T) {
	e, s := startStrict(t)
	_, err := e.Client("k").Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model: "reject-model", Messages: reloaded(),
	})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Code != "unpaired_tool_calls" ||
		!strings.Contains(apiErr.Message, "the call call_b made in messages[2] has no reply") ||
		!strings.Contains(apiErr.Message, "messages[4] (reply to call_a) is not directly after") {
		t.Fatalf("err = %v", err)
	}
	if s.Requests() != 0 {
		t.Errorf("%d requests reached the upstream", s.Requests())
	}
}

// A transcript that needs no repair reaches the upstream byte-for-byte, and
// no repair header is set (scope guard for TestRepairFix).
func TestPairedTranscriptUntouched(t *testing.T) {
	e, s := startStrict(t)
	body := `{"model":"sim-text","messages":[{"role":"user","content":"x"},` +
		`{"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"a\": 1}"}}], "x":1},` +
		`{"role":"tool","tool_call_id":"c1","content":"r"}, {"role":"user","content":"y"}],"temperature":0}`
	resp := e.Post(t, strings.Replace(body, "sim-text", "fix-model", 1))
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("X-Toolgate-Repair") != "" || resp.Header.Get("X-Toolgate-Normalize") != "" {
		t.Fatalf("status %d headers %v", resp.StatusCode, resp.Header)
	}
	if got := string(s.LastRequest()); got != body {
		t.Errorf("upstream got\n%s\nwant\n%s", got, body)
	}
}

// A call with no id is given one and sealed, so the strict upstream accepts
// the transcript; the normalization is reported in its own header.
func TestSynthesizedIDThroughGateway(t *testing.T) {
	e, _ := startStrict(t)
	resp := e.Post(t, `{"model":"fix-model","messages":[{"role":"user","content":"x"},`+
		`{"role":"assistant","content":null,"tool_calls":[{"type":"function","function":{"name":"f","arguments":{"a":1}}}]},{"role":"user","content":"y"}]}`)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	if got := resp.Header.Get("X-Toolgate-Normalize"); got != "arguments_to_string=1; synthesized_ids=1" {
		t.Errorf("X-Toolgate-Normalize = %q", got)
	}
	if got := resp.Header.Get("X-Toolgate-Repair"); got != "sealed=1; dropped=0; moved=0" {
		t.Errorf("X-Toolgate-Repair = %q", got)
	}
}

// A transcript of nothing but orphan replies is refused: repair would leave
// no message to send.
func TestOnlyOrphans(t *testing.T) {
	e, s := startStrict(t)
	resp := e.Post(t, `{"model":"fix-model","messages":[{"role":"tool","tool_call_id":"x","content":"r"}]}`)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 400 || !strings.Contains(string(b), "no message left") || s.Requests() != 0 {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
}
