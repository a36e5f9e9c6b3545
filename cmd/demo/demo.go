// Command demo runs the gateway (internal/app) in process on its embedded
// default config, every model routed to the built-in simulator, and a
// scripted client through it: openai-go for the chat and Responses steps,
// anthropic-sdk-go for the Messages step. It prints what the client
// received and the gateway's access-log line for each request, and exits
// 1 if a step did not behave as expected. `make demo` runs it. The SDKs
// are linked here only, never into the gateway binary.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	aoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"

	"github.com/toolgate/toolgate/internal/app"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	keep := len(os.Args) > 1 && os.Args[1] == "--keep" // make demo KEEP=1
	if err := runDemo(ctx, os.Stdout, keep); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

// runDemo starts the gateway on its embedded default config (every model
// routed to the built-in simulator) on loopback ports, runs a scripted
// openai-go client through it, and prints what the client received and the
// gateway's access-log line for each request. It ends with the console's
// URL; with keep, the gateway then serves until ctx ends (Ctrl-C).
func runDemo(ctx context.Context, stdout io.Writer, keep bool) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	logs := &lineBuffer{}
	addr := make(chan [2]string, 1)
	done := make(chan error, 1)
	go func() {
		noEnv := func(string) string { return "" }
		done <- app.Run(ctx, []string{"--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--log-flush-interval", "0s"},
			app.World{Getenv: noEnv, Stdout: &addrWriter{ch: addr}, Stderr: logs})
	}()
	var base, admin string
	select {
	case a := <-addr:
		base, admin = a[0], a[1]
	case err := <-done:
		return fmt.Errorf("the gateway did not start: %v", err)
	case <-time.After(10 * time.Second):
		return errors.New("the gateway did not start within 10s")
	}
	fmt.Fprintf(stdout, "toolgate demo: gateway at http://%s/v1, embedded default config, upstream = built-in simulator\n", base)

	client := openai.NewClient(option.WithBaseURL("http://"+base+"/v1/"), option.WithAPIKey("demo-client-key"),
		option.WithMaxRetries(0))
	steps := []struct {
		title    string
		do       func(context.Context, openai.Client, io.Writer) error
		requests int // how many requests the step makes: its access lines
	}{
		{"a streamed answer (model sim-text)", demoText, 1},
		{"a streamed tool call (model sim-tool)", demoTool, 1},
		{"a quirky upstream stream arrives clean (model sim-q-sameindex: two parallel calls both sent at index 0, each call's arguments after its id, docs/quirks.md A02)", demoQuirk, 1},
		{"a reloaded session repaired before it leaves (model sim-strict: the simulator answers OpenAI's 400 to unpaired calls)", demoRepair, 1},
		{"a thinking upstream: reasoning arrives in reasoning_content, and is restored when the client replays the turn without it (model sim-deepseek)", demoThinking("sim-deepseek"), 2},
		{"an Anthropic upstream (the Messages API, simulated): a tool call with thinking, replayed without its reasoning — the thinking block and its signature are put back (model sim-claude-toolloop)", demoThinking("sim-claude-toolloop"), 2},
		{"a Gemini upstream (the Gemini API, simulated): a tool call, replayed without its thought signature — the signature is put back and the simulator's check accepts the turn (model sim-gemini-toolloop)", demoThinking("sim-gemini-toolloop"), 2},
		{"an OpenAI Responses API upstream (simulated, keeping nothing): a tool call after encrypted reasoning, replayed by a chat client that has no slot for it — the encrypted reasoning item goes back in front of its call (model sim-reasoner-toolloop)", demoThinking("sim-reasoner-toolloop"), 2},
		{"an Amazon Bedrock upstream (the Converse API and its AWS event stream, simulated): a tool call with Claude's signed reasoning, replayed without it — the reasoning block and its signature are put back (model sim-bedrock-toolloop)", demoThinking("sim-bedrock-toolloop"), 2},
		{"the Responses API (POST /v1/responses): a streamed function call, then its output sent with previous_response_id (model sim-tool)", demoResponses, 2},
		{"Anthropic's Messages API (POST /v1/messages, through the Anthropic SDK for Go, as Claude Code sends it): a session whose tool use was interrupted, then new user text — Anthropic would answer 400; the gateway seals the call and the simulated Anthropic upstream answers (model sim-claude-text)", demoMessages(base), 1},
		{"an upstream failure becomes an OpenAI error (model sim-error)", demoExpectError("sim-error"), 1},
		{"a stream cut mid-way is reported, never a silent success (model sim-cut)", demoExpectError("sim-cut"), 1},
	}
	var failed []string
	for i, s := range steps {
		fmt.Fprintf(stdout, "\n[%d] %s\n", i+1, s.title)
		if err := s.do(ctx, client, stdout); err != nil {
			fmt.Fprintf(stdout, "    FAILED: %v\n", err)
			failed = append(failed, s.title)
		}
		for _, line := range logs.waitAccess(s.requests, 5*time.Second) {
			fmt.Fprintf(stdout, "    gateway: %s\n", line)
		}
	}
	fmt.Fprintf(stdout, "\nthe console, with these requests and what toolgate fixed in each: http://%s/ui/\n", admin)
	if keep && len(failed) == 0 {
		fmt.Fprintf(stdout, "serving until Ctrl-C: gateway http://%s/v1, console http://%s/ui/\n", base, admin)
		<-ctx.Done()
	}
	cancel()
	if err := <-done; err != nil {
		return err
	}
	if len(failed) > 0 {
		return fmt.Errorf("demo steps failed: %s", strings.Join(failed, "; "))
	}
	fmt.Fprintln(stdout, "\ndemo finished: every step behaved as expected")
	return nil
}

func demoText(ctx context.Context, c openai.Client, w io.Writer) error {
	stream := c.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
		Model:    "sim-text",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Say hello.")},
	})
	var text strings.Builder
	chunks := 0
	finish := ""
	for stream.Next() {
		ch := stream.Current()
		chunks++
		if len(ch.Choices) > 0 {
			text.WriteString(ch.Choices[0].Delta.Content)
			if ch.Choices[0].FinishReason != "" {
				finish = ch.Choices[0].FinishReason
			}
		}
	}
	if err := stream.Err(); err != nil {
		return err
	}
	fmt.Fprintf(w, "    client received %d chunks, finish_reason %q:\n    %q\n", chunks, finish, text.String())
	if finish != "stop" || text.Len() == 0 {
		return errors.New("expected text and finish_reason stop")
	}
	return nil
}

func demoTool(ctx context.Context, c openai.Client, w io.Writer) error {
	stream := c.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
		Model:    "sim-tool",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("What is the weather in Paris?")},
		Tools: []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name: "get_weather",
			Parameters: shared.FunctionParameters{
				"type":       "object",
				"properties": map[string]any{"city": map[string]any{"type": "string"}},
				"required":   []string{"city"},
			},
		})},
	})
	acc := openai.ChatCompletionAccumulator{}
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		return err
	}
	if len(acc.Choices) == 0 || len(acc.Choices[0].Message.ToolCalls) != 1 {
		return errors.New("expected exactly one tool call")
	}
	tc := acc.Choices[0].Message.ToolCalls[0]
	fmt.Fprintf(w, "    client received a tool call: id=%s name=%s arguments=%s finish_reason=%q\n",
		tc.ID, tc.Function.Name, tc.Function.Arguments, acc.Choices[0].FinishReason)
	if !json.Valid([]byte(tc.Function.Arguments)) {
		return errors.New("the arguments are not valid JSON")
	}
	return nil
}

func demoQuirk(ctx context.Context, c openai.Client, w io.Writer) error {
	stream := c.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
		Model:    "sim-q-sameindex",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Weather in Paris and Rome?")},
		Tools:    []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "get_weather"})},
	})
	acc := openai.ChatCompletionAccumulator{}
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		return err
	}
	calls := acc.Choices[0].Message.ToolCalls
	for _, tc := range calls {
		fmt.Fprintf(w, "    client received call id=%s name=%s arguments=%s\n", tc.ID, tc.Function.Name, tc.Function.Arguments)
	}
	if len(calls) != 2 {
		return fmt.Errorf("expected 2 calls, got %d", len(calls))
	}
	for k, city := range []string{"Paris", "Rome"} {
		if want := `{"city":"` + city + `"}`; calls[k].Function.Arguments != want {
			return fmt.Errorf("call %d has arguments %s, want %s", k, calls[k].Function.Arguments, want)
		}
	}
	return nil
}

func demoRepair(ctx context.Context, c openai.Client, w io.Writer) error {
	call := func(id, args string) openai.ChatCompletionMessageToolCallUnionParam {
		return openai.ChatCompletionMessageToolCallUnionParam{OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
			ID: id, Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: "read_file", Arguments: args},
		}}
	}
	msgs := []openai.ChatCompletionMessageParamUnion{
		openai.UserMessage("Read a.md and b.md."),
		{OfAssistant: &openai.ChatCompletionAssistantMessageParam{ToolCalls: []openai.ChatCompletionMessageToolCallUnionParam{
			call("call_a", `{"path":"a.md"}`), call("call_b", `{"path":"b.md"}`),
		}}},
		openai.UserMessage("(the session was reloaded) Go on."),
		openai.ToolMessage("contents of a.md", "call_a"),
	}
	fmt.Fprintln(w, "    client sends: user, assistant[call_a, call_b], user, tool(call_a)  (call_b unanswered; call_a's reply too late)")
	var raw *http.Response
	stream := c.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{Model: "sim-strict", Messages: msgs},
		option.WithResponseInto(&raw))
	var text strings.Builder
	for stream.Next() {
		if ch := stream.Current(); len(ch.Choices) > 0 {
			text.WriteString(ch.Choices[0].Delta.Content)
		}
	}
	if err := stream.Err(); err != nil {
		return err
	}
	fmt.Fprintf(w, "    X-Toolgate-Repair: %s\n    client received: %q\n", raw.Header.Get("X-Toolgate-Repair"), text.String())
	if raw.Header.Get("X-Toolgate-Repair") == "" {
		return errors.New("expected the repair header")
	}
	return nil
}

// demoThinking runs two turns of a tool conversation with a thinking
// model; the client replays the first turn without its reasoning.
func demoThinking(model string) func(context.Context, openai.Client, io.Writer) error {
	return func(ctx context.Context, c openai.Client, w io.Writer) error { return thinkingTurns(ctx, c, w, model) }
}

func thinkingTurns(ctx context.Context, c openai.Client, w io.Writer, model string) error {
	msgs := []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Weather in Paris?")}
	tools := []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "get_weather"})}
	for turn := 1; turn <= 2; turn++ {
		stream := c.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{Model: model, Messages: msgs, Tools: tools})
		acc := openai.ChatCompletionAccumulator{}
		var reasoning strings.Builder
		for stream.Next() {
			ch := stream.Current()
			acc.AddChunk(ch)
			if len(ch.Choices) > 0 {
				var d struct {
					ReasoningContent string `json:"reasoning_content"`
				}
				json.Unmarshal([]byte(ch.Choices[0].Delta.RawJSON()), &d)
				reasoning.WriteString(d.ReasoningContent)
			}
		}
		if err := stream.Err(); err != nil {
			return fmt.Errorf("turn %d: %w", turn, err)
		}
		m := acc.Choices[0].Message
		fmt.Fprintf(w, "    turn %d: reasoning_content %q, %d tool call(s)\n", turn, reasoning.String(), len(m.ToolCalls))
		if reasoning.Len() == 0 {
			return fmt.Errorf("turn %d: no reasoning", turn)
		}
		if len(m.ToolCalls) == 0 {
			break
		}
		// openai-go's ToParam drops reasoning_content: the gateway restores it.
		msgs = append(msgs, m.ToParam(), openai.ToolMessage("sunny", m.ToolCalls[0].ID))
	}
	return nil
}

func demoResponses(ctx context.Context, c openai.Client, w io.Writer) error {
	tools := []responses.ToolUnionParam{responses.ToolParamOfFunction("get_weather",
		map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}}, false)}
	stream := c.Responses.NewStreaming(ctx, responses.ResponseNewParams{Model: "sim-tool", Tools: tools,
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("What is the weather in Paris?")}})
	var events []string
	var final responses.Response
	for stream.Next() {
		ev := stream.Current()
		events = append(events, ev.Type)
		if ev.Type == "response.completed" {
			final = ev.Response
		}
	}
	if err := stream.Err(); err != nil {
		return err
	}
	fmt.Fprintf(w, "    events: %s\n", strings.Join(events, ", "))
	var call responses.ResponseFunctionToolCall
	for _, it := range final.Output {
		if it.Type == "function_call" {
			call = it.AsFunctionCall()
		}
	}
	if call.CallID == "" {
		return errors.New("expected a function_call item")
	}
	fmt.Fprintf(w, "    %s: function_call call_id=%s name=%s arguments=%s\n", final.ID, call.CallID, call.Name, call.Arguments)
	next, err := c.Responses.New(ctx, responses.ResponseNewParams{Model: "sim-text", PreviousResponseID: openai.String(final.ID),
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{{OfFunctionCallOutput: &responses.ResponseInputItemFunctionCallOutputParam{
			CallID: openai.String(call.CallID), Output: responses.ResponseInputItemFunctionCallOutputOutputUnionParam{OfString: openai.String("sunny, 24°C")}}}}}})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "    %s (previous_response_id %s): status %s, %q\n", next.ID, final.ID, next.Status, oneLine(next.OutputText()))
	return nil
}

// demoMessages sends, with the Anthropic SDK for Go, a Messages request
// as Claude Code would after an interrupted tool use: the call has no
// result, and the user has moved on.
func demoMessages(base string) func(context.Context, openai.Client, io.Writer) error {
	return func(ctx context.Context, _ openai.Client, w io.Writer) error {
		c := anthropic.NewClient(aoption.WithBaseURL("http://"+base+"/"), aoption.WithAPIKey("demo-client-key"), aoption.WithMaxRetries(0))
		var resp *http.Response
		msg, err := c.Messages.New(ctx, anthropic.MessageNewParams{
			Model: "sim-claude-text", MaxTokens: 4096,
			Tools: []anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{Name: "get_weather", InputSchema: anthropic.ToolInputSchemaParam{}}}},
			Messages: []anthropic.MessageParam{
				anthropic.NewUserMessage(anthropic.NewTextBlock("Weather in Paris?")),
				anthropic.NewAssistantMessage(anthropic.NewToolUseBlock("toolu_interrupted", map[string]string{"city": "Paris"}, "get_weather")),
				anthropic.NewUserMessage(anthropic.NewTextBlock("Never mind. Say hello.")),
			},
		}, aoption.WithResponseInto(&resp))
		if err != nil {
			return err
		}
		if len(msg.Content) == 0 {
			return fmt.Errorf("an empty message")
		}
		fmt.Fprintf(w, "    X-Toolgate-Repair: %s\n    message (stop_reason %s): %q\n", resp.Header.Get("X-Toolgate-Repair"), msg.StopReason, oneLine(msg.Content[0].Text))
		return nil
	}
}

func demoExpectError(model string) func(context.Context, openai.Client, io.Writer) error {
	return func(ctx context.Context, c openai.Client, w io.Writer) error {
		stream := c.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
			Model:    model,
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hello?")},
		})
		chunks := 0
		for stream.Next() {
			chunks++
		}
		err := stream.Err()
		if err == nil {
			return errors.New("the client saw success; expected an error")
		}
		msg := err.Error()
		if apiErr, ok := errors.AsType[*openai.Error](err); ok {
			msg = fmt.Sprintf("HTTP %d, code %s: %s", apiErr.StatusCode, apiErr.Code, apiErr.Message)
		}
		fmt.Fprintf(w, "    client received %d chunks, then the error: %s\n", chunks, oneLine(msg))
		return nil
	}
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// addrWriter picks the listening addresses, the gateway's and the admin
// listener's, out of run's stdout line.
type addrWriter struct {
	ch   chan [2]string
	once sync.Once
}

func (a *addrWriter) Write(p []byte) (int, error) {
	var main, admin string
	if _, err := fmt.Sscanf(string(p), "toolgate listening on %s (admin %s", &main, &admin); err == nil {
		a.once.Do(func() { a.ch <- [2]string{main, strings.TrimSuffix(strings.TrimSpace(admin), ")")} })
	}
	return len(p), nil
}

// lineBuffer collects the gateway's JSON log lines; waitAccess returns the
// access lines written since the last call, summarized, once there are
// want of them (or the timeout passed).
type lineBuffer struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	seen int
}

func (l *lineBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *lineBuffer) waitAccess(want int, timeout time.Duration) []string {
	deadline := time.Now().Add(timeout)
	for {
		l.mu.Lock()
		var out []string
		sc := bufio.NewScanner(bytes.NewReader(l.buf.Bytes()))
		sc.Buffer(nil, 1<<20)
		n := 0
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) != nil || m["msg"] != "access" {
				continue
			}
			n++
			if n > l.seen {
				out = append(out, summarize(m))
			}
		}
		if len(out) >= want || time.Now().After(deadline) {
			l.seen = n
			l.mu.Unlock()
			return out
		}
		l.mu.Unlock()
		time.Sleep(10 * time.Millisecond) // polling the log with a deadline
	}
}

func summarize(m map[string]any) string {
	var b strings.Builder
	for _, k := range []string{"status", "outcome", "route", "upstream", "model", "ttfb_ms", "duration_ms", "bytes_out", "repair", "normalize", "fixes", "reasoning_restored", "error_kind", "error"} {
		if v, ok := m[k]; ok {
			fmt.Fprintf(&b, "%s=%v ", k, v)
		}
	}
	return strings.TrimSpace(b.String())
}
