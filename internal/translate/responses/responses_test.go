package responses

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate/internal/testing/wiretest"
	"github.com/toolgate/toolgate/internal/translate"
	"github.com/toolgate/toolgate/internal/wire"
)

func decoded(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return v
}

// A client's reasoning.effort reaches the chat request only with Effort
// (an upstream of the Responses API, or a route that takes the client's
// effort): a model that takes no reasoning setting is sent none.
func TestChatEffortOnlyWhereTaken(t *testing.T) {
	r, err := Decode([]byte(`{"model":"m","input":"x","reasoning":{"effort":"high","summary":"auto"}}`))
	if err != nil {
		t.Fatal(err)
	}
	for effort, want := range map[bool]bool{true: true, false: false} {
		got, err := r.chatBody(r.Input, ChatOptions{Effort: effort})
		if err != nil || strings.Contains(string(got), "reasoning_effort") != want {
			t.Errorf("Effort %v: %s %v", effort, got, err)
		}
	}
}

// Every request mapping: a Responses request in, the chat request out.
func TestChat(t *testing.T) {
	for _, tc := range []struct {
		name, body, want string
	}{
		{"a string input, instructions, limits and sampling",
			`{"model":"m","input":"hi","instructions":"Be brief.","max_output_tokens":100,"temperature":0.1,"top_p":0.9,"user":"u","metadata":{"a":"b"},"stream":true}`,
			`{"model":"m","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"hi"}],"max_tokens":100,"temperature":0.1,"top_p":0.9,"user":"u","metadata":{"a":"b"},"stream":true,"stream_options":{"include_usage":true}}`},
		{"items: messages, parts, calls merged into one turn, outputs, reasoning",
			`{"model":"m","input":[{"role":"developer","content":"Use tools."},{"type":"message","role":"user","content":[{"type":"input_text","text":"Weather?"},{"type":"input_image","image_url":"https://x/a.png","detail":"low"}]},` +
				`{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"Two cities."}]},{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Checking."}]},` +
				`{"type":"function_call","call_id":"c1","name":"get_weather","arguments":"{\"city\":\"Paris\"}"},{"type":"function_call","call_id":"c2","name":"get_weather","arguments":"{}"},` +
				`{"type":"function_call_output","call_id":"c1","output":"sunny"},{"type":"function_call_output","call_id":"c2","output":[{"type":"input_text","text":"rain"}]}]}`,
			`{"model":"m","messages":[{"role":"developer","content":"Use tools."},{"role":"user","content":[{"type":"text","text":"Weather?"},{"type":"image_url","image_url":{"url":"https://x/a.png","detail":"low"}}]},` +
				`{"role":"assistant","content":"Checking.","reasoning_content":"Two cities.","tool_calls":[{"id":"c1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}},{"id":"c2","type":"function","function":{"name":"get_weather","arguments":"{}"}}]},` +
				`{"role":"tool","tool_call_id":"c1","content":"sunny"},{"role":"tool","tool_call_id":"c2","content":"rain"}]}`},
		{"function tools, a named tool_choice, parallel, effort, a json_schema format",
			`{"model":"m","input":"x","tools":[{"type":"function","name":"f","description":"F.","parameters":{"type":"object"},"strict":true}],"tool_choice":{"type":"function","name":"f"},"parallel_tool_calls":false,"reasoning":{"effort":"low"},"text":{"format":{"type":"json_schema","name":"out","schema":{"type":"object"},"strict":true}}}`,
			`{"model":"m","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f","description":"F.","parameters":{"type":"object"},"strict":true}}],"tool_choice":{"type":"function","function":{"name":"f"}},"parallel_tool_calls":false,"reasoning_effort":"low","response_format":{"type":"json_schema","json_schema":{"name":"out","schema":{"type":"object"},"strict":true}}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Decode([]byte(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			got, err := r.chatBody(r.Input, ChatOptions{ReasoningField: "reasoning_content", Effort: true})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(decoded(t, []byte(tc.want)), decoded(t, got)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// What the gateway does not translate is refused, naming the parameter
// (on a route that allows every organization-wide object and hosted
// tool: see TestReaches for those that do not).
func TestRefused(t *testing.T) {
	for _, tc := range []struct{ body, param string }{
		{`{"model":"m","input":"x","tools":[{"type":"file_search"}]}`, "tools[0].type"},
		{`{"model":"m","input":[{"type":"item_reference","id":"x"}]}`, "input[0].type"},
		{`{"model":"m","input":[{"role":"user","content":[{"type":"input_file","file_id":"f"}]}]}`, "input[0].content[0].type"},
		{`{"model":"m","input":"x","background":true}`, "background"},
		{`{"model":"m","input":"x","tool_choice":{"type":"web_search_preview"}}`, "tool_choice"},
		{`{"input":"x"}`, "model"},
		{`{"model":"m"}`, "input"},
		{`[1]`, "body"},
	} {
		r, err := Decode([]byte(tc.body))
		if err == nil {
			_, err = r.chatBody(r.Input, ChatOptions{OrgWide: translate.OrgWideKinds, HostedTools: []string{"file_search"}})
		}
		var re *wire.ParamError
		if !errors.As(err, &re) || re.Param != tc.param {
			t.Errorf("%s: err %v", tc.body, err)
		}
	}
}

// What a request reaches past itself at the upstream is refused, naming
// the member, unless the route allows its kind (OrgWide), on a Responses
// upstream too: an item reference (typed or by its id alone), a file
// part naming a stored file or a URL to fetch, file_search's vector
// stores and an MCP server (when the route runs those tools), a
// container by id, a service tier but the default ones. A hosted tool
// the route does not allow is left out (Unallowed), kept when allowed.
func TestReaches(t *testing.T) {
	for body, param := range map[string]string{
		`{"model":"m","input":[{"type":"item_reference","id":"msg_1"}]}`:                                                                 "input[0]",
		`{"model":"m","input":[{"role":"user","content":"x"},{"id":"msg_1"}]}`:                                                           "input[1]",
		`{"model":"m","input":[{"role":"user","content":[{"type":"input_file","file_id":"file-1"}]}]}`:                                   "input[0].content[0]",
		`{"model":"m","input":[{"role":"user","content":[{"type":"input_text","text":"x"},{"type":"input_image","file_id":"file-1"}]}]}`: "input[0].content[1]",
		`{"model":"m","input":[{"role":"user","content":[{"type":"input_file","file_url":"https://example.com/a.pdf"}]}]}`:               "input[0].content[0]",
		`{"model":"m","input":"x","tools":[{"type":"file_search","vector_store_ids":["vs_1"]}]}`:                                         "tools[0].vector_store_ids",
		`{"model":"m","input":"x","tools":[{"type":"mcp","server_label":"s","server_url":"https://mcp.example"}]}`:                       "tools[0]",
		`{"model":"m","input":"x","tools":[{"type":"code_interpreter","container":"cntr_1"}]}`:                                           "tools[0].container",
		`{"model":"m","input":"x","service_tier":"priority"}`:                                                                            "service_tier",
	} {
		r, err := Decode([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		all := []string{"file_search", "mcp", "code_interpreter"}
		for _, keep := range []bool{true, false} {
			_, err = r.chatBody(r.Input, ChatOptions{Keep: keep, HostedTools: all})
			var re *wire.ParamError
			if !errors.As(err, &re) || re.Param != param || !strings.Contains(re.Msg, "routes[].org_wide") {
				t.Errorf("%s (keep %v): %v, want a refusal naming %s", body, keep, err, param)
			}
		}
		if _, err := r.chatBody(r.Input, ChatOptions{Keep: true, HostedTools: all, OrgWide: translate.OrgWideKinds}); err != nil && param != "input[1]" { // an item by its id alone is not translated
			t.Errorf("%s, allowed: %v", body, err)
		}
	}
	for _, tier := range []string{`"auto"`, `"default"`, `null`} {
		r, _ := Decode([]byte(`{"model":"m","input":"x","service_tier":` + tier + `}`))
		if _, err := r.chatBody(r.Input, ChatOptions{Keep: true}); err != nil {
			t.Errorf("service_tier %s: %v", tier, err)
		}
	}
	r, _ := Decode([]byte(`{"model":"m","input":"x","tools":[{"type":"web_search"},{"type":"function","name":"f"},{"type":"file_search","vector_store_ids":["vs_1"]}]}`))
	if got := r.Unallowed(nil); !slices.Equal(got, []string{"web_search", "file_search"}) {
		t.Errorf("unallowed: %v", got)
	}
	for _, allowed := range [][]string{nil, {"web_search"}} {
		got, err := r.chatBody(r.Input, ChatOptions{Keep: true, CarriedMember: "carried", HostedTools: allowed})
		if err != nil || strings.Contains(string(got), "file_search") || strings.Contains(string(got), `"web_search"`) != (allowed != nil) {
			t.Errorf("allowed %v: %v %s", allowed, err, got)
		}
	}
}

// eventLog is an EventSink recording the events.
type eventLog struct{ events []map[string]any }

func (l *eventLog) SendEvent(name string, data []byte) error {
	var v map[string]any
	if err := json.Unmarshal(data, &v); err != nil || v["type"] != name {
		return errors.New("an event's data does not name it")
	}
	l.events = append(l.events, v)
	return nil
}

func (l *eventLog) types() string {
	var s []string
	for _, e := range l.events {
		s = append(s, e["type"].(string))
	}
	return strings.Join(s, " ")
}

// A normalized chat stream becomes the Responses event sequence:
// reasoning, a message, two calls (their fragments interleaved), usage;
// every event numbered in order; the final object holds every item.
func TestStreamEvents(t *testing.T) {
	log := &eventLog{}
	s := NewStream(Meta{ID: "resp_1", Model: "m", ReasoningField: "reasoning_content"}, log)
	for _, c := range []string{
		`{"choices":[{"index":0,"delta":{"role":"assistant","reasoning_content":"Hm."},"finish_reason":null}]}`,
		`{"choices":[{"index":0,"delta":{"content":"Calling."},"finish_reason":null}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"f","arguments":"{\"a\""}}]},"finish_reason":null}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"c2","type":"function","function":{"name":"g","arguments":""}}]},"finish_reason":null}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":":1}"}}]},"finish_reason":null}]}`,
		`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
		`{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":7,"total_tokens":12,"prompt_tokens_details":{"cached_tokens":2}}}`,
	} {
		if err := s.Chunk([]byte(c)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Done(); err != nil {
		t.Fatal(err)
	}
	want := "response.created response.in_progress " +
		"response.output_item.added response.reasoning_summary_part.added response.reasoning_summary_text.delta " +
		"response.reasoning_summary_text.done response.reasoning_summary_part.done response.output_item.done " +
		"response.output_item.added response.content_part.added response.output_text.delta " +
		"response.output_text.done response.content_part.done response.output_item.done " +
		"response.output_item.added response.function_call_arguments.delta response.output_item.added response.function_call_arguments.delta " +
		"response.function_call_arguments.done response.output_item.done response.function_call_arguments.done response.output_item.done response.completed"
	if got := log.types(); got != want {
		t.Errorf("events\n got %s\nwant %s", got, want)
	}
	for i, e := range log.events {
		if e["sequence_number"] != float64(i) {
			t.Errorf("event %d numbered %v", i, e["sequence_number"])
		}
	}
	final := log.events[len(log.events)-1]["response"].(map[string]any)
	out := final["output"].([]any)
	if len(out) != 4 || final["status"] != "completed" || final["usage"].(map[string]any)["input_tokens"] != float64(5) {
		t.Fatalf("final %v", final)
	}
	if c := out[2].(map[string]any); c["call_id"] != "c1" || c["arguments"] != `{"a":1}` || c["status"] != "completed" {
		t.Errorf("call %v", c)
	}
}

// A cut at the length limit ends as incomplete; a failure after the
// start as failed, with the error, never completed.
func TestStreamEnds(t *testing.T) {
	log := &eventLog{}
	s := NewStream(Meta{ID: "resp_1"}, log)
	s.Chunk([]byte(`{"choices":[{"index":0,"delta":{"content":"abc"},"finish_reason":"length"}]}`))
	s.Done()
	last := log.events[len(log.events)-1]
	if last["type"] != "response.incomplete" || last["response"].(map[string]any)["incomplete_details"].(map[string]any)["reason"] != "max_output_tokens" {
		t.Errorf("length: %v", last)
	}
	log = &eventLog{}
	s = NewStream(Meta{ID: "resp_2"}, log)
	s.Chunk([]byte(`{"choices":[{"index":0,"delta":{"content":"ab"},"finish_reason":null}]}`))
	s.Fail(wire.NewError("upstream_error", "upstream_stream_incomplete", "", "broke off"))
	s.Done()
	if types := log.types(); strings.Contains(types, "completed") || !strings.HasSuffix(types, "response.failed") {
		t.Errorf("failure: %s", types)
	}
}

// FuzzResponsesRequest: any body is refused with a client error (a
// *wire.ParamError, or a *wire.DecodeError for a repeated member) or becomes a
// chat request that the chat decoder reads.
func FuzzResponsesRequest(f *testing.F) {
	f.Add(`{"model":"m","input":"hi"}`)
	f.Add(`{"model":"m","input":[{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":[{"type":"input_text","text":"x"}]},{"type":"reasoning","summary":[{"text":"r"}]}],"tools":[{"type":"function","name":"f"}],"tool_choice":"required","text":{"format":{"type":"json_object"}}}`)
	f.Add(`{"model":"m","input":[{"role":"assistant","content":[{"type":"refusal","refusal":"no"}]},{"role":"user","content":[{"type":"input_image","image_url":"data:x"}]}],"previous_response_id":"resp_1","store":false}`)
	f.Add(`{"model":"m","input":[{"type":"reasoning","id":"rs_1","encrypted_content":"tg2.0123456789ab0123456789ab.enc","summary":[]},{"type":"function_call","id":"fc_1","call_id":"c","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":"x"}]}`)
	f.Add(`{"model":"m","input":[{"type":"web_search_call","id":"ws_1","action":{"query":"q"}},{"role":"user","content":[{"type":"input_file","file_id":"f"}]}],"tools":[{"type":"web_search"}],"truncation":"auto"}`)
	f.Fuzz(func(t *testing.T, body string) {
		fuzzResponsesRequest(t, body, false)
		fuzzResponsesRequest(t, body, true) // for a Responses upstream
	})
}

// fuzzResponsesRequest: with keep, the chat request then goes to the
// Responses upstream's translator, which sends JSON or refuses.
func fuzzResponsesRequest(t *testing.T, body string, keep bool) {
	r, err := Decode([]byte(body))
	if err == nil {
		var chat []byte
		if chat, err = r.chatBody(r.Input, ChatOptions{OutputLimitField: "max_tokens", ReasoningField: "reasoning_content", CarriedMember: wire.OwnPrefix + "carried", Keep: keep, Effort: true}); err == nil {
			if _, derr := wire.DecodeRequest(chat); derr != nil && len(r.Input) > 0 {
				var de *wire.DecodeError
				if !errors.As(derr, &de) {
					t.Fatalf("the chat request %s does not decode: %v", chat, derr)
				}
			}
			if req, derr := wire.DecodeTranslated(chat, r.Input, nil); keep && derr == nil {
				if up, uerr := UpstreamRequest(req, translate.Options{Model: "m", CarriedMember: wire.OwnPrefix + "carried", Upstream: "u"}); uerr == nil && !json.Valid(up.Body) {
					t.Fatalf("the upstream request %q is not JSON", up.Body)
				}
			}
			return
		}
	}
	var re *wire.ParamError
	var de *wire.DecodeError
	if !errors.As(err, &re) && !errors.As(err, &de) {
		t.Fatalf("error of type %T: %v", err, err)
	}
}

// Many small content parts are refused before any item is translated,
// naming the bound: per item, and in all.
func TestPartsBounded(t *testing.T) {
	parts := func(n int) string {
		return "[" + strings.TrimSuffix(strings.Repeat(`{"type":"input_text","text":"a"},`, n), ",") + "]"
	}
	if _, err := Decode([]byte(`{"model":"m","input":[{"role":"user","content":` + parts(MaxPartsPerItem) + `}]}`)); err != nil {
		t.Errorf("at the bound: %v", err)
	}
	_, err := Decode([]byte(`{"model":"m","input":[{"role":"user","content":` + parts(100000) + `}]}`))
	var pe *wire.ParamError
	if !errors.As(err, &pe) || pe.Param != "input[0].content" || !strings.Contains(pe.Msg, "at most 1024") {
		t.Errorf("one item: %v", err)
	}
	items := strings.TrimSuffix(strings.Repeat(`{"role":"user","content":`+parts(1000)+`},`, MaxParts/1000+1), ",")
	_, err = Decode([]byte(`{"model":"m","input":[` + items + `]}`))
	if !errors.As(err, &pe) || pe.Param != "input" || !strings.Contains(pe.Msg, "at most 20000") {
		t.Errorf("in all: %v", err)
	}
}

// BenchmarkManyParts is a request of tiny text parts through Decode and,
// when it decodes, the translation: past the bounds (100,000 parts,
// refused) and at them (1,024, translated). It reports the memory
// allocated per body byte.
func BenchmarkManyParts(b *testing.B) {
	for _, n := range []int{100000, MaxPartsPerItem} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			body := []byte(`{"model":"m","input":[{"role":"user","content":[` + strings.TrimSuffix(strings.Repeat(`{"type":"input_text","text":"a"},`, n), ",") + `]}]}`)
			wiretest.AllocPerByte(b, len(body), func() {
				if r, err := Decode(body); err == nil {
					_, _ = r.chatBody(r.Input, ChatOptions{})
				}
			})
		})
	}
}

// With Keep, each chat message names the items it was made from by their
// index in the conversation: none is copied into the chat form, and the
// request decoded with the items as its Kept reads them back.
func TestKeptByIndex(t *testing.T) {
	r, err := Decode([]byte(`{"model":"m","input":[{"role":"user","content":"go"},{"type":"web_search_call","id":"ws_only_here","status":"completed","action":{"query":"q"}},` +
		`{"type":"function_call","call_id":"c1","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c1","output":"ok"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	chat, err := r.chatBody(r.Input, ChatOptions{Keep: true, HostedTools: []string{"web_search"}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(chat), "ws_only_here") {
		t.Errorf("an item copied into the chat form: %s", chat)
	}
	req, err := wire.DecodeTranslated(chat, r.Input, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]int{{0}, {1, 2}, {3}} // the user's message; the turn of the search and the call; the output
	if len(req.Messages) != len(want) {
		t.Fatalf("%d messages: %s", len(req.Messages), chat)
	}
	for i, m := range req.Messages {
		kept := translate.Kept(nil, req.Kept, m, translate.ItemsMember)
		if len(kept) != len(want[i]) {
			t.Fatalf("message %d keeps %d items, want %v: %s", i, len(kept), want[i], chat)
		}
		for k, at := range want[i] {
			if !bytes.Equal(kept[k], r.Input[at]) {
				t.Errorf("message %d, kept item %d: %s, want input[%d] %s", i, k, kept[k], at, r.Input[at])
			}
		}
	}
	if kept := translate.Kept(nil, r.Input[:1], req.Messages[1], translate.ItemsMember); kept != nil {
		t.Errorf("indices past the kept list read: %s", kept)
	}
}
