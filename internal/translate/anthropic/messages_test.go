package anthropic

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate/internal/testing/wiretest"
	"github.com/toolgate/toolgate/internal/translate"
	"github.com/toolgate/toolgate/internal/wire"
)

// Every request mapping: the Messages request in, the chat request out,
// for an Anthropic upstream and for another protocol.
func TestChat(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		p          translate.Protocol
		want       string
		effort     bool
	}{
		{"system blocks, text, an image, cache_control kept for Anthropic",
			`{"model":"c","max_tokens":10,"system":[{"type":"text","text":"Be brief.","cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":[{"type":"text","text":"what?"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBOR"}}]}]}`,
			translate.Anthropic,
			`{"model":"c","max_tokens":10,"messages":[{"role":"system","content":[{"type":"text","text":"Be brief.","cache_control":{"type":"ephemeral"}}],"toolgate_blocks":[{"type":"text","text":"Be brief.","cache_control":{"type":"ephemeral"}}]},` +
				`{"role":"user","content":[{"type":"text","text":"what?"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBOR"}}],"toolgate_blocks":[{"type":"text","text":"what?"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBOR"}}]}]}`, false},
		{"tool_use and tool_result blocks, results first in their message; thinking as reasoning elsewhere; cache_control dropped",
			`{"model":"c","max_tokens":10,"messages":[{"role":"user","content":"go"},{"role":"assistant","content":[{"type":"thinking","thinking":"Hm.","signature":"s"},{"type":"text","text":"Checking."},{"type":"tool_use","id":"t1","name":"f","input":{"a":1}}]},` +
				`{"role":"user","content":[{"type":"text","text":"and?","cache_control":{"type":"ephemeral"}},{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"ok"}],"is_error":true}]}]}`,
			translate.OpenAI,
			`{"model":"c","max_tokens":10,"messages":[{"role":"user","content":"go"},{"role":"assistant","content":"Checking.","reasoning_content":"Hm.","tool_calls":[{"id":"t1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]},` +
				`{"role":"tool","tool_call_id":"t1","content":"Error: ok"},{"role":"user","content":[{"type":"text","text":"and?"}]}]}`, false},
		{"signed thinking blocks in the carried member for Anthropic, unsigned ones left to the store",
			`{"model":"c","max_tokens":10,"messages":[{"role":"user","content":"go"},{"role":"assistant","content":[{"type":"thinking","thinking":"Hm.","signature":"s"},{"type":"thinking","thinking":"x","signature":""},{"type":"redacted_thinking","data":"d"},{"type":"tool_use","id":"t1","name":"f","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]}]}`,
			translate.Anthropic,
			`{"model":"c","max_tokens":10,"messages":[{"role":"user","content":"go"},{"role":"assistant","content":null,"carried":"[{\"type\":\"thinking\",\"thinking\":\"Hm.\",\"signature\":\"s\"},{\"type\":\"redacted_thinking\",\"data\":\"d\"}]","tool_calls":[{"id":"t1","type":"function","function":{"name":"f","arguments":"{}"}}],` +
				`"toolgate_blocks":[{"type":"thinking","thinking":"Hm.","signature":"s"},{"type":"thinking","thinking":"x","signature":""},{"type":"redacted_thinking","data":"d"},{"type":"tool_use","id":"t1","name":"f","input":{}}]},` +
				`{"role":"tool","tool_call_id":"t1","content":"ok","toolgate_blocks":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]}]}`, false},
		{"tools, tool_choice tool, parallel off, settings, thinking as it is for Anthropic",
			`{"model":"c","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"x"}],"tools":[{"name":"f","description":"Does f.","input_schema":{"type":"object"}}],"tool_choice":{"type":"tool","name":"f","disable_parallel_tool_use":true},` +
				`"stop_sequences":["END"],"temperature":0.2,"top_p":0.9,"top_k":5,"metadata":{"user_id":"u"},"thinking":{"type":"enabled","budget_tokens":2048}}`,
			translate.Anthropic,
			`{"model":"c","max_tokens":10,"stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f","description":"Does f.","parameters":{"type":"object"}}}],` +
				`"tool_choice":{"type":"function","function":{"name":"f"}},"parallel_tool_calls":false,"stop":["END"],"temperature":0.2,"top_p":0.9,"top_k":5,"user":"u","thinking":{"type":"enabled","budget_tokens":2048},` +
				`"toolgate_request":{"tools":[{"name":"f","description":"Does f.","input_schema":{"type":"object"}}]}}`, false},
		{"any, top_k and thinking elsewhere: required, dropped, a reasoning effort",
			`{"model":"c","max_tokens":10,"messages":[{"role":"user","content":"x"}],"tools":[{"name":"f","input_schema":{"type":"object"}}],"tool_choice":{"type":"any"},"top_k":5,"thinking":{"type":"enabled","budget_tokens":4096}}`,
			translate.OpenAI,
			`{"model":"c","max_tokens":10,"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],"tool_choice":"required","reasoning_effort":"medium"}`, true},
		{"a system message in the conversation stays in its place",
			`{"model":"c","max_tokens":10,"messages":[{"role":"user","content":"go"},{"role":"system","content":[{"type":"text","text":"Environment: linux."}]}]}`,
			translate.OpenAI,
			`{"model":"c","max_tokens":10,"messages":[{"role":"user","content":"go"},{"role":"system","content":[{"type":"text","text":"Environment: linux."}]}]}`, false},
		{"adaptive thinking's output_config.effort where the route takes it",
			`{"model":"c","max_tokens":10,"messages":[{"role":"user","content":"x"}],"thinking":{"type":"adaptive","display":"omitted"},"output_config":{"effort":"low"}}`,
			translate.Gemini,
			`{"model":"c","max_tokens":10,"messages":[{"role":"user","content":"x"}],"reasoning_effort":"low"}`, true},
		{"a tool search's tool_reference as text elsewhere",
			`{"model":"c","max_tokens":10,"messages":[{"role":"user","content":"go"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"ToolSearch","input":{"query":"select:WebFetch"}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"tool_reference","tool_name":"WebFetch"}]}]}]}`,
			translate.OpenAI,
			`{"model":"c","max_tokens":10,"messages":[{"role":"user","content":"go"},{"role":"assistant","content":null,"tool_calls":[{"id":"t1","type":"function","function":{"name":"ToolSearch","arguments":"{\"query\":\"select:WebFetch\"}"}}]},{"role":"tool","tool_call_id":"t1","content":"Tool loaded: WebFetch"}]}`, false},
		{"thinking elsewhere on a route that does not take the client's effort: left out",
			`{"model":"c","max_tokens":10,"messages":[{"role":"user","content":"x"}],"thinking":{"type":"enabled","budget_tokens":4096}}`,
			translate.OpenAI,
			`{"model":"c","max_tokens":10,"messages":[{"role":"user","content":"x"}]}`, false},
		{"thinking disabled elsewhere: none where the route takes the client's effort",
			`{"model":"c","max_tokens":10,"messages":[{"role":"user","content":"x"}],"thinking":{"type":"disabled"}}`,
			translate.Gemini,
			`{"model":"c","max_tokens":10,"messages":[{"role":"user","content":"x"}],"reasoning_effort":"none"}`, true},
		{"thinking disabled elsewhere: left out where it does not",
			`{"model":"c","max_tokens":10,"messages":[{"role":"user","content":"x"}],"thinking":{"type":"disabled"}}`,
			translate.Responses,
			`{"model":"c","max_tokens":10,"messages":[{"role":"user","content":"x"}]}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Decode([]byte(tc.body), false)
			if err != nil {
				t.Fatal(err)
			}
			got, err := r.Chat(ChatOptions{Protocol: tc.p, ReasoningField: "reasoning_content", CarriedMember: "carried", Effort: tc.effort})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(wiretest.JSON(t, []byte(tc.want)), wiretest.JSON(t, wiretest.Inline(t, got.Chat, got.Kept, translate.BlocksMember))); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// What cannot be translated is refused, naming the parameter (on a
// route that allows every organization-wide object and hosted tool: see
// TestReaches for those that do not).
func TestChatRefused(t *testing.T) {
	for body, param := range map[string]string{
		`{"max_tokens":1,"messages":[{"role":"user","content":"x"}]}`:                                                                             "model",
		`{"model":"c","messages":[{"role":"user","content":"x"}]}`:                                                                                "max_tokens",
		`{"model":"c","max_tokens":1,"messages":[{"role":"user","content":"x"}],"tools":[{"type":"web_search_20250305","name":"web_search"}]}`:    "tools.0.type",
		`{"model":"c","max_tokens":1,"messages":[{"role":"user","content":"x"}],"tools":[{"name":"f"}],"tool_choice":{"type":"tool","name":"g"}}`: "tool_choice.name",
		`{"model":"c","max_tokens":1,"messages":[{"role":"user","content":[{"type":"document","source":{}}]}]}`:                                   "messages.0.content.0.type",
		`{"model":"c","max_tokens":1,"messages":[{"role":"tool","content":"x"}]}`:                                                                 "messages.0.role",
		`{"model":"c","max_tokens":1,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"file","file_id":"f"}}]}]}`:           "messages.0.content.0.source",
	} {
		r, err := Decode([]byte(body), false)
		if err == nil {
			_, err = r.Chat(ChatOptions{Protocol: translate.OpenAI, OrgWide: translate.OrgWideKinds, HostedTools: billedTools})
		}
		var pe *wire.ParamError
		if !errors.As(err, &pe) || pe.Param != param {
			t.Errorf("%s: %v, want an error about %s", body, err, param)
		}
	}
}

// What a request reaches past itself at the upstream is refused, naming
// the member, unless the route allows its kind (OrgWide): a file source,
// a container upload (also in a tool result), a container, MCP servers,
// a service tier but the default ones. A billed server tool the route
// does not allow is left out (Dropped), on an Anthropic upstream too,
// and a free one (tool search) kept.
func TestReaches(t *testing.T) {
	const head = `{"model":"c","max_tokens":1,`
	for body, param := range map[string]string{
		head + `"messages":[{"role":"user","content":[{"type":"document","source":{"type":"file","file_id":"f"}}]}]}`:                                                   "messages.0.content.0",
		head + `"messages":[{"role":"user","content":[{"type":"text","text":"x"},{"type":"container_upload","file_id":"f"}]}]}`:                                         "messages.0.content.1",
		head + `"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"image","source":{"type":"file","file_id":"f"}}]}]}]}`: "messages.0.content.0.content.0",
		head + `"messages":[{"role":"user","content":"x"}],"container":"cntr_1"}`:                                                                                       "container",
		head + `"messages":[{"role":"user","content":"x"}],"mcp_servers":[{"type":"url","url":"https://mcp.example","name":"m"}]}`:                                      "mcp_servers",
		head + `"messages":[{"role":"user","content":"x"}],"service_tier":"priority"}`:                                                                                  "service_tier",
	} {
		r, err := Decode([]byte(body), false)
		if err != nil {
			t.Fatal(err)
		}
		_, err = r.Chat(ChatOptions{Protocol: translate.Anthropic})
		var pe *wire.ParamError
		if !errors.As(err, &pe) || pe.Param != param || !strings.Contains(pe.Msg, "routes[].org_wide") {
			t.Errorf("%s: %v, want a refusal naming %s", body, err, param)
		}
		if _, err := r.Chat(ChatOptions{Protocol: translate.Anthropic, OrgWide: translate.OrgWideKinds}); err != nil {
			t.Errorf("%s, allowed: %v", body, err)
		}
	}
	for _, tier := range []string{`"auto"`, `"standard_only"`, `null`} {
		r, _ := Decode([]byte(head+`"messages":[{"role":"user","content":"x"}],"service_tier":`+tier+`}`), false)
		if _, err := r.Chat(ChatOptions{Protocol: translate.Anthropic}); err != nil {
			t.Errorf("service_tier %s: %v", tier, err)
		}
	}
	tools := `{"type":"web_search_20250305","name":"web_search"},{"name":"f","input_schema":{"type":"object"}}`
	for _, p := range []translate.Protocol{translate.Anthropic, translate.OpenAI} {
		all := tools
		if p == translate.Anthropic { // a free server tool, which only Anthropic runs
			all += `,{"type":"tool_search_tool_regex_20251119","name":"tool_search"}`
		}
		r, _ := Decode([]byte(head+`"messages":[{"role":"user","content":"x"}],"tools":[`+all+`]}`), false)
		got, err := r.Chat(ChatOptions{Protocol: p, CarriedMember: "carried"})
		if err != nil || len(got.Dropped) != 1 || got.Dropped[0] != "tool:web_search_20250305" || strings.Contains(string(got.Chat), "web_search_20250305") {
			t.Errorf("%s: an unallowed billed server tool: %v %v %s", p, err, got.Dropped, got.Chat)
		}
		if p == translate.Anthropic && !strings.Contains(string(got.Chat), "tool_search_tool_regex") {
			t.Errorf("a free server tool was left out: %s", got.Chat)
		}
	}
	r, _ := Decode([]byte(head+`"messages":[{"role":"user","content":"x"}],"tools":[`+tools+`]}`), false)
	got, err := r.Chat(ChatOptions{Protocol: translate.Anthropic, HostedTools: []string{"web_search"}})
	if err != nil || len(got.Dropped) != 0 || !strings.Contains(string(got.Chat), "web_search_20250305") {
		t.Errorf("an allowed server tool: %v %v %s", err, got.Dropped, got.Chat)
	}
}

// eventLog is an EventSink recording the events.
type eventLog struct {
	types []string
	data  []map[string]any
}

func (l *eventLog) SendEvent(name string, data []byte) error {
	var v map[string]any
	_ = json.Unmarshal(data, &v)
	l.types, l.data = append(l.types, name), append(l.data, v)
	return nil
}
func (l *eventLog) Committed() bool { return len(l.types) > 0 }

// A normalized chat stream becomes the Messages event sequence: a thinking
// block, a text block, two tool_use blocks, the stop reason and usage.
func TestStream(t *testing.T) {
	var log eventLog
	s := NewStream(Meta{ID: "msg_1", Model: "m", ReasoningField: "reasoning_content"}, &log)
	for _, c := range []string{
		`{"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`,
		`{"choices":[{"index":0,"delta":{"reasoning_content":"Hm.","content":null},"finish_reason":null}]}`,
		`{"choices":[{"index":0,"delta":{"content":"Checking."},"finish_reason":null}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"f","arguments":"{\"a\""}}]},"finish_reason":null}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":":1}"}}]},"finish_reason":null}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"c2","type":"function","function":{"name":"f","arguments":"{}"}}]},"finish_reason":null}]}`,
		`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
		`{"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":5,"prompt_tokens_details":{"cached_tokens":2}}}`,
	} {
		if err := s.Chunk([]byte(c)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Done(); err != nil {
		t.Fatal(err)
	}
	want := "message_start ping content_block_start content_block_delta content_block_stop content_block_start content_block_delta content_block_stop " +
		"content_block_start content_block_delta content_block_delta content_block_stop content_block_start content_block_delta content_block_stop message_delta message_stop"
	if got := strings.Join(log.types, " "); got != want {
		t.Fatalf("events:\n%s\nwant\n%s", got, want)
	}
	last := log.data[len(log.data)-2]
	if d := last["delta"].(map[string]any); d["stop_reason"] != "tool_use" {
		t.Errorf("message_delta %v", last)
	}
	if u := last["usage"].(map[string]any); u["input_tokens"] != 8.0 || u["cache_read_input_tokens"] != 2.0 || u["output_tokens"] != 5.0 {
		t.Errorf("usage %v", u)
	}
	// A failure after the start: one error event, no message_stop.
	var failed eventLog
	f := NewStream(Meta{ID: "msg_2"}, &failed)
	_ = f.Chunk([]byte(`{"choices":[{"index":0,"delta":{"content":"x"},"finish_reason":null}]}`))
	_ = f.Fail(wire.NewError("upstream_error", "upstream_stream_incomplete", "", "cut"))
	if got := failed.types[len(failed.types)-1]; got != "error" || strings.Contains(strings.Join(failed.types, " "), "message_stop") {
		t.Errorf("events %v", failed.types)
	}
}

// What an Anthropic upstream signed reaches the client as Anthropic sent
// it: a thinking block's signature as signature_delta, ending the block (a
// second thinking block is a new one); a redacted block whole, with its
// data. Whole answers carry the blocks Meta.Thoughts holds instead of the
// unsigned reasoning.
func TestThoughts(t *testing.T) {
	var log eventLog
	s := NewStream(Meta{ID: "msg_1", Model: "m", ReasoningField: "reasoning_content"}, &log)
	for _, c := range []string{
		`{"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`,
		`{"choices":[{"index":0,"delta":{"reasoning_content":"Hm."},"finish_reason":null}]}`,
		`{"choices":[{"index":0,"delta":{"` + translate.SignatureMember + `":"c2ln"},"finish_reason":null}]}`,
		`{"choices":[{"index":0,"delta":{"` + translate.RedactedMember + `":"eyJ"},"finish_reason":null}]}`,
		`{"choices":[{"index":0,"delta":{"reasoning_content":"More."},"finish_reason":null}]}`,
		`{"choices":[{"index":0,"delta":{"` + translate.SignatureMember + `":"bW9y"},"finish_reason":null}]}`,
		`{"choices":[{"index":0,"delta":{"content":"Done."},"finish_reason":"stop"}]}`,
	} {
		if err := s.Chunk([]byte(c)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Done(); err != nil {
		t.Fatal(err)
	}
	var blocks []string
	for i, typ := range log.types {
		switch d := log.data[i]; typ {
		case "content_block_start":
			b, _ := json.Marshal(d["content_block"])
			blocks = append(blocks, fmt.Sprintf("%v:%s", d["index"], b))
		case "content_block_delta":
			b, _ := json.Marshal(d["delta"])
			blocks = append(blocks, fmt.Sprintf("%v+%s", d["index"], b))
		case "content_block_stop":
			blocks = append(blocks, fmt.Sprintf("%v.", d["index"]))
		}
	}
	want := `0:{"signature":"","thinking":"","type":"thinking"} 0+{"thinking":"Hm.","type":"thinking_delta"} 0+{"signature":"c2ln","type":"signature_delta"} 0. ` +
		`1:{"data":"eyJ","type":"redacted_thinking"} 1. ` +
		`2:{"signature":"","thinking":"","type":"thinking"} 2+{"thinking":"More.","type":"thinking_delta"} 2+{"signature":"bW9y","type":"signature_delta"} 2. ` +
		`3:{"text":"","type":"text"} 3+{"text":"Done.","type":"text_delta"} 3.`
	if got := strings.Join(blocks, " "); got != want {
		t.Errorf("blocks:\n%s\nwant\n%s", got, want)
	}
	chat := `{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Done.","reasoning_content":"Hm."},"finish_reason":"stop"}]}`
	signed := `[{"type":"thinking","thinking":"Hm.","signature":"c2ln"},{"type":"redacted_thinking","data":"eyJ"}]`
	for thoughts, want := range map[string]string{
		"":     `"content":[{"signature":"","thinking":"Hm.","type":"thinking"},{"text":"Done.","type":"text"}]`,
		signed: `"content":[{"type":"thinking","thinking":"Hm.","signature":"c2ln"},{"type":"redacted_thinking","data":"eyJ"},{"text":"Done.","type":"text"}]`,
	} {
		b, err := Whole([]byte(chat), Meta{ID: "msg_1", Model: "m", ReasoningField: "reasoning_content", Thoughts: []byte(thoughts)})
		if err != nil || !strings.Contains(string(b), want) {
			t.Errorf("whole with %q: %v %s", thoughts, err, b)
		}
	}
}

// Every stop reason and error type.
func TestMappings(t *testing.T) {
	for finish, want := range map[string]string{"stop": "end_turn", "tool_calls": "tool_use", "length": "max_tokens", "content_filter": "refusal"} {
		if got := stopReason(finish); got != want {
			t.Errorf("%s: %s", finish, got)
		}
	}
	for status, want := range map[int]string{400: "invalid_request_error", 401: "authentication_error", 403: "permission_error", 404: "not_found_error",
		413: "request_too_large", 429: "rate_limit_error", 500: "api_error", 502: "api_error", 503: "overloaded_error"} {
		if got := ErrorType(status, wire.NewError("x", "", "", "m")); got != want {
			t.Errorf("%d: %s", status, got)
		}
	}
	if got := ErrorType(0, wire.NewError("upstream_error", "upstream_unavailable", "", "m")); got != "overloaded_error" {
		t.Errorf("by code: %s", got)
	}
}

// FuzzMessagesRequest: any body is decoded and translated or refused with
// a ParamError or DecodeError; nothing panics, and a translation is JSON.
func FuzzMessagesRequest(f *testing.F) {
	f.Add(`{"model":"c","max_tokens":10,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"x"}]}]}]}`)
	f.Add(`{"model":"c","max_tokens":10,"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f","input":null},{"type":"thinking"}]}],"tool_choice":{"type":"tool"}}`)
	f.Add(`{"model":"c","max_tokens":10,"system":7,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"url","url":"u"}}]}],"thinking":{"type":"enabled"}}`)
	f.Fuzz(func(t *testing.T, body string) {
		for _, p := range []translate.Protocol{translate.OpenAI, translate.Anthropic} {
			r, err := Decode([]byte(body), false)
			if err == nil {
				var got Translated
				got, err = r.Chat(ChatOptions{Protocol: p, ReasoningField: "reasoning_content", CarriedMember: "carried"})
				if err == nil && !json.Valid(got.Chat) {
					t.Fatalf("%q translated to %q", body, got.Chat)
				}
				// For an Anthropic upstream, then its translator: JSON or refused.
				if req, derr := wire.DecodeTranslated(got.Chat, got.Kept, nil); err == nil && p == translate.Anthropic && derr == nil {
					if up, uerr := UpstreamRequest(req, translate.Options{Model: "c", DefaultMaxTokens: 10, CarriedMember: "carried"}); uerr == nil && !json.Valid(up.Body) {
						t.Fatalf("the upstream request %q is not JSON", up.Body)
					}
				}
			}
			var pe *wire.ParamError
			var de *wire.DecodeError
			if err != nil && !errors.As(err, &pe) && !errors.As(err, &de) {
				t.Fatalf("error of type %T: %v", err, err)
			}
		}
	})
}

// Parallel calls whose fragments interleave (docs/quirks.md A43) reach a
// Messages client one block at a time: the first call's block streams, a
// call that starts while it is open is held and goes whole right after it,
// each block with its own arguments; a fragment of a call whose block has
// ended (text between) is a protocol error, never a block reopened.
func TestStreamInterleavedCalls(t *testing.T) {
	var log eventLog
	s := NewStream(Meta{ID: "msg_1", Model: "m", ReasoningField: "reasoning_content"}, &log)
	frag := func(f string) string {
		return `{"choices":[{"index":0,"delta":{"tool_calls":[` + f + `]},"finish_reason":null}]}`
	}
	for _, c := range []string{
		frag(`{"index":0,"id":"a","type":"function","function":{"name":"f","arguments":"{\"x\":"}}`),
		frag(`{"index":1,"id":"b","type":"function","function":{"name":"g","arguments":"{\"y\":"}}`),
		frag(`{"index":0,"function":{"arguments":"1}"}}`),
		frag(`{"index":1,"function":{"arguments":"2}"}}`),
		`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
	} {
		if err := s.Chunk([]byte(c)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Done(); err != nil {
		t.Fatal(err)
	}
	var got []string
	for k, typ := range log.types {
		d := log.data[k]
		switch typ {
		case "content_block_start":
			b := d["content_block"].(map[string]any)
			got = append(got, fmt.Sprintf("start %v %v", d["index"], b["id"]))
		case "content_block_delta":
			got = append(got, fmt.Sprintf("delta %v %v", d["index"], d["delta"].(map[string]any)["partial_json"]))
		case "content_block_stop":
			got = append(got, fmt.Sprintf("stop %v", d["index"]))
		}
	}
	want := []string{"start 0 a", `delta 0 {"x":`, "delta 0 1}", "stop 0", "start 1 b", `delta 1 {"y":2}`, "stop 1"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("blocks (-want +got):\n%s", diff)
	}
	var after eventLog
	s = NewStream(Meta{ID: "msg_2"}, &after)
	for _, c := range []string{
		frag(`{"index":0,"id":"a","type":"function","function":{"name":"f","arguments":"{"}}`),
		`{"choices":[{"index":0,"delta":{"content":"text"},"finish_reason":null}]}`,
	} {
		if err := s.Chunk([]byte(c)); err != nil {
			t.Fatal(err)
		}
	}
	var pe *wire.ProtocolError
	if err := s.Chunk([]byte(frag(`{"index":0,"function":{"arguments":"}"}}`))); !errors.As(err, &pe) {
		t.Errorf("a fragment after its block ended: %v", err)
	}
}

// Many small blocks are refused before any is translated, naming the
// bound: per message, and in all.
func TestBlocksBounded(t *testing.T) {
	tiny := func(n int) string {
		return "[" + strings.TrimSuffix(strings.Repeat(`{"type":"text","text":"a"},`, n), ",") + "]"
	}
	if _, err := Decode([]byte(`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":`+tiny(MaxBlocksPerMessage)+`}]}`), false); err != nil {
		t.Errorf("at the bound: %v", err)
	}
	_, err := Decode([]byte(`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":`+tiny(388354)+`}]}`), false)
	var pe *wire.ParamError
	if !errors.As(err, &pe) || pe.Param != "messages.0.content" || !strings.Contains(pe.Msg, "at most 1024") {
		t.Errorf("one message: %v", err)
	}
	msgs := strings.TrimSuffix(strings.Repeat(`{"role":"user","content":`+tiny(1000)+`},{"role":"assistant","content":"ok"},`, MaxBlocks/1000+1), ",")
	_, err = Decode([]byte(`{"model":"m","max_tokens":1,"messages":[`+msgs+`]}`), false)
	if !errors.As(err, &pe) || pe.Param != "messages" || !strings.Contains(pe.Msg, "at most 20000") {
		t.Errorf("in all: %v", err)
	}
}

// BenchmarkManyBlocks is a request of tiny text blocks through Decode
// and, when it decodes, the translation: past the bounds (the hostile
// 10.5 MB request of 388,354 blocks, refused) and at them (1,024 blocks,
// translated). It reports the memory allocated per body byte.
func BenchmarkManyBlocks(b *testing.B) {
	for _, n := range []int{388354, MaxBlocksPerMessage} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			body := []byte(`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":[` + strings.TrimSuffix(strings.Repeat(`{"type":"text","text":"a"},`, n), ",") + `]}]}`)
			wiretest.AllocPerByte(b, len(body), func() {
				if r, err := Decode(body, false); err == nil {
					_, _ = r.Chat(ChatOptions{Protocol: translate.OpenAI})
				}
			})
		})
	}
}
