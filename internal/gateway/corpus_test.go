package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	aoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"

	"github.com/toolgate/toolgate/internal/testing/gatewaytest"
	"github.com/toolgate/toolgate/internal/testing/quirkcorpus"
)

// corpusEnv is a gateway in front of an upstream that answers each model
// named after a corpus entry with that entry's recorded answer, on a
// route of its own whose upstream has the entry's settings.
type corpusEnv struct {
	*gatewaytest.Env
	entries []quirkcorpus.Entry
	byName  map[string]quirkcorpus.Entry
}

func startCorpus(t *testing.T) *corpusEnv {
	t.Helper()
	entries, err := quirkcorpus.Load(quirkcorpus.Dir())
	if err != nil {
		t.Fatal(err)
	}
	c := &corpusEnv{entries: entries, byName: map[string]quirkcorpus.Entry{}}
	var cfg strings.Builder
	cfg.WriteString("upstreams:\n")
	for k, e := range entries {
		c.byName[e.Name] = e
		fmt.Fprintf(&cfg, "  - {name: e%d, url: \"UPSTREAM_URL/v1\"%s}\n", k, corpusUpstream(t, e.Upstream))
	}
	cfg.WriteString("routes:\n")
	for k, e := range entries {
		fmt.Fprintf(&cfg, "  - {model: %q, upstream: e%d}\n", e.Name, k)
	}
	up := httptest.NewServer(http.HandlerFunc(c.replay))
	t.Cleanup(up.Close)
	c.Env = gatewaytest.Start(t, up.URL, cfg.String())
	return c
}

// corpusUpstream turns an entry's upstream settings (the golden files'
// syntax) into an upstream's config members.
func corpusUpstream(t *testing.T, settings string) string {
	var out strings.Builder
	for _, f := range strings.Fields(settings) {
		k, v, _ := strings.Cut(f, "=")
		switch k {
		case "quirks":
			if v == "all" || v == "strict" {
				fmt.Fprintf(&out, ", quirks: %s", v)
			} else {
				fmt.Fprintf(&out, ", quirks: [%s]", v)
			}
		case "reasoning":
			fmt.Fprintf(&out, ", reasoning_field: %s", map[string]string{"field": "reasoning", "think": "think"}[v])
		default:
			t.Fatalf("no upstream setting for %q", f)
		}
	}
	return out.String()
}

// replay answers a chat completions request with the recorded answer of
// the entry its model names: a stream in one write (so the gateway reads
// it in large reads), or event by event, flushed (paced, as providers
// send), as the request's user field says.
func (c *corpusEnv) replay(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model  string `json:"model"`
		Stream bool   `json:"stream"`
		User   string `json:"user"`
	}
	body, _ := io.ReadAll(r.Body)
	if json.Unmarshal(body, &req) != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	e, ok := c.byName[req.Model]
	if !ok || req.Stream == e.Whole {
		http.Error(w, fmt.Sprintf(`{"error":{"message":"no recorded answer for %s (stream %v)"}}`, req.Model, req.Stream), http.StatusNotFound)
		return
	}
	if e.Whole {
		w.Header().Set("Content-Type", "application/json")
		w.Write(e.Body)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	if req.User != "paced" {
		w.Write(e.Body)
		return
	}
	for ev := range bytes.SplitAfterSeq(e.Body, []byte("\n\n")) {
		w.Write(ev)
		w.(http.Flusher).Flush()
	}
}

// seen is what one client made of an answer, in the corpus's words.
type seen struct {
	finish          string
	calls           []quirkcorpus.Call
	text, reasoning string
	err             error
}

func (s seen) String() string {
	if s.err != nil {
		return "error: " + s.err.Error() + "\n"
	}
	return quirkcorpus.Want{Finish: s.finish, Calls: s.calls, Text: s.text, Reasoning: s.reasoning}.String()
}

// check reports whether s is what want says; jsonArgs compares arguments
// as JSON values (a client API that hands them over decoded: "" and {}
// are both no arguments).
func (s seen) check(want quirkcorpus.Want, jsonArgs bool) bool {
	if want.Error != "" || s.err != nil {
		return want.Error != "" && s.err != nil && strings.Contains(s.err.Error(), want.Error)
	}
	calls := want
	if jsonArgs {
		calls.Calls = nil
		for _, c := range want.Calls {
			c.Arguments = compactJSON(c.Arguments)
			calls.Calls = append(calls.Calls, c)
		}
		s.calls = slices.Clone(s.calls)
		for k := range s.calls {
			s.calls[k].Arguments = compactJSON(s.calls[k].Arguments)
		}
	}
	return s.finish == want.Finish && calls.Matches(s.calls) && s.text == want.Text && s.reasoning == want.Reasoning
}

func compactJSON(s string) string {
	if strings.TrimSpace(s) == "" {
		return "{}"
	}
	var b bytes.Buffer
	if json.Compact(&b, []byte(s)) != nil {
		return s
	}
	return b.String()
}

var corpusTools = []openai.ChatCompletionToolUnionParam{
	openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "get_weather",
		Parameters: shared.FunctionParameters{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}}}),
	openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "get_time",
		Parameters: shared.FunctionParameters{"type": "object", "properties": map[string]any{}}}),
}

// viaChat reads an entry's answer with openai-go on chat completions: a
// stream through the SDK's accumulator (every chunk must be one it
// takes), the reasoning from the chunks; a whole answer as it is.
func viaChat(e *corpusEnv, q quirkcorpus.Entry, user string) seen {
	params := openai.ChatCompletionNewParams{Model: q.Name, Messages: gatewaytest.UserMsg("weather in Paris?"), Tools: corpusTools,
		User: openai.String(user)}
	if q.Whole {
		resp, err := e.Client("k").Chat.Completions.New(context.Background(), params)
		if err != nil {
			return seen{err: err}
		}
		c := resp.Choices[0]
		return seen{finish: c.FinishReason, calls: chatCalls(c.Message.ToolCalls), text: c.Message.Content, reasoning: rawString(c.Message.RawJSON(), "reasoning_content")}
	}
	stream := e.Client("k").Chat.Completions.NewStreaming(context.Background(), params)
	defer stream.Close()
	acc := openai.ChatCompletionAccumulator{}
	var reasoning strings.Builder
	for stream.Next() {
		chunk := stream.Current()
		if !acc.AddChunk(chunk) {
			return seen{err: fmt.Errorf("openai-go's accumulator refused a chunk: %s", chunk.RawJSON())}
		}
		for _, ch := range chunk.Choices {
			reasoning.WriteString(rawString(ch.Delta.RawJSON(), "reasoning_content"))
		}
	}
	if err := stream.Err(); err != nil {
		return seen{err: err}
	}
	if len(acc.Choices) == 0 {
		return seen{err: fmt.Errorf("no choice")}
	}
	c := acc.Choices[0]
	return seen{finish: c.FinishReason, calls: chatCalls(c.Message.ToolCalls), text: c.Message.Content, reasoning: reasoning.String()}
}

func chatCalls(tcs []openai.ChatCompletionMessageToolCallUnion) []quirkcorpus.Call {
	var out []quirkcorpus.Call
	for _, tc := range tcs {
		out = append(out, quirkcorpus.Call{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
	}
	return out
}

// rawString reads a string member of a JSON object ("" when absent).
func rawString(raw, member string) string {
	var m map[string]json.RawMessage
	var s string
	_ = json.Unmarshal([]byte(raw), &m)
	_ = json.Unmarshal(m[member], &s)
	return s
}

var corpusFunctions = []responses.ToolUnionParam{
	responses.ToolParamOfFunction("get_weather", map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}}, false),
	responses.ToolParamOfFunction("get_time", map[string]any{"type": "object", "properties": map[string]any{}}, false),
}

// viaResponses reads an entry's answer with openai-go on the Responses
// API: a stream through the SDK's ResponseAccumulator (its calls and text
// must be the completed response's too), a whole answer as it is.
func viaResponses(e *corpusEnv, q quirkcorpus.Entry) seen {
	params := responses.ResponseNewParams{Model: q.Name, Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("weather in Paris?")},
		Tools: corpusFunctions}
	if q.Whole {
		resp, err := e.Client("k").Responses.New(context.Background(), params)
		if err != nil {
			return seen{err: err}
		}
		return responseSeen(*resp)
	}
	stream := e.Client("k").Responses.NewStreaming(context.Background(), params)
	defer stream.Close()
	var acc responses.ResponseAccumulator
	var final *responses.Response
	for stream.Next() {
		ev := stream.Current()
		var sev responses.ResponsesServerEventUnion
		if err := json.Unmarshal([]byte(ev.RawJSON()), &sev); err != nil {
			return seen{err: err}
		}
		if err := acc.AddEvent(sev); err != nil {
			return seen{err: fmt.Errorf("openai-go's ResponseAccumulator refused %s: %w", ev.Type, err)}
		}
		switch ev.Type {
		case "response.completed", "response.incomplete", "response.failed":
			r := ev.Response
			final = &r
		}
	}
	if err := stream.Err(); err != nil {
		return seen{err: err}
	}
	if final == nil {
		return seen{err: fmt.Errorf("no terminal event")}
	}
	s := responseSeen(*final)
	if s.err != nil {
		return s
	}
	snap := acc.Snapshot()
	var calls []quirkcorpus.Call
	for _, o := range snap.Output {
		if o.Type == "function_call" {
			calls = append(calls, quirkcorpus.Call{ID: o.CallID, Name: o.Name, Arguments: o.Arguments})
		}
	}
	if fmt.Sprint(calls) != fmt.Sprint(s.calls) || snap.OutputText() != s.text {
		return seen{err: fmt.Errorf("the accumulator's calls %v and text %q are not the completed response's %v, %q", calls, snap.OutputText(), s.calls, s.text)}
	}
	return s
}

// responseSeen reads a finished Responses object.
func responseSeen(r responses.Response) seen {
	if r.Status == "failed" {
		return seen{err: fmt.Errorf("response failed: %s", r.Error.Message)}
	}
	var s seen
	for _, it := range r.Output {
		switch it.Type {
		case "function_call":
			s.calls = append(s.calls, quirkcorpus.Call{ID: it.CallID, Name: it.Name, Arguments: it.Arguments.OfString})
		case "message":
			for _, c := range it.Content {
				s.text += c.Text
			}
		case "reasoning":
			for _, sum := range it.Summary {
				s.reasoning += sum.Text
			}
		}
	}
	switch {
	case len(s.calls) > 0:
		s.finish = "tool_calls"
	case r.Status == "incomplete" && r.IncompleteDetails.Reason == "max_output_tokens":
		s.finish = "length"
	default:
		s.finish = "stop"
	}
	return s
}

var corpusMessageTools = []anthropic.ToolUnionParam{
	{OfTool: &anthropic.ToolParam{Name: "get_weather", InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{"city": map[string]any{"type": "string"}}}}},
	{OfTool: &anthropic.ToolParam{Name: "get_time", InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{}}}},
}

// viaMessages reads an entry's answer with Anthropic's Go SDK on the
// Messages API: a stream through Message.Accumulate, a whole answer as
// it is.
func viaMessages(e *corpusEnv, q quirkcorpus.Entry) seen {
	c := anthropic.NewClient(aoption.WithBaseURL("http://"+e.Addr+"/"), aoption.WithAPIKey("k"), aoption.WithMaxRetries(0))
	params := anthropic.MessageNewParams{Model: anthropic.Model(q.Name), MaxTokens: 1024, Messages: userText("weather in Paris?"), Tools: corpusMessageTools}
	var msg anthropic.Message
	if q.Whole {
		m, err := c.Messages.New(context.Background(), params)
		if err != nil {
			return seen{err: err}
		}
		msg = *m
	} else {
		stream := c.Messages.NewStreaming(context.Background(), params)
		defer stream.Close()
		for stream.Next() {
			if err := msg.Accumulate(stream.Current()); err != nil {
				return seen{err: fmt.Errorf("the SDK's accumulator refused an event: %w", err)}
			}
		}
		if err := stream.Err(); err != nil {
			return seen{err: err}
		}
	}
	s := seen{finish: map[anthropic.StopReason]string{"tool_use": "tool_calls", "end_turn": "stop", "max_tokens": "length"}[msg.StopReason]}
	for _, b := range msg.Content {
		switch b.Type {
		case "tool_use":
			s.calls = append(s.calls, quirkcorpus.Call{ID: b.ID, Name: b.Name, Arguments: string(b.Input)})
		case "text":
			s.text += b.Text
		case "thinking":
			s.reasoning += b.Thinking
		}
	}
	return s
}

// Every entry of the quirk conformance corpus (internal/wire/testdata/quirks:
// docs/quirks.md section A and the answer-shaping rows of C and D), played
// by a real upstream behind the gateway, reaches real clients as what they
// must end up with — the calls their SDK's own accumulator assembles, the
// text, the reasoning, the finish — or as the error: openai-go on chat
// completions (the stream in one write and paced event by event), on the
// Responses API and, through Anthropic's Go SDK, on the Messages API; and
// the OpenAI Node SDK's helper on chat completions (docs/spec.md §2, §8).
func TestQuirkCorpusClients(t *testing.T) {
	e := startCorpus(t)
	var specs []string
	for _, q := range e.entries {
		t.Run(q.Name, func(t *testing.T) {
			for name, s := range map[string]seen{
				"chat":          viaChat(e, q, "burst"),
				"chat, paced":   viaChat(e, q, "paced"),
				"responses":     viaResponses(e, q),
				"messages (Go)": viaMessages(e, q),
			} {
				if !s.check(q.Want, name == "messages (Go)") {
					t.Errorf("%s: the client ends up with\n%swant\n%s", name, s, q.Want)
				}
			}
		})
		spec := q.Name
		if q.Whole {
			spec += ":whole"
		}
		specs = append(specs, spec)
	}
	var node []struct {
		Model, Content, Reasoning, Finish, Error string
		Calls                                    []quirkcorpus.Call
	}
	runNodeScript(t, "corpus.mjs", &node, append([]string{e.URL}, specs...)...)
	if len(node) != len(e.entries) {
		t.Fatalf("the Node SDK read %d answers of %d", len(node), len(e.entries))
	}
	for k, n := range node {
		q := e.entries[k]
		s := seen{finish: n.Finish, calls: n.Calls, text: n.Content, reasoning: n.Reasoning}
		if n.Error != "" {
			s = seen{err: fmt.Errorf("%s", n.Error)}
		}
		if !s.check(q.Want, false) {
			t.Errorf("%s: the OpenAI Node SDK ends up with\n%swant\n%s", q.Name, s, q.Want)
		}
	}
}
