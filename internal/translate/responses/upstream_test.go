package responses

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

const restoredMember = "restored_items" // the gateway uses its own member, which only its store fills

// Every request mapping for a Responses upstream: the chat request's
// members in, the Responses request out.
func TestUpstreamRequest(t *testing.T) {
	head := `"model":"o4","store":false,"include":["reasoning.encrypted_content"],`
	carried := `{\"items\":[{\"type\":\"reasoning\",\"reasoning\":{\"type\":\"reasoning\",\"id\":\"rs_1\",\"encrypted_content\":\"enc\",\"summary\":[]}},{\"type\":\"function_call\",\"id\":\"fc_1\",\"call_id\":\"c1\"},{\"type\":\"function_call\",\"id\":\"fc_2\",\"call_id\":\"c2\"}]}`
	for _, tc := range []struct {
		name, members, want string
	}{
		{"messages keep their roles and places",
			`"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":[{"type":"text","text":"what is it?"},{"type":"image_url","image_url":{"url":"https://e.com/a.png","detail":"low"}}]},{"role":"assistant","content":"A cat."},{"role":"developer","content":"Cite."}]`,
			`{` + head + `"input":[{"type":"message","role":"system","content":[{"type":"input_text","text":"Be brief."}]},{"type":"message","role":"user","content":[{"type":"input_text","text":"what is it?"},{"type":"input_image","image_url":"https://e.com/a.png","detail":"low"}]},{"type":"message","role":"assistant","content":[{"type":"output_text","text":"A cat."}]},{"type":"message","role":"developer","content":[{"type":"input_text","text":"Cite."}]}]}`},
		{"calls and replies; the restored reasoning in front of its calls, which carry their item ids",
			`"messages":[{"role":"user","content":"go"},{"role":"assistant","content":null,"` + restoredMember + `":"` + carried + `","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}},{"id":"c2","type":"function","function":{"name":"f","arguments":""}}]},{"role":"tool","tool_call_id":"c1","content":"ok"},{"role":"tool","tool_call_id":"c2","content":[{"type":"text","text":"fine"}]}]`,
			`{` + head + `"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"go"}]},{"type":"reasoning","id":"rs_1","encrypted_content":"enc","summary":[]},{"type":"function_call","id":"fc_1","call_id":"c1","name":"f","arguments":"{\"a\":1}"},{"type":"function_call","id":"fc_2","call_id":"c2","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c1","output":"ok"},{"type":"function_call_output","call_id":"c2","output":"fine"}]}`},
		{"a reasoning item whose calls are gone is left out, and its calls' ids with it",
			`"messages":[{"role":"user","content":"go"},{"role":"assistant","content":null,"` + restoredMember + `":"` + carried + `","tool_calls":[{"id":"c9","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c9","content":"ok"}]`,
			`{` + head + `"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"go"}]},{"type":"function_call","call_id":"c9","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c9","output":"ok"}]}`},
		{"tools, a named function, sampling, limits, reasoning, format",
			`"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f","description":"Does f.","parameters":{"type":"object"},"strict":true}},{"type":"function","function":{"name":"g"}}],"tool_choice":{"type":"function","function":{"name":"f"}},"parallel_tool_calls":false,` +
				`"temperature":0.2,"top_p":0.9,"max_completion_tokens":300,"metadata":{"k":"v"},"user":"u","reasoning_effort":"low","response_format":{"type":"json_schema","json_schema":{"name":"n","schema":{"type":"object"},"strict":true}},"stream":true`,
			`{` + head + `"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"x"}]}],"stream":true,"tools":[{"type":"function","name":"f","description":"Does f.","parameters":{"type":"object"},"strict":true},{"type":"function","name":"g","parameters":{"type":"object","properties":{}},"strict":false}],` +
				`"tool_choice":{"type":"function","name":"f"},"parallel_tool_calls":false,"temperature":0.2,"top_p":0.9,"max_output_tokens":300,"metadata":{"k":"v"},"user":"u","reasoning":{"effort":"low","summary":"auto"},"text":{"format":{"type":"json_schema","name":"n","schema":{"type":"object"},"strict":true}}}`},
		{"required, json_object, effort none",
			`"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"required","max_tokens":5,"reasoning_effort":"none","response_format":{"type":"json_object"}`,
			`{` + head + `"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"x"}]}],"tools":[{"type":"function","name":"f","parameters":{"type":"object","properties":{}},"strict":false}],"tool_choice":"required","max_output_tokens":5,"reasoning":{"effort":"none"},"text":{"format":{"type":"json_object"}}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := UpstreamRequest(wiretest.Request(t, tc.members), translate.Options{Model: "o4", CarriedMember: restoredMember})
			if err != nil || r.Path != "/responses" {
				t.Fatalf("%v %q", err, r.Path)
			}
			if diff := cmp.Diff(wiretest.JSON(t, []byte(tc.want)), wiretest.JSON(t, r.Body)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	r, _ := UpstreamRequest(wiretest.Request(t, `"messages":[{"role":"user","content":"x"}]`), translate.Options{Model: "o4", UpstreamStore: true})
	if strings.Contains(string(r.Body), "include") || !strings.Contains(string(r.Body), `"store":true`) {
		t.Errorf("upstream_store: %s", r.Body)
	}
	for members, param := range map[string]string{
		`"messages":[{"role":"user","content":"x"}],"n":3`:                                                                  "n",
		`"messages":[{"role":"user","content":"x"}],"audio":{}`:                                                             "audio",
		`"messages":[{"role":"user","content":[{"type":"input_audio"}]}]`:                                                   "messages[0].content[0].type",
		`"messages":[{"role":"user","content":"x"}],"response_format":{"type":"grammar"}`:                                   "response_format.type",
		`"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":{}`: "tool_choice",
	} {
		_, err := UpstreamRequest(wiretest.Request(t, members), translate.Options{Model: "o4"})
		var pe *wire.ParamError
		if !errors.As(err, &pe) || pe.Param != param {
			t.Errorf("%s: %v", members, err)
		}
	}
}

// upstreamStreamOf translates a Responses stream's data payloads.
func upstreamStreamOf(t *testing.T, events ...string) ([]string, *UpstreamStream, bool) {
	t.Helper()
	return upstreamStreamWith(t, translate.StreamOptions{}, events...)
}

func upstreamStreamWith(t *testing.T, o translate.StreamOptions, events ...string) ([]string, *UpstreamStream, bool) {
	t.Helper()
	s := NewUpstreamStream(o)
	var out []string
	done := false
	for _, e := range events {
		cs, d, err := s.Event([]byte(e))
		if err != nil {
			t.Fatalf("%s: %v", e, err)
		}
		done = done || d
		for _, c := range cs {
			out = append(out, string(c))
		}
	}
	return out, s, done
}

// A Responses stream becomes chat chunks: the reasoning summary as
// reasoning, text, each call whole when its item is done, the finish and
// usage at response.completed (the end marker); the reasoning item and
// the call's item id are what Carried keeps.
func TestUpstreamStream(t *testing.T) {
	rs := `{"type":"reasoning","id":"rs_1","encrypted_content":"enc","summary":[{"type":"summary_text","text":"Hm."}]}`
	chunks, s, done := upstreamStreamOf(t,
		`{"type":"response.created","response":{"id":"resp_1","model":"o4","status":"in_progress"}}`,
		`{"type":"response.output_item.added","output_index":0,"item":{"type":"reasoning","id":"rs_1","summary":[]}}`,
		`{"type":"response.reasoning_summary_text.delta","delta":"Hm."}`,
		`{"type":"response.output_item.done","output_index":0,"item":`+rs+`}`,
		`{"type":"response.output_text.delta","delta":"Checking."}`,
		`{"type":"response.function_call_arguments.delta","delta":"{\"a\""}`,
		`{"type":"response.output_item.done","output_index":2,"item":{"type":"function_call","id":"fc_1","call_id":"call_1","name":"f","arguments":"{\"a\":1}"}}`,
		`{"type":"response.completed","response":{"id":"resp_1","status":"completed","usage":{"input_tokens":10,"output_tokens":5,"input_tokens_details":{"cached_tokens":2},"output_tokens_details":{"reasoning_tokens":3}}}}`)
	want := []string{`{"role":"assistant","content":""}`, `{"reasoning_content":"Hm."}`, `{"content":"Checking."}`,
		`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]}`, `{}`}
	if !done || len(chunks) != len(want)+1 {
		t.Fatalf("done %v, %d chunks: %v", done, len(chunks), chunks)
	}
	for k, w := range want {
		if !strings.Contains(chunks[k], `"delta":`+w) {
			t.Errorf("chunk %d: %s, want delta %s", k, chunks[k], w)
		}
	}
	if !strings.Contains(chunks[4], `"finish_reason":"tool_calls"`) || !strings.Contains(chunks[5], `"prompt_tokens":10`) || !strings.Contains(chunks[5], `"reasoning_tokens":3`) {
		t.Errorf("finish and usage: %s %s", chunks[4], chunks[5])
	}
	var c Carried
	if err := json.Unmarshal(s.Carried(), &c); err != nil || len(c.Items) != 2 || string(c.Items[0].Reasoning) != rs || c.Items[1].ID != "fc_1" || c.Items[1].CallID != "call_1" {
		t.Errorf("carried %s", s.Carried())
	}
	// How a response ends: incomplete, failed, an error event, or not at all.
	for _, tc := range []struct {
		event, want string
		done        bool
	}{
		{`{"type":"response.incomplete","response":{"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"}}}`, `"finish_reason":"length"`, true},
		{`{"type":"response.incomplete","response":{"status":"incomplete","incomplete_details":{"reason":"content_filter"}}}`, `"finish_reason":"content_filter"`, true},
		{`{"type":"response.failed","response":{"status":"failed","error":{"code":"server_error","message":"boom"}}}`, `"error":{`, false},
		{`{"type":"error","code":"rate_limit_exceeded","message":"slow down"}`, `"slow down"`, false},
	} {
		chunks, s, done := upstreamStreamOf(t, `{"type":"response.created","response":{"id":"r"}}`, tc.event)
		if last := chunks[len(chunks)-1]; !strings.Contains(last, tc.want) || done != tc.done || s.Ended() != tc.done {
			t.Errorf("%s: %s (done %v)", tc.event, last, done)
		}
	}
	if _, s, _ := upstreamStreamOf(t, `{"type":"response.created","response":{"id":"r"}}`, `{"type":"response.output_text.delta","delta":"x"}`); s.Ended() || s.Carried() != nil {
		t.Error("a stream without its end ended, or carried something")
	}
}

// A whole response: the same mappings, in one chat.completion.
func TestUpstreamWhole(t *testing.T) {
	a, err := UpstreamWhole([]byte(`{"id":"resp_1","object":"response","model":"o4","status":"completed","output":[`+
		`{"type":"reasoning","id":"rs_1","encrypted_content":"enc","summary":[{"type":"summary_text","text":"Hm."}]},`+
		`{"type":"message","id":"msg_1","role":"assistant","content":[{"type":"output_text","text":"Checking."}]},`+
		`{"type":"function_call","id":"fc_1","call_id":"call_1","name":"f","arguments":"{}"}],`+
		`"usage":{"input_tokens":10,"output_tokens":5,"input_tokens_details":{"cached_tokens":2},"output_tokens_details":{"reasoning_tokens":3}}}`), "oai")
	if err != nil {
		t.Fatal(err)
	}
	got := wiretest.JSON(t, a.Chat).(map[string]any)
	delete(got, "created")
	want := wiretest.JSON(t, []byte(`{"id":"resp_1","object":"chat.completion","model":"o4","choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":"Checking.","reasoning_content":"Hm.",`+
		`"tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{}"}}]}}],`+
		`"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15,"prompt_tokens_details":{"cached_tokens":2},"completion_tokens_details":{"reasoning_tokens":3}}}`))
	if diff := cmp.Diff(want, any(got)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if !strings.Contains(string(a.Carried), `"id":"fc_1"`) || !strings.Contains(string(a.Carried), `"encrypted_content":"enc"`) {
		t.Errorf("carried %s", a.Carried)
	}
	for body, msg := range map[string]string{
		`{"id":"r","status":"failed","error":{"code":"server_error","message":"boom"}}`: "boom",
		`{"error":{"message":"bad"}}`: "bad",
		`[]`:                          "not a Responses",
	} {
		if _, err := UpstreamWhole([]byte(body), "oai"); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%s: %v", body, err)
		}
	}
}

// FuzzResponsesEvents: any sequence of payloads is either refused with an
// error or becomes chunks that are JSON objects, which the normalizer
// takes or refuses with its own errors; nothing panics, and what Carried
// returns is JSON.
func FuzzResponsesEvents(f *testing.F) {
	f.Add(`{"type":"response.created","response":{"id":"r","model":"m"}}`, `{"type":"response.output_item.done","item":{"type":"reasoning","id":"rs","encrypted_content":"e"}}`,
		`{"type":"response.output_item.done","item":{"type":"function_call","id":"fc","call_id":"c","name":"f","arguments":"{}"}}`, `{"type":"response.completed","response":{"status":"completed","usage":{"input_tokens":1}}}`)
	f.Add(`{"type":"response.output_text.delta","delta":7}`, `{"type":"response.failed","response":null}`, `{"type":"error"}`, `[]`)
	f.Add(`{"type":"response.output_item.done","item":{"type":"function_call","call_id":"","name":""}}`, `{"type":"response.incomplete","response":{"incomplete_details":null}}`, `{}`, `null`)
	f.Fuzz(func(t *testing.T, a, b, c, d string) {
		wiretest.Translate(t, NewUpstreamStream(translate.StreamOptions{}), "oai", a, b, c, d)
	})
}

// The round trip of encrypted reasoning through a Responses client: the
// upstream's stream hands each reasoning item on (its id first, then the
// whole item, its encrypted content sealed for the upstream) and each
// call's item id; the client's stream writes them as the output items;
// sent back by the client, they reach the upstream that issued them as it
// issued them, in front of their call — and another upstream gets neither,
// the drop counted. A chat client's stream carries none of it.
func TestReasoningRoundTrip(t *testing.T) {
	rs := `{"type":"reasoning","id":"rs_1","encrypted_content":"enc","summary":[{"type":"summary_text","text":"Hm."}]}`
	events := []string{
		`{"type":"response.created","response":{"id":"resp_1","model":"o4","status":"in_progress"}}`,
		`{"type":"response.output_item.added","output_index":0,"item":{"type":"reasoning","id":"rs_1","summary":[]}}`,
		`{"type":"response.reasoning_summary_text.delta","delta":"Hm."}`,
		`{"type":"response.output_item.done","output_index":0,"item":` + rs + `}`,
		`{"type":"response.output_item.done","output_index":1,"item":{"type":"function_call","id":"fc_1","call_id":"call_1","name":"f","arguments":"{}"}}`,
		`{"type":"response.completed","response":{"id":"resp_1","status":"completed"}}`,
	}
	if chunks, _, _ := upstreamStreamOf(t, events...); strings.Contains(strings.Join(chunks, ""), wire.OwnPrefix) {
		t.Fatalf("a chat client's stream carries the gateway's members: %v", chunks)
	}
	chunks, _, _ := upstreamStreamWith(t, translate.StreamOptions{Thoughts: true, Upstream: "a"}, events...)
	log := &eventLog{}
	client := NewStream(Meta{ID: "resp_c", ReasoningField: "reasoning_content"}, log)
	for _, c := range chunks {
		if err := client.Chunk([]byte(c)); err != nil {
			t.Fatal(err)
		}
	}
	if err := client.Done(); err != nil {
		t.Fatal(err)
	}
	out := client.Output()
	var reasoning, call item
	if len(out) != 2 || json.Unmarshal(out[0], &reasoning) != nil || json.Unmarshal(out[1], &call) != nil {
		t.Fatalf("output %s", out)
	}
	if reasoning.ID != "rs_1" || reasoning.EncryptedContent != seal("enc", "a", nil) || call.ID != "fc_1" || call.CallID != "call_1" {
		t.Fatalf("output %s", out)
	}
	if added := log.events[2]; added["type"] != "response.output_item.added" || added["item"].(map[string]any)["id"] != "rs_1" {
		t.Errorf("the reasoning item was not opened with the upstream's id: %v", added)
	}
	input := append([]json.RawMessage{json.RawMessage(`{"role":"user","content":"go"}`)}, out...)
	input = append(input, json.RawMessage(`{"type":"function_call_output","call_id":"call_1","output":"ok"}`))
	r, err := Decode([]byte(`{"model":"m","input":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	chat, err := r.chatBody(input, ChatOptions{CarriedMember: restoredMember})
	if err != nil {
		t.Fatal(err)
	}
	req, err := wire.DecodeTranslated(chat, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for upstream, want := range map[string]string{
		"a": `"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"go"}]},` + rs +
			`,{"type":"function_call","call_id":"call_1","id":"fc_1","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"call_1","output":"ok"}]`,
		"b": `"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"go"}]},` +
			`{"type":"function_call","call_id":"call_1","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"call_1","output":"ok"}]`,
	} {
		tr, err := UpstreamRequest(req, translate.Options{Model: "o4", CarriedMember: restoredMember, Upstream: upstream})
		if err != nil || !strings.Contains(string(tr.Body), want) || tr.DroppedReasoning != map[string]int{"a": 0, "b": 1}[upstream] {
			t.Errorf("to %s: %v, %d dropped\n%s\nwant %s", upstream, err, tr.DroppedReasoning, tr.Body, want)
		}
	}
	// Whole answers: the same items, from the answer's Carried.
	answer, err := UpstreamWhole([]byte(`{"id":"resp_1","status":"completed","output":[`+rs+`,{"type":"function_call","id":"fc_1","call_id":"call_1","name":"f","arguments":"{}"}]}`), "a")
	if err != nil {
		t.Fatal(err)
	}
	_, whole, err := Whole(answer.Chat, Meta{ID: "resp_w", ReasoningField: "reasoning_content", Carried: answer.Carried, Upstream: "a"})
	if err != nil || len(whole) != 2 || !strings.Contains(string(whole[0]), `"encrypted_content":"`+seal("enc", "a", nil)+`"`) || !strings.Contains(string(whole[1]), `"id":"fc_1"`) {
		t.Errorf("whole: %v %s", err, whole)
	}
}

// A sealed encrypted content opens only for the upstream and the client
// key (tenant) it was sealed for, under the same secret — another
// replica's with that secret opens it; another upstream's, another key's,
// another secret's, a forged or truncated tag, or content never sealed
// does not.
func TestSeal(t *testing.T) {
	key := []byte("replica secret")
	mine := NewSealer(key, "team-a")
	sealed := seal("gAAA.x", "a", mine)
	if enc, ok := open(sealed, "a", NewSealer([]byte("replica secret"), "team-a")); !ok || enc != "gAAA.x" {
		t.Errorf("round trip: %q %v", enc, ok)
	}
	tag, _, _ := unseal(sealed)
	forged := sealPrefix + strings.Repeat("0", tagLen) + ".gAAA.x"
	for name, c := range map[string]struct {
		sealed, upstream string
		s                translate.Sealer
	}{
		"another upstream":    {sealed, "b", mine},
		"another key":         {sealed, "a", NewSealer(key, "team-b")},
		"another secret":      {sealed, "a", NewSealer([]byte("other"), "team-a")},
		"no secret":           {sealed, "a", nil},
		"another content":     {sealPrefix + tag + ".gAAA.y", "a", mine},
		"a forged tag":        {forged, "a", mine},
		"a truncated tag":     {sealPrefix + tag[:12] + ".gAAA.x", "a", mine},
		"the unkeyed tg1 tag": {"tg1.0c01fc77d3a7.gAAA.x", "a", mine},
		"never sealed":        {"gAAA.x", "a", mine},
		"empty":               {"", "a", mine},
	} {
		if enc, ok := open(c.sealed, c.upstream, c.s); ok {
			t.Errorf("%s: opened as %q", name, enc)
		}
	}
}

// The messages made from a kept response's items give way to its id
// while they come first and are as the client sent them; otherwise, or
// for another upstream, or one that keeps nothing, the whole
// conversation goes.
func TestAfterPrevious(t *testing.T) {
	user := `{"role":"user","content":"go","toolgate_previous":true,"toolgate_items":[{"role":"user","content":"go"}]}`
	call := `{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}],"toolgate_previous":true,` +
		`"toolgate_items":[{"type":"function_call","call_id":"c1","name":"f","arguments":"{}"}]}`
	renamed := strings.Replace(call, `"id":"c1"`, `"id":"c1_2"`, 1)
	reply := `{"role":"tool","tool_call_id":"c1","content":"ok","toolgate_items":[{"type":"function_call_output","call_id":"c1","output":"ok"}]}`
	sealed := `{"role":"tool","tool_call_id":"c1","content":"failed"}`
	prev := `"toolgate_previous":{"id":"resp_up","upstream":"a"}`
	for _, tc := range []struct {
		name, body, upstream string
		store                bool
		want                 int // messages left, -1: the whole conversation
	}{
		{"first and unchanged", `"messages":[{"role":"system","content":"be brief"},` + user + `,` + call + `,` + reply + `],` + prev, "a", true, 2},
		{"another upstream", `"messages":[` + user + `,` + call + `,` + reply + `],` + prev, "b", true, -1},
		{"an upstream that keeps nothing", `"messages":[` + user + `,` + call + `,` + reply + `],` + prev, "a", false, -1},
		{"changed by repair", `"messages":[` + user + `,` + renamed + `,` + reply + `],` + prev, "a", true, -1},
		{"something put among them", `"messages":[` + user + `,` + sealed + `,` + call + `,` + reply + `],` + prev, "a", true, -1},
		{"none of them", `"messages":[` + reply + `],` + prev, "a", true, -1},
	} {
		req := wiretest.Translated(t, `{"model":"m",`+tc.body+`}`, translate.ItemsMember)
		rest, id := afterPrevious(req, translate.Options{Upstream: tc.upstream, UpstreamStore: tc.store})
		if got := map[bool]int{true: len(rest), false: -1}[id == "resp_up"]; got != tc.want {
			t.Errorf("%s: %d messages left (id %q), want %d", tc.name, got, id, tc.want)
		}
	}
}

// FuzzResponsesUpstreamRequest: any chat request the decoder takes is
// translated into a Responses request that is JSON, or refused with a
// client error; nothing panics.
func FuzzResponsesUpstreamRequest(f *testing.F) {
	f.Add(`{"model":"m","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":[{"type":"text","text":"a\u00e9<"},{"type":"image_url","image_url":{"url":"https://x/y.png","detail":"low"}}]},` +
		`{"role":"assistant","content":"x","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]},{"role":"tool","tool_call_id":"c","content":[{"type":"text","text":"ok"}]}]}`)
	f.Add(`{"model":"m","messages":[{"role":"user","content":"\"q\""},{"role":"assistant","content":[{"type":"text","text":"t"}],"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":{"a":1}}}]},{"role":"tool","tool_call_id":"c","content":"plain \ud800"}],"tools":[{"type":"function","function":{"name":"f"}}]}`)
	f.Fuzz(func(t *testing.T, body string) {
		wiretest.TranslatesOrRefuses(t, body, func(req *wire.ChatRequest) ([]byte, error) {
			r, err := UpstreamRequest(req, translate.Options{Model: "m", CarriedMember: "carried", Upstream: "u"})
			return r.Body, err
		})
	})
}
