package anthropic

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate/internal/testing/wiretest"
	"github.com/toolgate/toolgate/internal/translate"
	"github.com/toolgate/toolgate/internal/wire"
)

// Every request mapping: the chat request's members in, the Messages
// request out.
func TestRequest(t *testing.T) {
	for _, tc := range []struct {
		name, members, want string
	}{
		{"system and developer to system, cache_control kept",
			`"messages":[{"role":"system","content":"Be brief."},{"role":"developer","content":[{"type":"text","text":"Cite.","cache_control":{"type":"ephemeral"}}]},{"role":"user","content":"hi"}]`,
			`{"model":"claude","max_tokens":4096,"system":[{"type":"text","text":"Be brief."},{"type":"text","text":"Cite.","cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":"hi"}]}`},
		{"turns of one role merged, empty turns dropped",
			`"messages":[{"role":"user","content":"a"},{"role":"user","content":"b"},{"role":"assistant","content":""},{"role":"user","content":"c"}]`,
			`{"model":"claude","max_tokens":4096,"messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"},{"type":"text","text":"c"}]}]}`},
		{"calls to tool_use, replies to tool_result in the next user turn",
			`"messages":[{"role":"user","content":"weather?"},{"role":"assistant","content":"Checking.","tool_calls":[{"id":"toolu_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}},{"id":"toolu_2","type":"function","function":{"name":"get_weather","arguments":""}}]},{"role":"tool","tool_call_id":"toolu_1","content":"sunny"},{"role":"tool","tool_call_id":"toolu_2","content":[{"type":"text","text":"rain"}]},{"role":"user","content":"thanks"}]`,
			`{"model":"claude","max_tokens":4096,"messages":[{"role":"user","content":"weather?"},{"role":"assistant","content":[{"type":"text","text":"Checking."},{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Paris"}},{"type":"tool_use","id":"toolu_2","name":"get_weather","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"sunny"},{"type":"tool_result","tool_use_id":"toolu_2","content":[{"type":"text","text":"rain"}]},{"type":"text","text":"thanks"}]}]}`},
		{"restored thinking goes first",
			`"messages":[{"role":"user","content":"go"},{"role":"assistant","content":null,"tool_calls":[{"id":"t1","type":"function","function":{"name":"f","arguments":"{}"}}],"restored_thinking_blocks":"[{\"type\":\"thinking\",\"thinking\":\"Hm.\",\"signature\":\"c2ln\"},{\"type\":\"redacted_thinking\",\"data\":\"eyJ\"}]"},{"role":"tool","tool_call_id":"t1","content":"ok"}]`,
			`{"model":"claude","max_tokens":4096,"messages":[{"role":"user","content":"go"},{"role":"assistant","content":[{"type":"thinking","thinking":"Hm.","signature":"c2ln"},{"type":"redacted_thinking","data":"eyJ"},{"type":"tool_use","id":"t1","name":"f","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]}]}`},
		{"images: a data URL to base64, another to url",
			`"messages":[{"role":"user","content":[{"type":"text","text":"what is it?"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBOR"}},{"type":"image_url","image_url":{"url":"https://example.com/a.jpg"}}]}]`,
			`{"model":"claude","max_tokens":4096,"messages":[{"role":"user","content":[{"type":"text","text":"what is it?"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBOR"}},{"type":"image","source":{"type":"url","url":"https://example.com/a.jpg"}}]}]}`},
		{"tools, required, parallel off",
			`"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f","description":"Does f.","parameters":{"type":"object"}}},{"type":"function","function":{"name":"g"}}],"tool_choice":"required","parallel_tool_calls":false`,
			`{"model":"claude","max_tokens":4096,"messages":[{"role":"user","content":"x"}],"tools":[{"name":"f","description":"Does f.","input_schema":{"type":"object"}},{"name":"g","input_schema":{"type":"object","properties":{}}}],"tool_choice":{"type":"any","disable_parallel_tool_use":true}}`},
		{"a named function, none, auto",
			`"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":{"type":"function","function":{"name":"f"}}`,
			`{"model":"claude","max_tokens":4096,"messages":[{"role":"user","content":"x"}],"tools":[{"name":"f","input_schema":{"type":"object","properties":{}}}],"tool_choice":{"type":"tool","name":"f"}}`},
		{"none",
			`"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"none","parallel_tool_calls":false`,
			`{"model":"claude","max_tokens":4096,"messages":[{"role":"user","content":"x"}],"tools":[{"name":"f","input_schema":{"type":"object","properties":{}}}],"tool_choice":{"type":"none"}}`},
		{"limits and sampling, user to metadata, stream",
			`"messages":[{"role":"user","content":"x"}],"max_completion_tokens":300,"stop":"END","temperature":0.2,"top_p":0.9,"user":"u-1","stream":true,"seed":7`,
			`{"model":"claude","max_tokens":300,"messages":[{"role":"user","content":"x"}],"stop_sequences":["END"],"temperature":0.2,"top_p":0.9,"metadata":{"user_id":"u-1"},"stream":true}`},
		{"thinking: temperature dropped",
			`"messages":[{"role":"user","content":"x"}],"max_tokens":2048,"temperature":0.5,"thinking":{"type":"enabled","budget_tokens":1024}`,
			`{"model":"claude","max_tokens":2048,"messages":[{"role":"user","content":"x"}],"thinking":{"type":"enabled","budget_tokens":1024}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := UpstreamRequest(wiretest.Request(t, tc.members), translate.Options{Model: "claude", DefaultMaxTokens: 4096, CarriedMember: "restored_thinking_blocks"})
			got := r.Body // the gateway uses its own member, which only its store fills
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(wiretest.JSON(t, []byte(tc.want)), wiretest.JSON(t, got)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// The blocks a Messages API client sent for a message go as they were
// while the message says what they say; a turn repair changed (a call
// renamed) is translated instead, and a turn whose thinking the client
// dropped gets the restored thinking in front. The client's tools go as
// declared while its client tools are the request's, and its members the
// body lacks are added.
func TestRequestKeptBlocks(t *testing.T) {
	search := `{"type":"server_tool_use","id":"srv_1","name":"web_search","input":{"query":"q"}},{"type":"web_search_tool_result","tool_use_id":"srv_1","content":[]}`
	for _, tc := range []struct {
		name, members, want string
	}{
		{"as sent",
			`"messages":[{"role":"user","content":"","toolgate_blocks":[{"type":"document","source":{"type":"text","media_type":"text/plain","data":"x"}}]},` +
				`{"role":"assistant","content":"Found.","tool_calls":[{"id":"t1","type":"function","function":{"name":"f","arguments":"{}"}}],"toolgate_blocks":[` + search + `,{"type":"text","text":"Found."},{"type":"tool_use","id":"t1","name":"f","input":{}}]},` +
				`{"role":"tool","tool_call_id":"t1","content":"ok","toolgate_blocks":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"ok"}],"is_error":true,"cache_control":{"type":"ephemeral"}}]}],` +
				`"tools":[{"type":"function","function":{"name":"f"}}],"toolgate_request":{"tools":[{"name":"f","input_schema":{"type":"object"},"cache_control":{"type":"ephemeral"}},{"type":"web_search_20250305","name":"web_search"}],"service_tier":"auto"}`,
			`{"model":"claude","max_tokens":4096,"messages":[{"role":"user","content":[{"type":"document","source":{"type":"text","media_type":"text/plain","data":"x"}}]},` +
				`{"role":"assistant","content":[` + search + `,{"type":"text","text":"Found."},{"type":"tool_use","id":"t1","name":"f","input":{}}]},` +
				`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"ok"}],"is_error":true,"cache_control":{"type":"ephemeral"}}]}],` +
				`"tools":[{"name":"f","input_schema":{"type":"object"},"cache_control":{"type":"ephemeral"}},{"type":"web_search_20250305","name":"web_search"}],"service_tier":"auto"}`},
		{"a renamed call, a tool removed: translated, the server tool kept",
			`"messages":[{"role":"user","content":"go"},{"role":"assistant","content":null,"tool_calls":[{"id":"t1_2","type":"function","function":{"name":"f","arguments":"{}"}}],"toolgate_blocks":[{"type":"tool_use","id":"t1","name":"f","input":{}}]},` +
				`{"role":"tool","tool_call_id":"t1_2","content":"ok","toolgate_blocks":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]}],` +
				`"tools":[{"type":"function","function":{"name":"f"}}],"toolgate_request":{"tools":[{"name":"f","input_schema":{"type":"object"}},{"name":"g","input_schema":{"type":"object"}},{"type":"web_search_20250305","name":"web_search"}]}`,
			`{"model":"claude","max_tokens":4096,"messages":[{"role":"user","content":"go"},{"role":"assistant","content":[{"type":"tool_use","id":"t1_2","name":"f","input":{}}]},` +
				`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1_2","content":"ok"}]}],"tools":[{"name":"f","input_schema":{"type":"object","properties":{}}},{"type":"web_search_20250305","name":"web_search"}]}`},
		{"a Messages client's system message in the conversation stays in its place",
			`"messages":[{"role":"system","content":"Be brief.","toolgate_blocks":[{"type":"text","text":"Be brief."}]},{"role":"user","content":"go"},{"role":"system","content":"Env.","toolgate_blocks":[{"type":"text","text":"Env."}]}]`,
			`{"model":"claude","max_tokens":4096,"system":[{"type":"text","text":"Be brief."}],"messages":[{"role":"user","content":"go"},{"role":"system","content":[{"type":"text","text":"Env."}]}]}`},
		{"thinking dropped by the client: the restored thinking first",
			`"messages":[{"role":"user","content":"go"},{"role":"assistant","content":null,"tool_calls":[{"id":"t1","type":"function","function":{"name":"f","arguments":"{}"}}],` +
				`"restored_thinking_blocks":"[{\"type\":\"thinking\",\"thinking\":\"Hm.\",\"signature\":\"c2ln\"}]","toolgate_blocks":[` + search + `,{"type":"tool_use","id":"t1","name":"f","input":{}}]},{"role":"tool","tool_call_id":"t1","content":"ok"}]`,
			`{"model":"claude","max_tokens":4096,"messages":[{"role":"user","content":"go"},{"role":"assistant","content":[{"type":"thinking","thinking":"Hm.","signature":"c2ln"},` + search + `,{"type":"tool_use","id":"t1","name":"f","input":{}}]},` +
				`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := wiretest.Translated(t, `{"model":"m",`+tc.members+`}`, translate.BlocksMember)
			r, err := UpstreamRequest(req, translate.Options{Model: "claude", DefaultMaxTokens: 4096, CarriedMember: "restored_thinking_blocks"})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(wiretest.JSON(t, []byte(tc.want)), wiretest.JSON(t, r.Body)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// What an anthropic upstream cannot take is refused before anything is
// sent, naming the parameter; thinking is checked against C14's bounds;
// a tool loop whose last turn lacks its thinking turns thinking off.
func TestRequestRefusals(t *testing.T) {
	for _, tc := range []struct {
		members, param, msg string
	}{
		{`"messages":[{"role":"user","content":"x"}],"n":2`, "n", "one choice"},
		{`"messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_object"}`, "response_format", "no response_format"},
		{`"messages":[{"role":"user","content":[{"type":"input_audio","input_audio":{}}]}]`, "messages[0].content[0].type", "cannot be sent"},
		{`"messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"[1]"}}]}]`, "messages[0].tool_calls[0].function.arguments", "JSON object"},
		{`"messages":[{"role":"user","content":"x"}],"thinking":{"type":"enabled","budget_tokens":512}`, "thinking.budget_tokens", "at least 1024"},
		{`"messages":[{"role":"user","content":"x"}],"max_tokens":1024,"thinking":{"type":"enabled","budget_tokens":1024}`, "max_tokens", "(1024 tokens) must be smaller than max_tokens (1024)"},
	} {
		_, err := UpstreamRequest(wiretest.Request(t, tc.members), translate.Options{Model: "claude", DefaultMaxTokens: 4096})
		var re *wire.ParamError
		if !errors.As(err, &re) || re.Param != tc.param || !strings.Contains(re.Msg, tc.msg) {
			t.Errorf("%s: err %v", tc.members, err)
		}
	}
	// Anthropic's rule with thinking on: the final assistant message, when
	// it made calls, starts with its thinking block. Without one the
	// request goes with thinking off, whatever follows the tool results.
	call := `{"role":"assistant","content":null,"tool_calls":[{"id":"t1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"t1","content":"ok"}`
	thought := `{"role":"assistant","content":null,"restored_thinking_blocks":"[{\"type\":\"thinking\",\"thinking\":\"t\",\"signature\":\"s\"}]","tool_calls":[{"id":"t1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"t1","content":"ok"}`
	on := `,"thinking":{"type":"enabled","budget_tokens":1024}`
	for _, tc := range []struct {
		name, messages string
		off            bool
	}{
		{"a tool loop", `{"role":"user","content":"go"},` + call, true},
		{"a user message after the results", `{"role":"user","content":"go"},` + call + `,{"role":"user","content":"and now?"}`, true},
		{"the loop's thinking restored", `{"role":"user","content":"go"},` + thought, false},
		{"restored, then a user message", `{"role":"user","content":"go"},` + thought + `,{"role":"user","content":"and now?"}`, false},
		{"a text answer last", `{"role":"user","content":"go"},` + call + `,{"role":"assistant","content":"done"},{"role":"user","content":"thanks"}`, false},
	} {
		r, err := UpstreamRequest(wiretest.Request(t, `"messages":[`+tc.messages+`]`+on), translate.Options{Model: "claude", DefaultMaxTokens: 4096, CarriedMember: "restored_thinking_blocks"})
		if err != nil || r.ThinkingOff != tc.off || strings.Contains(string(r.Body), `"enabled"`) == tc.off {
			t.Errorf("%s: %v off=%v %s", tc.name, err, r.ThinkingOff, r.Body)
		}
	}
}

// streamOf translates a Messages stream's data payloads.
func streamOf(t *testing.T, events ...string) (chunks []string, done bool, s *UpstreamStream) {
	t.Helper()
	return streamWith(t, translate.StreamOptions{}, events...)
}

func streamWith(t *testing.T, o translate.StreamOptions, events ...string) (chunks []string, done bool, s *UpstreamStream) {
	t.Helper()
	s = NewUpstreamStream(o)
	for _, e := range events {
		cs, d, err := s.Event([]byte(e))
		if err != nil {
			t.Fatalf("%s: %v", e, err)
		}
		for _, c := range cs {
			chunks = append(chunks, string(c))
		}
		done = done || d
	}
	return chunks, done, s
}

// Every event mapping: Anthropic's stream in, chat.completion.chunk
// payloads out.
func TestUpstreamStream(t *testing.T) {
	chunks, done, s := streamOf(t,
		`{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-x","content":[],"usage":{"input_tokens":10,"output_tokens":1,"cache_read_input_tokens":4,"cache_creation_input_tokens":2}}}`,
		`{"type":"ping"}`,
		`{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Let me "}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"see."}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"U2ln"}}`,
		`{"type":"content_block_stop","index":0}`,
		`{"type":"content_block_start","index":1,"content_block":{"type":"redacted_thinking","data":"cmVk"}}`,
		`{"type":"content_block_stop","index":1}`,
		`{"type":"content_block_start","index":2,"content_block":{"type":"text","text":""}}`,
		`{"type":"content_block_delta","index":2,"delta":{"type":"text_delta","text":"On it."}}`,
		`{"type":"content_block_stop","index":2}`,
		`{"type":"content_block_start","index":3,"content_block":{"type":"tool_use","id":"toolu_a","name":"get_weather","input":{}}}`,
		`{"type":"content_block_delta","index":3,"delta":{"type":"input_json_delta","partial_json":"{\"city\":"}}`,
		`{"type":"content_block_delta","index":3,"delta":{"type":"input_json_delta","partial_json":"\"Paris\"}"}}`,
		`{"type":"content_block_stop","index":3}`,
		`{"type":"content_block_start","index":4,"content_block":{"type":"tool_use","id":"toolu_b","name":"get_weather","input":{}}}`,
		`{"type":"content_block_stop","index":4}`,
		`{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":30}}`,
		`{"type":"message_stop"}`,
	)
	deltas := []string{
		`{"role":"assistant","content":""}`, `{"reasoning_content":"Let me "}`, `{"reasoning_content":"see."}`, `{"content":"On it."}`,
		`{"tool_calls":[{"index":0,"id":"toolu_a","type":"function","function":{"name":"get_weather","arguments":""}}]}`,
		`{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":"}}]}`,
		`{"tool_calls":[{"index":0,"function":{"arguments":"\"Paris\"}"}}]}`,
		`{"tool_calls":[{"index":1,"id":"toolu_b","type":"function","function":{"name":"get_weather","arguments":""}}]}`,
		`{}`,
	}
	if !done || len(chunks) != len(deltas)+1 {
		t.Fatalf("done %v, %d chunks:\n%s", done, len(chunks), strings.Join(chunks, "\n"))
	}
	for i, d := range deltas {
		var c struct {
			ID      string `json:"id"`
			Model   string `json:"model"`
			Choices []struct {
				Delta        json.RawMessage `json:"delta"`
				FinishReason *string         `json:"finish_reason"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(chunks[i]), &c); err != nil || c.ID != "msg_1" || c.Model != "claude-x" || string(c.Choices[0].Delta) != d {
			t.Errorf("chunk %d: %s, want delta %s", i, chunks[i], d)
		}
		if finish := c.Choices[0].FinishReason; (i == len(deltas)-1) != (finish != nil && *finish == "tool_calls") {
			t.Errorf("chunk %d: finish %v", i, finish)
		}
	}
	usage := chunks[len(chunks)-1]
	if !strings.Contains(usage, `"choices":[]`) || !strings.Contains(usage, `"prompt_tokens":16`) || !strings.Contains(usage, `"completion_tokens":30`) ||
		!strings.Contains(usage, `"total_tokens":46`) || !strings.Contains(usage, `"cached_tokens":4`) {
		t.Errorf("usage chunk %s", usage)
	}
	want := `[{"type":"thinking","thinking":"Let me see.","signature":"U2ln"},{"type":"redacted_thinking","data":"cmVk"}]`
	if got := string(s.Carried()); got != want {
		t.Errorf("thinking blocks %s", got)
	}
}

// For a client with a slot for them (StreamOptions.Thoughts), a
// signature and a redacted block are handed on in the gateway's own delta
// members, where Anthropic sent them; a chat client gets neither.
func TestStreamThoughts(t *testing.T) {
	events := []string{
		`{"type":"message_start","message":{"id":"msg_1","model":"claude-x","usage":{}}}`,
		`{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Hm."}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"U2ln"}}`,
		`{"type":"content_block_stop","index":0}`,
		`{"type":"content_block_start","index":1,"content_block":{"type":"redacted_thinking","data":"cmVk"}}`,
		`{"type":"content_block_stop","index":1}`,
	}
	chunks, _, _ := streamWith(t, translate.StreamOptions{Thoughts: true}, events...)
	got := strings.Join(chunks, "\n")
	if len(chunks) != 4 || !strings.Contains(chunks[2], `"delta":{"`+translate.SignatureMember+`":"U2ln"}`) ||
		!strings.Contains(chunks[3], `"delta":{"`+translate.RedactedMember+`":"cmVk"}`) {
		t.Errorf("handed on:\n%s", got)
	}
	chunks, _, _ = streamOf(t, events...)
	if got := strings.Join(chunks, "\n"); len(chunks) != 2 || strings.Contains(got, "toolgate_") {
		t.Errorf("to a chat client:\n%s", got)
	}
	// A server tool's use, whole once it stops (its input from its
	// fragments), its result, and a text block's citation.
	server := []string{
		`{"type":"message_start","message":{"id":"msg_2","model":"claude-x","usage":{}}}`,
		`{"type":"content_block_start","index":0,"content_block":{"type":"server_tool_use","id":"srv_1","name":"web_search","input":{}}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"query\":"}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"\"q\"}"}}`,
		`{"type":"content_block_stop","index":0}`,
		`{"type":"content_block_start","index":1,"content_block":{"type":"web_search_tool_result","tool_use_id":"srv_1","content":[{"type":"web_search_result","url":"u","encrypted_content":"E"}]}}`,
		`{"type":"content_block_stop","index":1}`,
		`{"type":"content_block_start","index":2,"content_block":{"type":"text","text":""}}`,
		`{"type":"content_block_delta","index":2,"delta":{"type":"citations_delta","citation":{"type":"web_search_result_location","url":"u"}}}`,
		`{"type":"content_block_delta","index":2,"delta":{"type":"text_delta","text":"Sunny."}}`,
		`{"type":"content_block_stop","index":2}`,
	}
	chunks, _, _ = streamWith(t, translate.StreamOptions{Thoughts: true}, server...)
	for k, want := range map[int]string{
		1: `"delta":{"` + translate.BlockMember + `":{"type":"server_tool_use","id":"srv_1","name":"web_search","input":{"query":"q"}}}`,
		2: `"delta":{"` + translate.BlockMember + `":{"type":"web_search_tool_result","tool_use_id":"srv_1","content":[{"type":"web_search_result","url":"u","encrypted_content":"E"}]}}`,
		3: `"delta":{"` + translate.CitationMember + `":{"type":"web_search_result_location","url":"u"}}`,
		4: `"delta":{"content":"Sunny."}`,
	} {
		if len(chunks) != 5 || !strings.Contains(chunks[k], want) {
			t.Errorf("chunk %d, want %s:\n%s", k, want, strings.Join(chunks, "\n"))
		}
	}
	if chunks, _, _ = streamOf(t, server...); strings.Contains(strings.Join(chunks, ""), "toolgate_") {
		t.Errorf("to a chat client: %v", chunks)
	}
}

// Stop reasons map onto finish reasons; pause_turn is reported; an error
// event becomes an error object, which ends the stream.
func TestStreamStopsAndErrors(t *testing.T) {
	for stop, want := range map[string]string{"end_turn": "stop", "stop_sequence": "stop", "tool_use": "tool_calls", "max_tokens": "length",
		"model_context_window_exceeded": "length", "refusal": "content_filter", "pause_turn": "stop"} {
		chunks, _, s := streamOf(t, `{"type":"message_start","message":{"id":"m","model":"c","usage":{}}}`,
			`{"type":"message_delta","delta":{"stop_reason":"`+stop+`"},"usage":{"output_tokens":1}}`)
		if paused := len(s.Kinds()) > 0; !strings.Contains(chunks[1], `"finish_reason":"`+want+`"`) || paused != (stop == "pause_turn") {
			t.Errorf("%s: %s (kinds %v)", stop, chunks[1], s.Kinds())
		}
	}
	chunks, _, _ := streamOf(t, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
	n := wire.NewNormalizer(wire.Options{Upstream: "claude"})
	if _, _, err := n.Chunk([]byte(chunks[0])); err == nil || !strings.Contains(err.Error(), "Overloaded") {
		t.Errorf("error event: %s → %v", chunks[0], err)
	}
	if _, _, err := NewUpstreamStream(translate.StreamOptions{}).Event([]byte(`not json`)); err == nil {
		t.Error("a payload that is not JSON was taken")
	}
}

// A whole message becomes a chat.completion: text, reasoning, calls with
// their input as arguments, the stop reason, the usage; its thinking
// blocks are kept for the store.
func TestWhole(t *testing.T) {
	a, err := UpstreamWhole([]byte(`{"id":"msg_1","type":"message","role":"assistant","model":"claude-x","content":[`+
		`{"type":"thinking","thinking":"Hm.","signature":"c2ln"},{"type":"text","text":"Checking."},`+
		`{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Paris"}}],"stop_reason":"tool_use","usage":{"input_tokens":10,"output_tokens":5,"cache_read_input_tokens":2}}`), "claude")
	if err != nil {
		t.Fatal(err)
	}
	got := wiretest.JSON(t, a.Chat).(map[string]any)
	delete(got, "created")
	want := wiretest.JSON(t, []byte(`{"id":"msg_1","object":"chat.completion","model":"claude-x","choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":"Checking.","reasoning_content":"Hm.",`+
		`"tool_calls":[{"id":"toolu_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]}}],`+
		`"usage":{"prompt_tokens":12,"completion_tokens":5,"total_tokens":17,"prompt_tokens_details":{"cached_tokens":2}}}`))
	if diff := cmp.Diff(want, any(got)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if string(a.Carried) != `[{"type":"thinking","thinking":"Hm.","signature":"c2ln"}]` {
		t.Errorf("thinking %s", a.Carried)
	}
	if _, err := UpstreamWhole([]byte(`{"type":"error","error":{"type":"api_error","message":"boom"}}`), "claude"); err == nil || !strings.Contains(err.Error(), "boom") {
		t.Errorf("error body: %v", err)
	}
}

// FuzzAnthropicEvents: any sequence of payloads is either refused with an
// error or becomes chunks that are JSON objects, which the normalizer
// takes or refuses with its own errors; nothing panics.
func FuzzAnthropicEvents(f *testing.F) {
	f.Add(`{"type":"message_start","message":{"id":"m","model":"c","usage":{"input_tokens":1}}}`, `{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t","name":"f","input":{}}}`, `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{}"}}`)
	f.Add(`{"type":"content_block_delta","index":7,"delta":{"type":"thinking_delta","thinking":"x"}}`, `{"type":"message_delta","delta":{"stop_reason":"pause_turn"}}`, `{"type":"error","error":null}`)
	f.Add(`{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t","name":"f","input":{"a":[1,{"b":null}]}}}`, `[]`, `{"type":null}`)
	f.Add(`{"type":"content_block_start","index":0,"content_block":{"type":"server_tool_use","id":"s","name":"web_search","input":{}}}`, `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"q\":1}"}}`, `{"type":"content_block_stop","index":0}`)
	f.Add(`{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}`, `{"type":"content_block_delta","index":1,"delta":{"type":"citations_delta","citation":{"url":"u"}}}`, `{"type":"content_block_delta","index":1,"delta":{"type":"signature_delta","signature":"s"}}`)
	f.Fuzz(func(t *testing.T, a, b, c string) {
		wiretest.Translate(t, NewUpstreamStream(translate.StreamOptions{}), "claude", a, b, c)
		wiretest.Translate(t, NewUpstreamStream(translate.StreamOptions{Thoughts: true}), "claude", a, b, c) // a Messages client's
	})
}

// FuzzAnthropicRequest: any chat request the decoder takes is translated
// into a Messages request that is JSON, or refused with a client error;
// nothing panics.
func FuzzAnthropicRequest(f *testing.F) {
	f.Add(`{"model":"m","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"a"},{"role":"user","content":[{"type":"text","text":"b\u00e9<"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBOR"}}]},` +
		`{"role":"assistant","content":"x","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]},{"role":"tool","tool_call_id":"c","content":"ok"},{"role":"user","content":"c \ud800"}]}`)
	f.Add(`{"model":"m","messages":[{"role":"user","content":"\"q\""},{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":""}}]},{"role":"tool","tool_call_id":"c","content":[{"type":"text","text":"r"}]}],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"required"}`)
	f.Fuzz(func(t *testing.T, body string) {
		wiretest.TranslatesOrRefuses(t, body, func(req *wire.ChatRequest) ([]byte, error) {
			r, err := UpstreamRequest(req, translate.Options{Model: "m", DefaultMaxTokens: 10, CarriedMember: "carried"})
			return r.Body, err
		})
	})
}

// Claude on Vertex AI: the model in the path (rawPredict, or
// streamRawPredict for a stream), the version in the body, no model
// member; Setup names no path and sends no anthropic-version header.
func TestVertexRequest(t *testing.T) {
	for _, stream := range []bool{false, true} {
		members := `"messages":[{"role":"user","content":"hi"}]`
		if stream {
			members += `,"stream":true`
		}
		r, err := UpstreamRequest(wiretest.Request(t, members), translate.Options{Model: "claude-sonnet-4@2025", DefaultMaxTokens: 64, Vertex: true})
		if err != nil {
			t.Fatal(err)
		}
		want := `{"anthropic_version":"vertex-2023-10-16","max_tokens":64,"messages":[{"role":"user","content":"hi"}]` + map[bool]string{true: `,"stream":true`}[stream] + `}`
		path := map[bool]string{false: "/models/claude-sonnet-4@2025:rawPredict", true: "/models/claude-sonnet-4@2025:streamRawPredict"}[stream]
		if string(r.Body) != want || r.Path != path {
			t.Errorf("stream %v: %s %s, want %s %s", stream, r.Path, r.Body, path, want)
		}
	}
	if s := Setup(translate.UpstreamConfig{Version: "2023-06-01", Vertex: true}); s.Path != "" || s.Headers["anthropic-version"] != "" {
		t.Errorf("setup %+v", s)
	}
}
