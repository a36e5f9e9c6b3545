package gemini

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

const restoredMember = "restored_signatures" // the gateway uses its own member, which only its store fills

// Every request mapping: the chat request's members in, the Gemini
// request out.
func TestRequest(t *testing.T) {
	for _, tc := range []struct {
		name, members, want string
	}{
		{"system and developer to systemInstruction",
			`"messages":[{"role":"system","content":"Be brief."},{"role":"developer","content":[{"type":"text","text":"Cite."}]},{"role":"user","content":"hi"}]`,
			`{"systemInstruction":{"parts":[{"text":"Be brief."},{"text":"Cite."}]},"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`},
		{"turns of one role merged, empty turns left out",
			`"messages":[{"role":"user","content":"a"},{"role":"user","content":"b"},{"role":"assistant","content":""},{"role":"user","content":"c"}]`,
			`{"contents":[{"role":"user","parts":[{"text":"a"},{"text":"b"},{"text":"c"}]}]}`},
		{"calls to functionCall parts, replies to functionResponse parts of one user turn, signatures restored",
			`"messages":[{"role":"user","content":"weather?"},{"role":"assistant","content":"Checking.","` + restoredMember + `":"{\"text\":\"dHh0\",\"calls\":{\"c1\":\"czE=\"}}","tool_calls":[{"id":"c1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}},{"id":"c2","type":"function","function":{"name":"get_weather","arguments":""}}]},` +
				`{"role":"tool","tool_call_id":"c1","content":"sunny"},{"role":"tool","tool_call_id":"c2","content":"{\"rain\":true}"},{"role":"user","content":"thanks"}]`,
			`{"contents":[{"role":"user","parts":[{"text":"weather?"}]},{"role":"model","parts":[{"text":"Checking.","thoughtSignature":"dHh0"},{"functionCall":{"id":"c1","name":"get_weather","args":{"city":"Paris"}},"thoughtSignature":"czE="},{"functionCall":{"id":"c2","name":"get_weather","args":{}}}]},` +
				`{"role":"user","parts":[{"functionResponse":{"id":"c1","name":"get_weather","response":{"result":"sunny"}}},{"functionResponse":{"id":"c2","name":"get_weather","response":{"rain":true}}},{"text":"thanks"}]}]}`},
		{"a kept signature wins, a first call without one gets the skip value",
			`"messages":[{"role":"user","content":"go"},{"role":"assistant","content":null,"` + restoredMember + `":"{\"calls\":{\"c1\":\"b2xk\"}}","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"},"extra_content":{"google":{"thought_signature":"a2VwdA=="}}}]},{"role":"tool","tool_call_id":"c1","content":"[1,2]"},` +
				`{"role":"assistant","content":null,"tool_calls":[{"id":"c2","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c2","content":"ok"}]`,
			`{"contents":[{"role":"user","parts":[{"text":"go"}]},{"role":"model","parts":[{"functionCall":{"id":"c1","name":"f","args":{}},"thoughtSignature":"a2VwdA=="}]},{"role":"user","parts":[{"functionResponse":{"id":"c1","name":"f","response":{"result":[1,2]}}}]},` +
				`{"role":"model","parts":[{"functionCall":{"id":"c2","name":"f","args":{}},"thoughtSignature":"skip_thought_signature_validator"}]},{"role":"user","parts":[{"functionResponse":{"id":"c2","name":"f","response":{"result":"ok"}}}]}]}`},
		{"a data: image to inlineData",
			`"messages":[{"role":"user","content":[{"type":"text","text":"what is it?"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBOR"}}]}]`,
			`{"contents":[{"role":"user","parts":[{"text":"what is it?"},{"inlineData":{"mimeType":"image/png","data":"iVBOR"}}]}]}`},
		{"tools and required",
			`"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f","description":"Does f.","parameters":{"type":"object","properties":{"a":{"type":["string","null"]}},"additionalProperties":false}}},{"type":"function","function":{"name":"g"}}],"tool_choice":"required","parallel_tool_calls":false`,
			`{"contents":[{"role":"user","parts":[{"text":"x"}]}],"tools":[{"functionDeclarations":[{"name":"f","description":"Does f.","parameters":{"type":"OBJECT","properties":{"a":{"type":"STRING","nullable":true}}}},{"name":"g"}]}],"toolConfig":{"functionCallingConfig":{"mode":"ANY"}}}`},
		{"a named function",
			`"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":{"type":"function","function":{"name":"f"}}`,
			`{"contents":[{"role":"user","parts":[{"text":"x"}]}],"tools":[{"functionDeclarations":[{"name":"f"}]}],"toolConfig":{"functionCallingConfig":{"mode":"ANY","allowedFunctionNames":["f"]}}}`},
		{"none and auto",
			`"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"none"`,
			`{"contents":[{"role":"user","parts":[{"text":"x"}]}],"tools":[{"functionDeclarations":[{"name":"f"}]}],"toolConfig":{"functionCallingConfig":{"mode":"NONE"}}}`},
		{"limits and sampling",
			`"messages":[{"role":"user","content":"x"}],"max_tokens":300,"stop":"END","temperature":0.2,"top_p":0.9,"seed":7,"presence_penalty":0.5,"frequency_penalty":0.1,"user":"u"`,
			`{"contents":[{"role":"user","parts":[{"text":"x"}]}],"generationConfig":{"maxOutputTokens":300,"stopSequences":["END"],"temperature":0.2,"topP":0.9,"seed":7,"presencePenalty":0.5,"frequencyPenalty":0.1}}`},
		{"a JSON schema answer",
			`"messages":[{"role":"user","content":"x"}],"max_completion_tokens":50,"stop":["A","B"],"response_format":{"type":"json_schema","json_schema":{"name":"n","schema":{"type":"object","properties":{"a":{"type":"integer"}}}}}`,
			`{"contents":[{"role":"user","parts":[{"text":"x"}]}],"generationConfig":{"maxOutputTokens":50,"stopSequences":["A","B"],"responseMimeType":"application/json","responseJsonSchema":{"type":"object","properties":{"a":{"type":"integer"}}}}}`},
		{"reasoning_effort to thinkingLevel",
			`"messages":[{"role":"user","content":"x"}],"reasoning_effort":"medium"`,
			`{"contents":[{"role":"user","parts":[{"text":"x"}]}],"generationConfig":{"thinkingConfig":{"thinkingLevel":"medium","includeThoughts":true}}}`},
		{"reasoning_effort none to minimal, no thoughts",
			`"messages":[{"role":"user","content":"x"}],"reasoning_effort":"none"`,
			`{"contents":[{"role":"user","parts":[{"text":"x"}]}],"generationConfig":{"thinkingConfig":{"thinkingLevel":"minimal","includeThoughts":false}}}`},
		{"a thinking budget to thinkingBudget",
			`"messages":[{"role":"user","content":"x"}],"thinking":{"type":"enabled","budget_tokens":4096}`,
			`{"contents":[{"role":"user","parts":[{"text":"x"}]}],"generationConfig":{"thinkingConfig":{"thinkingBudget":4096,"includeThoughts":true}}}`},
		{"thinking disabled to a budget of 0",
			`"messages":[{"role":"user","content":"x"}],"thinking":{"type":"disabled"}`,
			`{"contents":[{"role":"user","parts":[{"text":"x"}]}],"generationConfig":{"thinkingConfig":{"thinkingBudget":0,"includeThoughts":false}}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Request(wiretest.Request(t, tc.members), translate.Options{Model: "gemini-3-pro", CarriedMember: restoredMember})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(wiretest.JSON(t, []byte(tc.want)), wiretest.JSON(t, r.Body)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// The endpoint names the model; a stream asks for SSE. The skip value is
// counted, and so are the turns left out.
func TestRequestPath(t *testing.T) {
	r, err := Request(wiretest.Request(t, `"stream":true,"messages":[{"role":"user","content":"x"},{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c","content":"ok"},{"role":"assistant","content":""}]`), translate.Options{Model: "gemini-3/pro"})
	if err != nil || r.Path != "/models/gemini-3%2Fpro:streamGenerateContent?alt=sse" || r.Placeholders != 1 || r.DroppedEmpty != 1 {
		t.Errorf("%v %+v", err, r)
	}
	if r, _ := Request(wiretest.Request(t, `"messages":[{"role":"user","content":"x"}]`), translate.Options{Model: "m"}); r.Path != "/models/m:generateContent" {
		t.Errorf("whole: %q", r.Path)
	}
}

// What Gemini cannot do here is refused before anything is sent, naming
// the parameter.
func TestRequestRefused(t *testing.T) {
	for _, tc := range []struct{ members, param, msg string }{
		{`"messages":[{"role":"user","content":"x"}],"n":2`, "n", "one choice"},
		{`"messages":[{"role":"user","content":"x"}],"logprobs":true`, "logprobs", "cannot be sent"},
		{`"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://example.com/a.png"}}]}]`, "messages[0].content[0].image_url", "data: URL"},
		{`"messages":[{"role":"user","content":[{"type":"input_audio","input_audio":{}}]}]`, "messages[0].content[0].type", "cannot be sent"},
		{`"messages":[{"role":"user","content":"x"}],"reasoning_effort":"extreme"`, "reasoning_effort", "no gemini thinking level"},
		{`"messages":[{"role":"user","content":"x"}],"response_format":{"type":"grammar"}`, "response_format.type", "no counterpart"},
		{`"messages":[{"role":"user","content":"x"},{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"[1]"}}]}]`, "messages[1].tool_calls[0].function.arguments", "JSON object"},
		{`"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","patternProperties":{}}}}]`, "tools[0].function.parameters.patternProperties", "no counterpart"},
	} {
		_, err := Request(wiretest.Request(t, tc.members), translate.Options{Model: "m"})
		var pe *wire.ParamError
		if !errors.As(err, &pe) || pe.Param != tc.param || !strings.Contains(pe.Msg, tc.msg) {
			t.Errorf("%s: %v", tc.members, err)
		}
	}
}

// The schema mapping: what maps, and what is refused naming its keyword.
func TestSchema(t *testing.T) {
	for _, tc := range []struct{ in, want, err string }{
		{`{"type":"object","properties":{"a":{"type":"string","enum":["x","y"],"description":"d"},"b":{"type":"array","items":{"type":"integer","minimum":1}}},"required":["a"]}`,
			`{"type":"OBJECT","properties":{"a":{"type":"STRING","enum":["x","y"],"description":"d"},"b":{"type":"ARRAY","items":{"type":"INTEGER","minimum":1}}},"required":["a"]}`, ""},
		{`{"type":["integer","string"]}`, `{"anyOf":[{"type":"INTEGER"},{"type":"STRING"}]}`, ""},
		{`{"oneOf":[{"type":"string"},{"const":"x"}],"examples":["a","b"],"$schema":"x"}`, `{"anyOf":[{"type":"STRING"},{"type":"STRING","enum":["x"]}],"example":"a"}`, ""},
		{`{"$defs":{"P":{"type":"object","properties":{"n":{"type":"string"}}}},"type":"object","properties":{"p":{"$ref":"#/$defs/P"},"q":{"allOf":[{"$ref":"#/$defs/P"}]}}}`,
			`{"type":"OBJECT","properties":{"p":{"type":"OBJECT","properties":{"n":{"type":"STRING"}}},"q":{"type":"OBJECT","properties":{"n":{"type":"STRING"}}}}}`, ""},
		{`{"definitions":{"N":{"type":"object","properties":{"next":{"$ref":"#/definitions/N"}}}},"$ref":"#/definitions/N"}`, "", "p.properties.next.$ref"},
		{`{"$ref":"https://example.com/s.json"}`, "", "p.$ref"},
		{`{"type":"object","additionalProperties":{"type":"string"}}`, "", "p.additionalProperties"},
		{`{"allOf":[{"type":"string"},{"minLength":1}]}`, "", "p.allOf"},
		{`{"const":3}`, "", "p.const"},
		{`{"enum":[1,2]}`, "", "p.enum"},
		{`{"type":"tuple"}`, "", "p.type"},
		{`{"items":[{"type":"string"}]}`, "", "p.items"},
		{`{"type":"integer","exclusiveMinimum":0}`, `{"type":"INTEGER","minimum":0}`, ""}, // opencode's bash timeout
		{`{"type":"number","exclusiveMaximum":10,"maximum":5}`, `{"type":"NUMBER","maximum":5}`, ""},
	} {
		got, err := Schema(json.RawMessage(tc.in), "p")
		var pe *wire.ParamError
		switch {
		case tc.err != "" && (!errors.As(err, &pe) || pe.Param != tc.err):
			t.Errorf("%s: err %v, want one about %s", tc.in, err, tc.err)
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.in, err)
		case tc.err == "":
			if diff := cmp.Diff(wiretest.JSON(t, []byte(tc.want)), wiretest.JSON(t, got)); diff != "" {
				t.Errorf("%s (-want +got):\n%s", tc.in, diff)
			}
		}
	}
}

// A schema with several keywords Gemini has no counterpart for is
// refused naming the same one every time (the first by name), in a
// property of its own the same way.
func TestSchemaErrorOneOrder(t *testing.T) {
	for _, in := range []string{`{"if":{},"not":{},"then":{},"else":{},"unevaluatedProperties":false}`,
		`{"type":"object","properties":{"z":{"not":{}},"b":{"if":{}},"m":{"then":{}}}}`} {
		_, first := Schema(json.RawMessage(in), "p")
		for range 20 {
			if _, err := Schema(json.RawMessage(in), "p"); err == nil || err.Error() != first.Error() {
				t.Fatalf("%s: %v, then %v", in, first, err)
			}
		}
	}
}

// A schema whose definitions use each other twice over expands
// exponentially once inlined: it is refused, not expanded.
func TestSchemaExpansionBounded(t *testing.T) {
	defs := map[string]any{}
	for i := range 20 {
		next := map[string]any{"type": "string"}
		if i < 19 {
			ref := map[string]any{"$ref": "#/$defs/D" + string(rune('a'+i+1))}
			next = map[string]any{"type": "object", "properties": map[string]any{"x": ref, "y": ref}}
		}
		defs["D"+string(rune('a'+i))] = next
	}
	b, _ := json.Marshal(map[string]any{"$defs": defs, "$ref": "#/$defs/Da"})
	_, err := Schema(b, "p")
	var pe *wire.ParamError
	if !errors.As(err, &pe) || !strings.Contains(pe.Msg, "more than") {
		t.Fatalf("err %v", err)
	}
}

// streamOf translates a Gemini stream's data payloads.
func streamOf(t *testing.T, events ...string) ([]string, *Stream) {
	t.Helper()
	s := NewStream()
	var out []string
	for _, e := range events {
		cs, done, err := s.Event([]byte(e))
		if err != nil || done {
			t.Fatalf("%s: %v (done %v)", e, err, done)
		}
		for _, c := range cs {
			out = append(out, string(c))
		}
	}
	return out, s
}

// A stream: thoughts to reasoning, text to content, a call to one
// complete tool call with a stable id and its signature where Gemini's
// OpenAI-compatible endpoint puts it, the finish and the usage last; the
// signatures are what Carried returns.
func TestStream(t *testing.T) {
	ev := func(parts, finish, usage string) string {
		c := `{"content":{"role":"model","parts":[` + parts + `]}` + finish + `}`
		return `{"candidates":[` + c + `]` + usage + `,"modelVersion":"gemini-3-pro","responseId":"r1"}`
	}
	chunks, s := streamOf(t,
		ev(`{"text":"Hm.","thought":true}`, "", ""),
		ev(`{"text":"Checking."}`, "", ""),
		ev(`{"functionCall":{"name":"get_weather","args":{"city":"Paris"}},"thoughtSignature":"c2ln"}`, "", ""),
		ev(`{"functionCall":{"id":"g2","name":"get_weather","args":{"city":"Rome"}}}`, "", ""),
		ev(`{"text":""}`, `,"finishReason":"STOP"`, `,"usageMetadata":{"promptTokenCount":10,"candidatesTokenCount":5,"thoughtsTokenCount":3,"cachedContentTokenCount":2,"totalTokenCount":18}`))
	id := callID("r1", 0, "get_weather")
	want := []string{
		`{"role":"assistant","content":""}`, `{"reasoning_content":"Hm."}`, `{"content":"Checking."}`,
		`{"tool_calls":[{"index":0,"id":"` + id + `","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"},"extra_content":{"google":{"thought_signature":"c2ln"}}}]}`,
		`{"tool_calls":[{"index":1,"id":"g2","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Rome\"}"}}]}`,
		`{}`,
	}
	if len(chunks) != len(want)+1 {
		t.Fatalf("%d chunks: %v", len(chunks), chunks)
	}
	for k, w := range want {
		if !strings.Contains(chunks[k], `"delta":`+w) {
			t.Errorf("chunk %d: %s, want delta %s", k, chunks[k], w)
		}
	}
	if !strings.Contains(chunks[5], `"finish_reason":"tool_calls"`) || !strings.Contains(chunks[6], `"choices":[],"usage":{`) ||
		!strings.Contains(chunks[6], `"completion_tokens":8`) || !strings.Contains(chunks[6], `"reasoning_tokens":3`) || !strings.Contains(chunks[6], `"cached_tokens":2`) {
		t.Errorf("finish and usage: %s %s", chunks[5], chunks[6])
	}
	if !s.Ended() || string(s.Carried()) != `{"calls":{"`+id+`":"c2ln"}}` || len(s.Kinds()) != 1 || s.Kinds()[0] != "missing_id" {
		t.Errorf("ended %v, carried %s, kinds %v", s.Ended(), s.Carried(), s.Kinds())
	}
	// The same answer gets the same ids; another answer other ones.
	if callID("r1", 0, "get_weather") != id || callID("r2", 0, "get_weather") == id {
		t.Error("ids are not stable per answer")
	}
}

// Every finish reason, mapped; the failing ones end the stream with an
// error; a stream with no finishReason has not ended; an error object
// and a blocked prompt.
func TestStreamEnds(t *testing.T) {
	for reason, want := range map[string]string{
		"STOP": `"finish_reason":"stop"`, "MAX_TOKENS": `"finish_reason":"length"`, "SAFETY": `"finish_reason":"content_filter"`,
		"RECITATION": `"finish_reason":"content_filter"`, "PROHIBITED_CONTENT": `"finish_reason":"content_filter"`, "OTHER": `"finish_reason":"stop"`,
		"MALFORMED_FUNCTION_CALL": `"error":{`, "UNEXPECTED_TOOL_CALL": `"error":{`,
	} {
		chunks, s := streamOf(t, `{"candidates":[{"content":{"parts":[{"text":"x"}]},"finishReason":"`+reason+`"}]}`)
		if last := chunks[len(chunks)-1]; !strings.Contains(last, want) || !s.Ended() {
			t.Errorf("%s: %s", reason, last)
		}
	}
	if _, s := streamOf(t, `{"candidates":[{"content":{"parts":[{"text":"x"}]}}]}`); s.Ended() {
		t.Error("a stream without a finishReason ended")
	}
	if chunks, _ := streamOf(t, `{"error":{"code":503,"message":"overloaded","status":"UNAVAILABLE"}}`); !strings.Contains(chunks[0], `"error":{"message":"overloaded"`) {
		t.Errorf("error object: %v", chunks)
	}
	if chunks, s := streamOf(t, `{"promptFeedback":{"blockReason":"SAFETY"}}`); !strings.Contains(chunks[1], `"content_filter"`) || !s.Ended() {
		t.Errorf("blocked prompt: %v", chunks)
	}
	// Every chunk goes through the normalizer as a conforming stream.
	chunks, _ := streamOf(t, `{"candidates":[{"content":{"parts":[{"functionCall":{"name":"f","args":{}}}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":1}}`)
	n := wire.NewNormalizer(wire.Options{Upstream: "gemini", SingleChoice: true}) // strict: no quirk needed
	for _, c := range chunks {
		if _, _, err := n.Chunk([]byte(c)); err != nil {
			t.Fatalf("%s: %v", c, err)
		}
	}
	if fin := n.Finish(true); !fin.Done {
		t.Error("the normalizer did not finish")
	}
}

// A whole answer: the same mappings, in one chat.completion.
func TestWhole(t *testing.T) {
	a, err := Whole([]byte(`{"candidates":[{"content":{"role":"model","parts":[{"text":"Hm.","thought":true},{"text":"Checking."},`+
		`{"functionCall":{"name":"get_weather","args":{"city":"Paris"}},"thoughtSignature":"c2ln"}]},"finishReason":"STOP"}],`+
		`"usageMetadata":{"promptTokenCount":10,"candidatesTokenCount":5,"thoughtsTokenCount":3,"totalTokenCount":18},"modelVersion":"gemini-3-pro","responseId":"r1"}`), "gemini")
	if err != nil {
		t.Fatal(err)
	}
	got := wiretest.JSON(t, a.Chat).(map[string]any)
	delete(got, "created")
	id := callID("r1", 0, "get_weather")
	want := wiretest.JSON(t, []byte(`{"id":"chatcmpl-r1","object":"chat.completion","model":"gemini-3-pro","choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":"Checking.","reasoning_content":"Hm.",`+
		`"tool_calls":[{"id":"`+id+`","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"},"extra_content":{"google":{"thought_signature":"c2ln"}}}]}}],`+
		`"usage":{"prompt_tokens":10,"completion_tokens":8,"total_tokens":18,"prompt_tokens_details":{"cached_tokens":0},"completion_tokens_details":{"reasoning_tokens":3}}}`))
	if diff := cmp.Diff(want, any(got)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if string(a.Carried) != `{"calls":{"`+id+`":"c2ln"}}` {
		t.Errorf("carried %s", a.Carried)
	}
	for body, msg := range map[string]string{
		`{"error":{"code":400,"message":"boom","status":"INVALID_ARGUMENT"}}`:                "boom",
		`{"candidates":[{"content":{"parts":[]},"finishReason":"MALFORMED_FUNCTION_CALL"}]}`: "MALFORMED_FUNCTION_CALL",
		`{"candidates":[]}`: "no candidate",
		`[]`:                "not a gemini",
	} {
		if _, err := Whole([]byte(body), "gemini"); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%s: %v", body, err)
		}
	}
	if a, err := Whole([]byte(`{"promptFeedback":{"blockReason":"SAFETY"}}`), "gemini"); err != nil || !strings.Contains(string(a.Chat), `"finish_reason":"content_filter"`) {
		t.Errorf("blocked prompt: %v %s", err, a.Chat)
	}
}

// FuzzGeminiEvents: any sequence of payloads is either refused with an
// error or becomes chunks that are JSON objects, which the normalizer
// takes or refuses with its own errors; nothing panics, and what Carried
// returns is JSON.
func FuzzGeminiEvents(f *testing.F) {
	f.Add(`{"candidates":[{"content":{"parts":[{"text":"a","thought":true},{"functionCall":{"name":"f","args":{"x":[1]}},"thoughtSignature":"s"}]}}]}`,
		`{"candidates":[{"content":{"parts":[{"text":""}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":1}}`, `{}`)
	f.Add(`{"error":null}`, `{"candidates":[{"content":null}]}`, `{"promptFeedback":{"blockReason":"X"}}`)
	f.Add(`{"candidates":[{"content":{"parts":[{"functionCall":{"id":"","name":"","args":null}}]},"finishReason":"MALFORMED_FUNCTION_CALL"}]}`, `[]`, `{"candidates":[{"finishReason":7}]}`)
	f.Fuzz(func(t *testing.T, a, b, c string) {
		wiretest.Translate(t, NewStream(), "gemini", a, b, c)
	})
}

// FuzzGeminiSchema: any JSON value as a tool's parameters is mapped or
// refused with a ParamError; nothing panics, and what it maps is JSON.
func FuzzGeminiSchema(f *testing.F) {
	f.Add(`{"type":"object","properties":{"a":{"$ref":"#/$defs/A"}},"$defs":{"A":{"anyOf":[{"type":["string","null"]},{"const":"x"}]}}}`)
	f.Add(`{"allOf":[{"items":{"oneOf":[{}]}}],"examples":[]}`)
	f.Add(`[]`)
	f.Fuzz(func(t *testing.T, s string) {
		out, err := Schema(json.RawMessage(s), "p")
		var pe *wire.ParamError
		if err != nil && !errors.As(err, &pe) {
			t.Fatalf("error of type %T", err)
		}
		if err == nil && !json.Valid(out) {
			t.Fatalf("%q mapped to %q", s, out)
		}
	})
}

// FuzzGeminiRequest: any chat request the decoder takes is translated
// into JSON or refused with a client error; nothing panics.
func FuzzGeminiRequest(f *testing.F) {
	f.Add(`{"model":"m","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":[{"type":"text","text":"a\u00e9<"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBOR"}}]},` +
		`{"role":"assistant","content":"x","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]},{"role":"tool","tool_call_id":"c","content":"{\"ok\":true}"}]}`)
	f.Add(`{"model":"m","messages":[{"role":"user","content":"\"q\""},{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":""}}]},{"role":"tool","tool_call_id":"c","content":"plain \ud800"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],"tool_choice":"required"}`)
	f.Fuzz(func(t *testing.T, body string) {
		wiretest.TranslatesOrRefuses(t, body, func(req *wire.ChatRequest) ([]byte, error) {
			r, err := Request(req, translate.Options{Model: "m", CarriedMember: "carried"})
			return r.Body, err
		})
	})
}
