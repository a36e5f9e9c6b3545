package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
	"unsafe"
)

// Decoding then encoding keeps every member the gateway does not know,
// at the top level and inside messages, byte-for-byte (faithful proxy).
func TestEncodeKeepsUnknownFields(t *testing.T) {
	in := `{"model":"gpt-x","messages":[{"role":"user","content":[{"type":"text","text":"hi","cache_control":{"type":"ephemeral"}}]},` +
		`{"role":"assistant","content":null,"reasoning_content":"hmm  spaced","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"},"extra_content":{"google":{"thought_signature":"sig"}}}]}],` +
		`"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"object"}}},"logprobs":true,"top_logprobs":2,"vendor_x":[1, 2.50, "é"]}`
	req, err := DecodeRequest([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	out, err := req.Encode("gpt-x")
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != in {
		t.Errorf("re-encoded request differs\n got: %s\nwant: %s", out, in)
	}
	if got, _ := req.Get("vendor_x"); string(got) != `[1, 2.50, "é"]` {
		t.Errorf("Get(vendor_x) = %s", got)
	}
}

// A call's extra_content (where a thought signature travels) is read by
// the decoder, under an escaped key too, its signature found there, and
// the member kept when a call is written from its typed fields.
func TestToolCallExtra(t *testing.T) {
	in := `{"model":"m","messages":[{"role":"assistant","content":null,"tool_calls":[` +
		`{"id":"a","type":"function","function":{"name":"f","arguments":"{}"},"extra_content":{"google":{"thought_signature":"c2ln"}}},` +
		`{"id":"b","type":"function","function":{"name":"f","arguments":"{}"},"extra\u005fcontent":{"google":{"thought_signature":"ZXNj"}}},` +
		`{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]}]}`
	req, err := DecodeRequest([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	calls := req.Messages[0].ToolCalls
	for i, want := range []string{`{"google":{"thought_signature":"c2ln"}}`, `{"google":{"thought_signature":"ZXNj"}}`, ``} {
		if string(calls[i].Extra) != want || (want == "") != (calls[i].Extra == nil) {
			t.Errorf("call %d: Extra %q, want %q", i, calls[i].Extra, want)
		}
	}
	for extra, want := range map[string]string{string(calls[0].Extra): "c2ln", string(calls[1].Extra): "ZXNj", "": "",
		`{"google":{}}`: "", `{"google":{"thought_signature":7}}`: "", `{"other":{"thought_signature":"x"}}`: "",
		`{"google":{"thought\u005fsignature":"ZQ=="}}`: "ZQ==", `{"google":null}`: "", `null`: "", `{"google":{"thought_signature":"YQ=="}`: ""} {
		if got := ThoughtSignature(json.RawMessage(extra)); got != want {
			t.Errorf("ThoughtSignature(%s) = %q, want %q", extra, got, want)
		}
	}
	built := calls[0]
	built.Raw = nil
	out, err := json.Marshal(built)
	if err != nil || !strings.Contains(string(out), `"extra_content":{"google":{"thought_signature":"c2ln"}}`) {
		t.Errorf("a call written from its fields lost extra_content: %s (%v)", out, err)
	}
	if out, _ := json.Marshal(ToolCall{ID: "x", Type: "function"}); strings.Contains(string(out), "extra_content") {
		t.Errorf("a call without extra_content was written with one: %s", out)
	}
}

// The gateway's own members are a client's to send nowhere: stripped from
// the messages and the top level of what a client sends, kept in what the
// gateway made itself (DecodeTranslated).
func TestOwnMembers(t *testing.T) {
	in := `{"model":"m","toolgate_request":{"tools":[{"type":"web_search_20250305","name":"web_search"}]},` +
		`"messages":[{"role":"user","content":"hi","toolgate_blocks":[{"type":"text","text":"x"}]}],"stream":false}`
	req, err := DecodeRequest([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	out, _ := req.Encode("m")
	if want := `{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":false}`; string(out) != want {
		t.Errorf("a client's own members: %s", out)
	}
	escaped, err := DecodeRequest([]byte(`{"model":"m","\u0074oolgate_request":{},"messages":[{"role":"user","content":"hi","\u0074oolgate_blocks":[]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if out, _ := escaped.Encode("m"); string(out) != `{"model":"m","messages":[{"role":"user","content":"hi"}]}` {
		t.Errorf("a client's own members, their names escaped: %s", out)
	}
	if _, ok := req.Get("toolgate_request"); ok {
		t.Error("Get finds a client's own member")
	}
	req, err = DecodeTranslated([]byte(in), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if out, _ := req.Encode("m"); string(out) != in {
		t.Errorf("the gateway's own members: %s", out)
	}
	// Dropped from a derived request, for a chat completions upstream;
	// the request it was derived from keeps them.
	d := req.Derive()
	d.DropOwn()
	if out, _ := d.Encode("m"); string(out) != `{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":false}` {
		t.Errorf("dropped: %s", out)
	}
	if out, _ := req.Encode("m"); string(out) != in {
		t.Errorf("the request derived from: %s", out)
	}
}

// A translated message's KeptContent names its content: the string it
// indexes is the message's Content, apart from its Raw, and goes in as
// its content member when the own members are dropped (for a chat
// upstream). An index that names no string is an error; a client's
// KeptContent is one of its own members, stripped.
func TestKeptContent(t *testing.T) {
	in := `{"model":"m","messages":[{"role":"user","toolgate_content":1},{"role":"tool","tool_call_id":"c","content":"x"}]}`
	strs := []json.RawMessage{json.RawMessage(`"a"`), json.RawMessage(`"the client's text"`)}
	req, err := DecodeTranslated([]byte(in), nil, strs)
	if err != nil {
		t.Fatal(err)
	}
	m := req.Messages[0]
	if string(m.Content) != `"the client's text"` || !m.ContentApart() || req.Messages[1].ContentApart() {
		t.Fatalf("content %s, apart %v", m.Content, m.ContentApart())
	}
	d := req.Derive()
	d.DropOwn()
	if out, _ := d.Encode("m"); string(out) != `{"model":"m","messages":[{"role":"user","content":"the client's text"},{"role":"tool","tool_call_id":"c","content":"x"}]}` {
		t.Errorf("dropped: %s", out)
	}
	for _, idx := range []string{"2", "-1", `"1"`, "0.5"} {
		bad := strings.Replace(in, `"toolgate_content":1`, `"toolgate_content":`+idx, 1)
		if _, err := DecodeTranslated([]byte(bad), nil, strs); err == nil {
			t.Errorf("index %s decoded", idx)
		}
	}
	if _, err := DecodeTranslated([]byte(in), nil, []json.RawMessage{json.RawMessage(`"a"`), json.RawMessage(`["a"]`)}); err == nil {
		t.Error("an index naming no string decoded")
	}
	client, err := DecodeRequest([]byte(`{"model":"m","messages":[{"role":"user","content":"hi","toolgate_content":0}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if out, _ := client.Encode("m"); string(out) != `{"model":"m","messages":[{"role":"user","content":"hi"}]}` || client.Messages[0].ContentApart() {
		t.Errorf("a client's: %s", out)
	}
}

// A decoded message takes 112 bytes on 64-bit platforms (what a
// transcript of short messages costs per message, docs/performance.md):
// what the gateway reads of it, nothing it does not.
func TestMessageSize(t *testing.T) {
	if n := unsafe.Sizeof(Message{}); unsafe.Sizeof(uintptr(0)) == 8 && n > 112 {
		t.Errorf("a Message takes %d bytes", n)
	}
}

// Encode replaces only the model's value; every other member keeps its
// bytes and position.
func TestEncodeReplacesModel(t *testing.T) {
	in := `{"temperature":0.20,"model":"alias","messages":[{"role":"user","content":"x"}],"stream":true}`
	req, err := DecodeRequest([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if req.Model != "alias" || !req.Stream {
		t.Fatalf("typed view: model %q stream %v", req.Model, req.Stream)
	}
	out, _ := req.Encode("real-model")
	want := `{"temperature":0.20,"model":"real-model","messages":[{"role":"user","content":"x"}],"stream":true}`
	if string(out) != want {
		t.Errorf("got  %s\nwant %s", out, want)
	}
}

// SetMessages writes original messages as their bytes and new ones from
// their typed fields.
func TestSetMessages(t *testing.T) {
	in := `{"model":"m","messages":[{"role":"user","content":"a",  "x":1}]}`
	req, err := DecodeRequest([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	msgs := append(req.Messages, Message{Role: "tool", ToolCallID: "c1", Content: json.RawMessage(`"done"`)})
	req.SetMessages(msgs)
	out, _ := req.Encode("m")
	want := `{"model":"m","messages":[{"role":"user","content":"a",  "x":1},{"role":"tool","content":"done","tool_call_id":"c1"}]}`
	if string(out) != want {
		t.Errorf("got  %s\nwant %s", out, want)
	}
	req.Set("stream_options", json.RawMessage(`{"include_usage":true}`))
	out, _ = req.Encode("m")
	if !bytes.HasSuffix(out, []byte(`,"stream_options":{"include_usage":true}}`)) {
		t.Errorf("Set did not append: %s", out)
	}
}

// Bad input is refused with an error that names the parameter or the byte
// offset (docs/spec.md §7).
func TestDecodeErrors(t *testing.T) {
	for _, tc := range []struct {
		name, in, param, msg string
	}{
		{"syntax", `{"model":"m",,}`, "", "invalid JSON at byte offset 13"},
		{"truncated", `{"model":"m","messages":[`, "", "ends early"},
		{"not an object", `[1,2]`, "", "must be a JSON object"},
		{"trailing data", `{"model":"m","messages":[{"role":"user"}]} x`, "", "unexpected data"},
		{"no model", `{"messages":[{"role":"user","content":"x"}]}`, "model", "provide a model"},
		{"empty model", `{"model":"","messages":[{"role":"user","content":"x"}]}`, "model", "provide a model"},
		{"model not string", `{"model":3,"messages":[{"role":"user"}]}`, "model", "must be a string"},
		{"no messages", `{"model":"m"}`, "messages", "provide a messages"},
		{"empty messages", `{"model":"m","messages":[]}`, "messages", "at least one"},
		{"messages not array", `{"model":"m","messages":{}}`, "messages", "array"},
		{"no role", `{"model":"m","messages":[{"content":"x"}]}`, "messages[0].role", "required"},
		{"bad tool call id", `{"model":"m","messages":[{"role":"user"},{"role":"assistant","tool_calls":[{"id":7}]}]}`, "messages[1].tool_calls[0].id", "string"},
		{"stream not bool", `{"model":"m","messages":[{"role":"user"}],"stream":"yes"}`, "stream", "boolean"},
		{"tools not array", `{"model":"m","messages":[{"role":"user"}],"tools":{"a":1}}`, "tools", "an array of tool objects"},
		{"tool not object", `{"model":"m","messages":[{"role":"user"}],"tools":[{"type":"function"},3]}`, "tools[1]", "a tool object"},
		{"tool name not string", `{"model":"m","messages":[{"role":"user"}],"tools":[{"function":{"name":1}}]}`, "tools[0].function.name", "a string"},
		// A repeated member, wherever the gateway reads one, is refused
		// with its path (an upstream may keep the other value).
		{"duplicate model", `{"model":"gpt-4o","model":"sim-x","messages":[{"role":"user"}]}`, "model", "more than once"},
		{"duplicate message member", `{"model":"m","messages":[{"role":"user"},{"role":"user","content":"a","content":"b"}]}`, "messages[1].content", "more than once"},
		{"duplicate tool call id", `{"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"a","id":"b"}]}]}`, "messages[0].tool_calls[0].id", "more than once"},
		{"duplicate function name", `{"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"a","function":{"name":"f","name":"g"}}]}]}`, "messages[0].tool_calls[0].function.name", "more than once"},
		{"duplicate tool member", `{"model":"m","messages":[{"role":"user"}],"tools":[{"type":"function","type":"x"}]}`, "tools[0].type", "more than once"},
		{"duplicate tool function member", `{"model":"m","messages":[{"role":"user"}],"tools":[{"function":{"name":"a","parameters":{},"name":"b"}}]}`, "tools[0].function.name", "more than once"},
		{"duplicate in a large object", `{"model":"m","messages":[{"role":"user"}],"a1":1,"a2":1,"a3":1,"a4":1,"a5":1,"a6":1,"a7":1,"a8":1,"a9":1,"a3":2}`, "a3", "more than once"},
		// A member the gateway reads or writes spelled in another case (or
		// a Unicode fold of it) is refused even alone: an upstream that
		// matches names without regard to case would read it beside the
		// one the gateway checked or wrote.
		{"duplicate by case, alone", `{"model":"m","messages":[{"role":"user"}],"MAX_TOKENS":100000}`, "MAX_TOKENS", `"max_tokens" in another case`},
		{"duplicate by case, mixed", `{"model":"m","messages":[{"role":"user"}],"Max_completion_tokens":100000}`, "Max_completion_tokens", "in another case"},
		{"duplicate by Unicode fold", `{"model":"m","messages":[{"role":"user"}],"max_output_token\u017f":100000}`, "max_output_tokenſ", `"max_output_tokens" in another case`},
		{"duplicate by fold, Kelvin", `{"model":"m","messages":[{"role":"user"}],"top_\u212a":5}`, "top_\u212a", "in another case"},
		{"duplicate by case in a message", `{"model":"m","messages":[{"role":"user","Content":"x"}]}`, "messages[0].Content", `"content" in another case`},
		{"duplicate by case beside", `{"model":"m","messages":[{"role":"user","content":"a","CONTENT":"b"}]}`, "messages[0].CONTENT", "in another case"},
		{"duplicate by case in a call", `{"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"a","Function":{"name":"f"}}]}]}`, "messages[0].tool_calls[0].Function", "in another case"},
		{"duplicate by case in a tool", `{"model":"m","messages":[{"role":"user"}],"tools":[{"type":"function","function":{"name":"f","Parameters":{}}}]}`, "tools[0].function.Parameters", "in another case"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeRequest([]byte(tc.in))
			de, ok := errors.AsType[*DecodeError](err)
			if !ok {
				t.Fatalf("err = %v, want *DecodeError", err)
			}
			if de.Param != tc.param {
				t.Errorf("param = %q, want %q", de.Param, tc.param)
			}
			if !strings.Contains(de.Error(), tc.msg) {
				t.Errorf("message %q does not contain %q", de.Error(), tc.msg)
			}
			if dup := strings.Contains(tc.name, "duplicate"); dup != (de.Kind == KindDuplicate) {
				t.Errorf("kind = %v", de.Kind)
			}
		})
	}
}

// stream: null is treated as absent, as OpenAI does.
func TestStreamNull(t *testing.T) {
	req, err := DecodeRequest([]byte(`{"model":"m","messages":[{"role":"user"}],"stream":null}`))
	if err != nil || req.Stream {
		t.Fatalf("req.Stream=%v err=%v", req != nil && req.Stream, err)
	}
}

func FuzzDecodeRequest(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","messages":[{"role":"user","content":"x"}]}`,
		`{"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":{"x":1}}}]}],"x":{"y":[1e999]}}`,
		`{"model":"m","model":"n","messages":[{"role":"user"}],"stream":true}`,
		`{"model":"m",,}`, `[]`, ``, `{"model":"\u00e9\ud83d\ude00","messages":[{"role":"tool","tool_call_id":"c"}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		req, err := DecodeRequest(b)
		// The scanner accepts exactly what encoding/json accepts.
		var std struct {
			Model    any               `json:"model"`
			Messages []json.RawMessage `json:"messages"`
		}
		stdErr := json.Unmarshal(b, &std)
		_, isSyntax := stdErr.(*json.SyntaxError)
		if err != nil {
			de, ok := errors.AsType[*DecodeError](err)
			if !ok {
				t.Fatalf("error is not a *DecodeError: %v", err)
			}
			if json.Valid(b) && de.Offset >= 0 && bytes.HasPrefix(bytes.TrimLeft(b, " \t\r\n"), []byte("{")) {
				t.Fatalf("syntax error %v on valid JSON", err)
			}
			return
		}
		if !json.Valid(b) || isSyntax {
			t.Fatalf("accepted invalid JSON: %q", b)
		}
		if m, ok := std.Model.(string); !ok || m != req.Model || len(std.Messages) != len(req.Messages) {
			t.Fatalf("typed view differs from encoding/json: %q/%d vs %v/%d", req.Model, len(req.Messages), std.Model, len(std.Messages))
		}
		out, err := req.Encode(req.Model)
		if err != nil {
			t.Fatal(err)
		}
		if !json.Valid(out) {
			t.Fatalf("encoded request is not valid JSON: %s", out)
		}
		again, err := DecodeRequest(out)
		if err != nil {
			t.Fatalf("re-decoding the encoded request failed: %v\n%s", err, out)
		}
		for _, m := range req.obj.members {
			v, _ := again.Get(m.key)
			want, _ := req.Get(m.key)
			if m.key != "model" && !bytes.Equal(v, want) {
				t.Fatalf("member %q changed: %s -> %s", m.key, want, v)
			}
		}
		if len(again.Messages) != len(req.Messages) {
			t.Fatalf("message count changed")
		}
		for i := range req.Messages {
			if !bytes.Equal(again.Messages[i].Raw, req.Messages[i].Raw) {
				t.Fatalf("message %d changed", i)
			}
		}
	})
}

// Valid agrees with encoding/json on what is one JSON text.
func TestValid(t *testing.T) {
	for _, s := range []string{`{}`, ` 1e999 `, `"a\u00e9"`, `[1,{"a":null}]`, `{"a":1}x`, `{`, ``, `01`, `"\x"`, `[1,]`, "\"\x01\""} {
		if got, want := Valid([]byte(s)), json.Valid([]byte(s)); got != want {
			t.Errorf("Valid(%q) = %v, encoding/json says %v", s, got, want)
		}
	}
}

// Escaped strings decode exactly as encoding/json decodes them.
func TestStringValue(t *testing.T) {
	for _, s := range []string{`"plain"`, `"a\"b\\c\/d\b\f\n\r\t"`, `"\u00e9\u4e2d"`, `"\ud83d\ude00"`, `"\ud83d"`, `"\ud83dx"`,
		`"\ud83d\u0041"`, `"\ude00"`, "\"\xff\\n\"", "\"\xe9t\xc3\xa9\""} {
		var want string
		if err := json.Unmarshal([]byte(s), &want); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		end, esc, err := skipString([]byte(s), 0)
		if err != nil || end != len(s) {
			t.Fatalf("%s: %v", s, err)
		}
		if got := stringValue([]byte(s), 0, end, esc); got != want {
			t.Errorf("%s: got %q, want %q", s, got, want)
		}
	}
}

func FuzzStringValue(f *testing.F) {
	for _, s := range []string{`"a\"b"`, `"\ud83d\ude00"`, `"\ud83d\u0041"`, "\"\xff\"",
		// Runs of eight and more plain bytes between escapes, non-ASCII and invalid bytes.
		`"{\"city\": \"Paris, France\", \"unit\": \"celsius\"}"`, "\"abcdefghijkl\u00e9mnopqrstuvw\\n\xff123456789\\\\01234567\"",
		// Short strings, which the template reads in one word: plain, not
		// ASCII, invalid UTF-8, escaped.
		`"ci"},"index":0}`, "\"\u00e9t\u00e9\"},\"index\"", "\"a\xffb\"}]}\"", `"a\nb"},"ind"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var want string
		stdErr := json.Unmarshal(b, &want)
		if len(b) == 0 || b[0] != '"' {
			return
		}
		if validUTF8(b) != utf8.Valid(b) {
			t.Fatalf("%q: validUTF8 %v, utf8.Valid %v", b, validUTF8(b), utf8.Valid(b))
		}
		end, esc, err := skipString(b, 0)
		if (err == nil && skipSpace(b, end) == len(b)) != (stdErr == nil) {
			t.Fatalf("%q: scanner err %v end %d, encoding/json err %v", b, err, end, stdErr)
		}
		// The template's one-word read of a short string agrees with
		// skipString wherever it answers.
		if send, ascii, ok := shortString(b, 1); ok {
			if err != nil || send != end || esc {
				t.Fatalf("%q: shortString end %d, skipString end %d escaped %v err %v", b, send, end, esc, err)
			}
			if text := b[1 : end-1]; ascii != (utf8.RuneCount(text) == len(text) && utf8.Valid(text)) {
				t.Fatalf("%q: shortString says ASCII %v", b, ascii)
			}
		}
		if stdErr == nil {
			if got := stringValue(b, 0, end, esc); got != want {
				t.Fatalf("%q: got %q, want %q", b, got, want)
			}
			if got := stringView(b, 0, end, esc); got != want {
				t.Fatalf("%q: view %q, want %q", b, got, want)
			}
		}
	})
}
