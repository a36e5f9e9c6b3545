package bedrock

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"

	"github.com/toolgate/toolgate/internal/testing/wiretest"
	"github.com/toolgate/toolgate/internal/translate"
	"github.com/toolgate/toolgate/internal/wire"
)

// request translates a chat request body.
func request(t *testing.T, body string, model string) (translate.Request, error) {
	t.Helper()
	req, err := wire.DecodeRequest([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	return Request(req, translate.Options{Model: model, DefaultMaxTokens: 4096, CarriedMember: "carried"})
}

// sameJSON fails unless got and want are the same JSON value.
func sameJSON(t *testing.T, got []byte, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("not JSON: %s", got)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	gb, _ := json.Marshal(g)
	wb, _ := json.Marshal(w)
	if !bytes.Equal(gb, wb) {
		t.Errorf("got  %s\nwant %s", gb, wb)
	}
}

// A transcript as the Converse API takes it: system text, a user turn's
// text, image and document (a cache_control a cachePoint after its
// block), the reasoning restored for a call turn put first, tool replies
// as toolResults of one user turn (a seal with status error, an empty
// reply "(no output)"), consecutive turns merged, blank text left out,
// the limits and stop sequences in inferenceConfig, top_k beside them.
func TestRequest(t *testing.T) {
	carried, _ := json.Marshal(`[{"reasoningContent":{"reasoningText":{"text":"plan","signature":"sig=="}}}]`)
	r, err := request(t, `{"model":"x","stream":true,"max_tokens":300,"temperature":0.5,"top_p":0.9,"top_k":40,"stop":"END","messages":[
		{"role":"system","content":"Be brief."},
		{"role":"user","content":[{"type":"text","text":"Look","cache_control":{"type":"ephemeral"}},{"type":"text","text":"  \n"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBOR"}},
			{"type":"file","file":{"filename":"q3 report.pdf","file_data":"data:application/pdf;base64,JVBER"}}]},
		{"role":"assistant","content":"","carried":`+string(carried)+`,"tool_calls":[{"id":"t1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}},{"id":"t2","type":"function","function":{"name":"f","arguments":""}}]},
		{"role":"tool","tool_call_id":"t1","content":"ok"},
		{"role":"tool","tool_call_id":"t2","content":""},
		{"role":"user","content":"and?"}],
		"tools":[{"type":"function","function":{"name":"f","description":"F.","parameters":{"type":"object"}}}],"tool_choice":"required"}`, "us.anthropic.claude-v1:0")
	if err != nil {
		t.Fatal(err)
	}
	if r.Path != "/model/us.anthropic.claude-v1%3A0/converse-stream" {
		t.Errorf("path %s", r.Path)
	}
	sameJSON(t, r.Body, `{"messages":[
		{"role":"user","content":[{"text":"Look"},{"cachePoint":{"type":"default"}},{"image":{"format":"png","source":{"bytes":"iVBOR"}}},{"document":{"format":"pdf","name":"q3 report","source":{"bytes":"JVBER"}}}]},
		{"role":"assistant","content":[{"reasoningContent":{"reasoningText":{"text":"plan","signature":"sig=="}}},{"toolUse":{"toolUseId":"t1","name":"f","input":{"a":1}}},{"toolUse":{"toolUseId":"t2","name":"f","input":{}}}]},
		{"role":"user","content":[{"toolResult":{"toolUseId":"t1","content":[{"text":"ok"}]}},{"toolResult":{"toolUseId":"t2","content":[{"text":"(no output)"}]}},{"text":"and?"}]}],
		"system":[{"text":"Be brief."}],
		"inferenceConfig":{"maxTokens":300,"temperature":0.5,"topP":0.9,"stopSequences":["END"]},
		"toolConfig":{"tools":[{"toolSpec":{"name":"f","description":"F.","inputSchema":{"json":{"type":"object"}}}}],"toolChoice":{"any":{}}},
		"additionalModelRequestFields":{"top_k":40}}`)
}

// A call nothing answered, sealed by repair, goes as a failed result.
func TestSealedResult(t *testing.T) {
	req, err := wire.DecodeRequest([]byte(`{"model":"x","messages":[{"role":"user","content":"go"},{"role":"assistant","tool_calls":[{"id":"t1","type":"function","function":{"name":"f","arguments":"{}"}}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Messages = append(req.Messages, wire.SealReply("t1", json.RawMessage(`"{\"success\":false,\"error\":\"The call was cut off.\"}"`)))
	r, err := Request(req, translate.Options{Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(r.Body), `{"toolResult":{"toolUseId":"t1","content":[{"text":"The call was cut off."}],"status":"error"}}`) {
		t.Errorf("the seal: %s", r.Body)
	}
}

// The Converse API has no tool_choice none: without tool blocks in the
// transcript no toolConfig goes; with them (which Bedrock refuses without
// one) the tools go with the default choice, and a transcript with tool
// blocks but no tools declared gets a tool of each name it calls.
func TestToolConfig(t *testing.T) {
	history := `{"role":"user","content":"go"},{"role":"assistant","tool_calls":[{"id":"t1","type":"function","function":{"name":"g","arguments":"{}"}}]},{"role":"tool","tool_call_id":"t1","content":"ok"}`
	tools := `,"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}]`
	for _, tc := range []struct{ body, want string }{
		{`{"model":"x","tool_choice":"none","messages":[{"role":"user","content":"go"}]` + tools + `}`, ``},
		{`{"model":"x","tool_choice":"none","messages":[` + history + `]` + tools + `}`, `"toolConfig":{"tools":[{"toolSpec":{"name":"f","inputSchema":{"json":{"type":"object"}}}}]}`},
		{`{"model":"x","messages":[` + history + `]}`, `"toolConfig":{"tools":[{"toolSpec":{"name":"g","inputSchema":{"json":{"type":"object"}}}}]}`},
		{`{"model":"x","tool_choice":{"type":"function","function":{"name":"f"}},"messages":[{"role":"user","content":"go"}]` + tools + `}`, `"toolChoice":{"tool":{"name":"f"}}`},
	} {
		r, err := request(t, tc.body, "m")
		if err != nil {
			t.Fatal(err)
		}
		if tc.want == "" && strings.Contains(string(r.Body), "toolConfig") || !strings.Contains(string(r.Body), tc.want) {
			t.Errorf("%s\nsent %s", tc.body, r.Body)
		}
	}
}

// Claude's thinking goes in additionalModelRequestFields, without
// temperature, top_p or top_k, and is checked against Claude's bounds; it
// is turned off when the last tool turn has no reasoning block to start
// with.
func TestThinking(t *testing.T) {
	on := `"thinking":{"type":"enabled","budget_tokens":2048}`
	r, err := request(t, `{"model":"x","temperature":0.2,"top_k":5,`+on+`,"messages":[{"role":"user","content":"go"}]}`, "m")
	if err != nil {
		t.Fatal(err)
	}
	sameJSON(t, r.Body, `{"messages":[{"role":"user","content":[{"text":"go"}]}],"inferenceConfig":{"maxTokens":4096},"additionalModelRequestFields":{"thinking":{"type":"enabled","budget_tokens":2048}}}`)
	r, err = request(t, `{"model":"x",`+on+`,"messages":[{"role":"user","content":"go"},{"role":"assistant","tool_calls":[{"id":"t1","type":"function","function":{"name":"g","arguments":"{}"}}]},{"role":"tool","tool_call_id":"t1","content":"ok"}]}`, "m")
	if err != nil || !r.ThinkingOff || strings.Contains(string(r.Body), "thinking") {
		t.Errorf("a tool turn without its reasoning: %v %v %s", err, r.ThinkingOff, r.Body)
	}
	for _, body := range []string{
		`{"model":"x","thinking":{"type":"enabled","budget_tokens":512},"messages":[{"role":"user","content":"go"}]}`,
		`{"model":"x","max_tokens":1500,"thinking":{"type":"enabled","budget_tokens":2048},"messages":[{"role":"user","content":"go"}]}`,
	} {
		if _, err := request(t, body, "m"); err == nil {
			t.Errorf("accepted %s", body)
		}
	}
}

// What the Converse API cannot take is a 400 naming the member, before
// anything is sent.
func TestRefused(t *testing.T) {
	for _, tc := range []struct{ body, param string }{
		{`{"model":"x","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://x/a.png"}}]}]}`, "messages[0].content[0].image_url.url"},
		{`{"model":"x","messages":[{"role":"user","content":[{"type":"input_audio","input_audio":{}}]}]}`, "messages[0].content[0].type"},
		{`{"model":"x","messages":[{"role":"user","content":[{"type":"file","file":{"file_id":"f"}}]}]}`, "messages[0].content[0].file.file_data"},
		{`{"model":"x","messages":[{"role":"user","content":"go"},{"role":"assistant","tool_calls":[{"id":"t","type":"function","function":{"name":"g","arguments":"[1]"}}]},{"role":"tool","tool_call_id":"t","content":"x"}]}`, "messages[1].tool_calls[0].function.arguments"},
		{`{"model":"x","response_format":{"type":"json_object"},"messages":[{"role":"user","content":"go"}]}`, "response_format"},
		{`{"model":"x","n":2,"messages":[{"role":"user","content":"go"}]}`, "n"},
		{`{"model":"x","tool_choice":"sometimes","messages":[{"role":"user","content":"go"}]}`, "tool_choice"},
	} {
		_, err := request(t, tc.body, "m")
		var pe *wire.ParamError
		if !errors.As(err, &pe) || pe.Param != tc.param {
			t.Errorf("%s: %v", tc.body, err)
		}
	}
}

// frame encodes one event stream frame.
func frame(t testing.TB, messageType, typ, payload string) []byte {
	var b bytes.Buffer
	m := eventstream.Message{Payload: []byte(payload)}
	m.Headers.Set(":message-type", eventstream.StringValue(messageType))
	switch messageType {
	case "event":
		m.Headers.Set(":event-type", eventstream.StringValue(typ))
	case "exception":
		m.Headers.Set(":exception-type", eventstream.StringValue(typ))
	case "error":
		m.Headers.Set(":error-code", eventstream.StringValue(typ))
		m.Headers.Set(":error-message", eventstream.StringValue("it broke"))
	}
	m.Headers.Set(":content-type", eventstream.StringValue("application/json"))
	if err := eventstream.NewEncoder().Encode(&b, m); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// answer is a converse-stream answer: reasoning (text, signature), a
// redacted block, text, two calls, messageStop and metadata.
func answer(t testing.TB) []byte {
	var b []byte
	for _, f := range [][3]string{
		{"event", "messageStart", `{"role":"assistant","p":"abc"}`},
		{"event", "contentBlockDelta", `{"contentBlockIndex":0,"delta":{"reasoningContent":{"text":"Let me "}}}`},
		{"event", "contentBlockDelta", `{"contentBlockIndex":0,"delta":{"reasoningContent":{"text":"think."}}}`},
		{"event", "contentBlockDelta", `{"contentBlockIndex":0,"delta":{"reasoningContent":{"signature":"c2ln"}}}`},
		{"event", "contentBlockStop", `{"contentBlockIndex":0}`},
		{"event", "contentBlockDelta", `{"contentBlockIndex":1,"delta":{"reasoningContent":{"redactedContent":"cmVk"}}}`},
		{"event", "contentBlockDelta", `{"contentBlockIndex":2,"delta":{"text":"Checking."}}`},
		{"event", "contentBlockStart", `{"contentBlockIndex":3,"start":{"toolUse":{"toolUseId":"tu_1","name":"get_weather"}}}`},
		{"event", "contentBlockDelta", `{"contentBlockIndex":3,"delta":{"toolUse":{"input":"{\"city\":"}}}`},
		{"event", "contentBlockDelta", `{"contentBlockIndex":3,"delta":{"toolUse":{"input":"\"Paris\"}"}}}`},
		{"event", "contentBlockStart", `{"contentBlockIndex":4,"start":{"toolUse":{"toolUseId":"tu_2","name":"get_weather"}}}`},
		{"event", "contentBlockDelta", `{"contentBlockIndex":4,"delta":{"toolUse":{"input":"{}"}}}`},
		{"event", "messageStop", `{"stopReason":"tool_use"}`},
		{"event", "metadata", `{"usage":{"inputTokens":10,"outputTokens":5,"totalTokens":19,"cacheReadInputTokens":4},"metrics":{"latencyMs":3}}`},
	} {
		b = append(b, frame(t, f[0], f[1], f[2])...)
	}
	return b
}

// translateAll reads body as the pump does: each frame through Event.
func translateAll(s *Stream, body []byte) (chunks []string, err error) {
	for ev, err := range s.Frames(context.Background(), bytes.NewReader(body), 1<<20) {
		if err != nil {
			return chunks, err
		}
		out, _, err := s.Event(ev.Data)
		if err != nil {
			return chunks, err
		}
		for _, c := range out {
			chunks = append(chunks, string(c))
		}
	}
	return chunks, nil
}

// A streamed answer becomes canonical chunks: the role, reasoning, text,
// calls at dense indexes with their ids, the finish reason and the usage
// (cache reads in the prompt); the reasoning blocks are kept for the
// store byte for byte, and handed on to a client with a slot for them.
func TestStream(t *testing.T) {
	s := NewStream(translate.StreamOptions{Thoughts: true})
	chunks, err := translateAll(s, answer(t))
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(chunks, "\n")
	for _, want := range []string{`"delta":{"role":"assistant","content":""}`, `"delta":{"reasoning_content":"Let me "}`,
		`"delta":{"` + translate.SignatureMember + `":"c2ln"}`, `"delta":{"` + translate.RedactedMember + `":"cmVk"}`, `"delta":{"content":"Checking."}`,
		`"delta":{"tool_calls":[{"index":0,"id":"tu_1","type":"function","function":{"name":"get_weather","arguments":""}}]}`,
		`"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"Paris\"}"}}]}`,
		`"delta":{"tool_calls":[{"index":1,"id":"tu_2"`, `"finish_reason":"tool_calls"`,
		`"usage":{"completion_tokens":5,"prompt_tokens":14,"prompt_tokens_details":{"cached_tokens":4},"total_tokens":19}`} {
		if !strings.Contains(all, want) {
			t.Errorf("no %s in\n%s", want, all)
		}
	}
	if !s.Ended() {
		t.Error("not ended after messageStop")
	}
	sameJSON(t, s.Carried(), `[{"reasoningContent":{"reasoningText":{"text":"Let me think.","signature":"c2ln"}}},{"reasoningContent":{"redactedContent":"cmVk"}}]`)
	plain := NewStream(translate.StreamOptions{})
	chunks, _ = translateAll(plain, answer(t))
	if all := strings.Join(chunks, ""); strings.Contains(all, wire.OwnPrefix) {
		t.Errorf("a chat client got the gateway's own members: %s", all)
	}
}

// An exception (or error) frame is an error chunk; a body that ends
// before messageStop has not ended; a frame cut short, one whose checksum
// fails and one over the size limit are stream errors, the last before
// it is read.
func TestStreamFailures(t *testing.T) {
	start := frame(t, "event", "messageStart", `{"role":"assistant"}`)
	for _, tc := range []struct{ kind, typ, want string }{
		{"exception", "throttlingException", `{"error":{"message":"slow down","type":"throttlingException"}}`},
		{"error", "InternalFailure", `{"error":{"message":"it broke","type":"InternalFailure"}}`},
	} {
		payload := `{"message":"slow down"}`
		if tc.kind == "error" {
			payload = ""
		}
		chunks, err := translateAll(NewStream(translate.StreamOptions{}), append(append([]byte{}, start...), frame(t, tc.kind, tc.typ, payload)...))
		if err != nil || len(chunks) != 2 {
			t.Fatalf("%s: %v %q", tc.kind, err, chunks)
		}
		sameJSON(t, []byte(chunks[1]), tc.want)
	}
	s := NewStream(translate.StreamOptions{})
	if _, err := translateAll(s, start); err != nil || s.Ended() {
		t.Errorf("a stream without messageStop: %v, ended %v", err, s.Ended())
	}
	bad := append([]byte{}, start...)
	bad[len(bad)-6] ^= 1
	big := frame(t, "event", "contentBlockDelta", `{"delta":{"text":"`+strings.Repeat("x", 2<<20)+`"}}`)
	var se *wire.StreamError
	for name, body := range map[string][]byte{"cut": start[:len(start)-3], "checksum": bad, "large": big, "prelude": start[:2]} {
		_, err := translateAll(NewStream(translate.StreamOptions{}), body)
		if !errors.As(err, &se) || name == "large" && !errors.Is(err, wire.ErrEventTooLarge) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// A whole answer: text, reasoning, calls, the finish reason and usage;
// the reasoning blocks kept as Bedrock wrote them.
func TestWhole(t *testing.T) {
	a, err := Whole([]byte(`{"output":{"message":{"role":"assistant","content":[{"reasoningContent":{"reasoningText":{"text":"hm","signature":"s1"}}},{"text":"Sure."},{"toolUse":{"toolUseId":"tu","name":"f","input":{"a":1}}}]}},"stopReason":"tool_use","usage":{"inputTokens":3,"outputTokens":2,"totalTokens":5}}`), "up")
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Choices []struct {
			Message struct {
				Content          string `json:"content"`
				ReasoningContent string `json:"reasoning_content"`
				ToolCalls        []struct {
					ID       string                     `json:"id"`
					Function struct{ Arguments string } `json:"function"`
				} `json:"tool_calls"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
	}
	if json.Unmarshal(a.Chat, &c) != nil || c.Choices[0].Message.Content != "Sure." || c.Choices[0].Message.ReasoningContent != "hm" ||
		c.Choices[0].Message.ToolCalls[0].Function.Arguments != `{"a":1}` || c.Choices[0].FinishReason != "tool_calls" {
		t.Errorf("%s", a.Chat)
	}
	if string(a.Carried) != `[{"reasoningContent":{"reasoningText":{"text":"hm","signature":"s1"}}}]` {
		t.Errorf("carried %s", a.Carried)
	}
	var inc *wire.IncompleteError
	if _, err := Whole([]byte(`{"message":"Too many requests"}`), "up"); !errors.As(err, &inc) || inc.Message != "Too many requests" {
		t.Errorf("an error body: %v", err)
	}
}

// Any body is read without a panic: frames, or a *wire.StreamError; every
// chunk a frame becomes is JSON, or the frame's payload is refused.
func FuzzEventStream(f *testing.F) {
	f.Add(answer(f))
	f.Add(frame(f, "exception", "modelStreamErrorException", `{"message":"m"}`))
	f.Add(append(frame(f, "event", "messageStart", `{}`), 0, 0, 0, 16))
	f.Fuzz(func(t *testing.T, body []byte) {
		s := NewStream(translate.StreamOptions{Thoughts: true})
		for ev, err := range s.Frames(context.Background(), bytes.NewReader(body), 1<<16) {
			var se *wire.StreamError
			if err != nil {
				if !errors.As(err, &se) {
					t.Fatalf("error of type %T: %v", err, err)
				}
				return
			}
			chunks, _, err := s.Event(ev.Data)
			var pe *wire.ProtocolError
			if err != nil && !errors.As(err, &pe) {
				t.Fatalf("error of type %T: %v", err, err)
			}
			for _, c := range chunks {
				if !json.Valid(c) {
					t.Fatalf("a chunk that is not JSON: %s", c)
				}
			}
		}
		if c := s.Carried(); c != nil && !json.Valid(c) {
			t.Fatalf("carried %s", c)
		}
	})
}

// Every frame sequence — lines of an event type and its payload, each
// encoded as a frame — translates to JSON chunks and JSON carried state,
// whatever the order and payloads of its events.
func FuzzConverseEvents(f *testing.F) {
	f.Add("messageStart\t{}\ncontentBlockDelta\t{\"contentBlockIndex\":0,\"delta\":{\"reasoningContent\":{\"text\":\"a\"}}}\ncontentBlockDelta\t{\"contentBlockIndex\":0,\"delta\":{\"reasoningContent\":{\"signature\":\"s\"}}}\nmessageStop\t{\"stopReason\":\"end_turn\"}")
	f.Add("contentBlockDelta\t{\"contentBlockIndex\":3,\"delta\":{\"toolUse\":{\"input\":\"{\"}}}\ncontentBlockStart\t{\"contentBlockIndex\":3,\"start\":{\"toolUse\":{\"toolUseId\":\"\\u2028\",\"name\":\"\\ud800\"}}}\nexception\t{\"message\":7}")
	f.Add("contentBlockDelta\t{\"contentBlockIndex\":1,\"delta\":{\"reasoningContent\":{\"redactedContent\":\"x\"}}}\ncontentBlockDelta\t{\"contentBlockIndex\":1,\"delta\":{\"reasoningContent\":{\"text\":\"t\"}}}\nmetadata\t{\"usage\":{\"inputTokens\":-1}}")
	f.Fuzz(func(t *testing.T, script string) {
		var body []byte
		for line := range strings.Lines(script) {
			typ, payload, _ := strings.Cut(strings.TrimSuffix(line, "\n"), "\t")
			kind := "event"
			if typ == "exception" {
				kind, typ = "exception", "throttlingException"
			}
			body = append(body, frame(t, kind, typ, payload)...)
		}
		s := NewStream(translate.StreamOptions{Thoughts: true})
		chunks, err := translateAll(s, body)
		var pe *wire.ProtocolError
		if err != nil && !errors.As(err, &pe) {
			t.Fatalf("error of type %T: %v", err, err)
		}
		for _, c := range chunks {
			if !json.Valid([]byte(c)) {
				t.Fatalf("a chunk that is not JSON: %s", c)
			}
		}
		if c := s.Carried(); c != nil && !json.Valid(c) {
			t.Fatalf("carried %s", c)
		}
	})
}

// Any chat request translates to a JSON body or a client's error.
func FuzzBedrockRequest(f *testing.F) {
	f.Add(`{"model":"m","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":[{"type":"text","text":"a\u00e9<","cache_control":{"type":"ephemeral"}},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBOR"}}]},` +
		`{"role":"assistant","content":"x","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]},{"role":"tool","tool_call_id":"c","content":"  "}],"stop":["a"],"top_k":3}`)
	f.Add(`{"model":"m","thinking":{"type":"enabled","budget_tokens":1024},"messages":[{"role":"user","content":"\"q\""},{"role":"assistant","content":null,"carried":"[{\"reasoningContent\":{}}]","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":""}}]},{"role":"tool","tool_call_id":"c","content":[{"type":"file","file":{"filename":"*.pdf","file_data":"data:application/pdf;base64,x"}}]}],"tool_choice":"none"}`)
	f.Fuzz(func(t *testing.T, body string) {
		wiretest.TranslatesOrRefuses(t, body, func(req *wire.ChatRequest) ([]byte, error) {
			r, err := Request(req, translate.Options{Model: "m", DefaultMaxTokens: 4096, CarriedMember: "carried"})
			return r.Body, err
		})
	})
}
