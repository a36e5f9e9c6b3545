package gateway_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/budget"
	"github.com/toolgate/toolgate/internal/repair"
	"github.com/toolgate/toolgate/internal/translate"
	"github.com/toolgate/toolgate/internal/translate/anthropic"
	"github.com/toolgate/toolgate/internal/translate/bedrock"
	"github.com/toolgate/toolgate/internal/translate/gemini"
	"github.com/toolgate/toolgate/internal/translate/responses"
	"github.com/toolgate/toolgate/internal/wire"
)

// carried is the member a translation carries reasoning back in.
const carried = wire.OwnPrefix + "carried"

// upstreamTranslators are the protocols whose translator reads the
// decoded messages (the gateway's own map, plan.go's translators): those
// a client API's translation puts strings apart for.
var upstreamTranslators = map[translate.Protocol]translate.Outbound{
	translate.Anthropic: anthropic.Translator, translate.Gemini: gemini.Translator,
	translate.Bedrock: bedrock.Translator, translate.Responses: responses.Translator,
}

// apartOutcome is what a route makes of a client's request: the repair
// report, the input budget's count, and the upstream request's path or
// the error that refused it.
type apartOutcome struct {
	Err          string
	Chars        int
	Report       repair.Report
	Path         string
	DroppedEmpty int
}

// translateClient decodes and translates a client's body of api
// ("chat", "messages" or "responses") as the gateway does for an
// upstream of protocol p, the long strings put apart or copied: decoded,
// repaired, counted, then translated (for chat completions, encoded, the
// model as named). It returns what the route makes of it and the
// upstream body.
func translateClient(api string, body []byte, p translate.Protocol, apart bool) (apartOutcome, []byte) {
	req, err := decodeClient(api, body, p, apart)
	if err != nil {
		return apartOutcome{Err: err.Error()}, nil
	}
	var out apartOutcome
	msgs, fixes := repair.FixToolCalls(req.Messages, repair.ToolCallSteps{StringifyArguments: true, SynthesizeIDs: true, DedupeCallIDs: true})
	if msgs, out.Report = repair.Repair(msgs); fixes.Any() || !out.Report.Empty() {
		req.SetMessages(msgs)
	}
	out.Chars = budget.InputChars(req.Messages, req.Kept)
	translator := upstreamTranslators[p]
	if translator == nil {
		req.DropOwn()
		up, err := req.Encode(req.Model) // a route that sends the model as named
		if err != nil {
			out.Err = err.Error()
		}
		return out, up
	}
	up, err := translator.Request(req, translate.Options{Model: "m", DefaultMaxTokens: 64, CarriedMember: carried, Upstream: "u"})
	if err != nil {
		out.Err = err.Error()
		return out, nil
	}
	out.Path, out.DroppedEmpty = up.Path, up.DroppedEmpty
	return out, up.Body
}

// decodeClient decodes a client's body of api into the chat request the
// path works on, translated for an upstream of protocol p.
func decodeClient(api string, body []byte, p translate.Protocol, apart bool) (*wire.ChatRequest, error) {
	var chat []byte
	var kept, named []json.RawMessage
	switch api {
	case "chat":
		return wire.DecodeRequest(body)
	case "messages":
		r, err := anthropic.Decode(body, false)
		if err != nil {
			return nil, err
		}
		t, err := r.Chat(anthropic.ChatOptions{Protocol: p, ReasoningField: "reasoning_content", CarriedMember: carried, Apart: apart})
		if err != nil {
			return nil, err
		}
		chat, kept, named = t.Chat, t.Kept, t.Strings
	default:
		r, err := responses.Decode(body)
		if err != nil {
			return nil, err
		}
		t, err := r.Translate(r.Input, responses.ChatOptions{ReasoningField: "reasoning_content", CarriedMember: carried,
			Keep: p == translate.Responses, DropHosted: true, Apart: apart})
		if err != nil {
			return nil, err
		}
		chat, named = t.Chat, t.Strings
		if p == translate.Responses {
			kept = r.Input
		}
	}
	req, err := wire.DecodeTranslated(chat, kept, named)
	if err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	return req, nil
}

// apartSame fails unless a client's body makes the same upstream request
// (and repair report, and input count, or the same error) on each
// protocol whether its long strings are put apart or copied.
func apartSame(t *testing.T, api string, body []byte) {
	t.Helper()
	for p := range upstreamTranslators {
		copied, copiedBody := translateClient(api, body, p, false)
		apart, apartBody := translateClient(api, body, p, true)
		if !reflect.DeepEqual(copied, apart) || !bytes.Equal(copiedBody, apartBody) {
			t.Fatalf("%s → %v: %q\ncopied: %+v %s\napart:  %+v %s", api, p, body, copied, copiedBody, apart, apartBody)
		}
	}
}

// apartBodies are client requests whose strings go apart or must not:
// long texts (as a user's content, a tool's result, the instructions),
// escaped, followed by whitespace, not valid UTF-8, an error's result,
// beside blocks and items each protocol keeps or refuses.
func apartBodies() map[string][]string {
	long := strings.Repeat("the quick brown fox ", 4)
	str := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	escaped := `"` + strings.Repeat(`line \u2028 \"quoted\" \ud800 tab\t`, 3) + `"`
	invalid := "\"" + strings.Repeat("bad \xff byte ", 8) + "\""
	messages := []string{
		fmt.Sprintf(`{"model":"m","max_tokens":10,"system":%s,"messages":[{"role":"user","content":%s}]}`, str(long), str(long)),
		fmt.Sprintf(`{"model":"m","max_tokens":10,"messages":[{"role":"user","content":%s},{"role":"assistant","content":[{"type":"text","text":%s},{"type":"tool_use","id":"t1","name":"f","input":{"a":1}}]},`+
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":%s},{"type":"text","text":%s}]}]}`, escaped, str(long), invalid, str(long)),
		fmt.Sprintf(`{"model":"m","max_tokens":10,"messages":[{"role":"user","content":%s  },{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"f","input":{}},{"type":"tool_use","id":"t2","name":"g","input":{}}]},`+
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","is_error":true,"content":%s},{"type":"tool_result","tool_use_id":"t2","content":[{"type":"text","text":%s}]}]},{"role":"user","content":%s}]}`, str(long), str(long), str(long), invalid),
		fmt.Sprintf(`{"model":"m","max_tokens":10,"messages":[{"role":"user","content":%s},{"role":"assistant","content":[{"type":"thinking","thinking":"hm","signature":"sig"},{"type":"tool_use","id":"","name":"f","input":{}}]},`+
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t9","content":%s},{"type":"document","source":{"type":"text","media_type":"text/plain","data":%s}}]},{"role":"system","content":%s},{"role":"user","content":""}]}`, str(long), str(long), str(long), str(long)),
		string(agentTurnsOf("messages", 3, 0)),
		string(agentTurnsOf("messages", 2, 300)),
	}
	input := []string{
		fmt.Sprintf(`{"model":"m","instructions":%s,"input":%s}`, str(long), str(long)),
		fmt.Sprintf(`{"model":"m","instructions":%s,"input":[{"role":"user","content":%s},{"role":"developer","content":%s},{"type":"message","role":"system","content":%s  },`+
			`{"type":"reasoning","summary":[{"type":"summary_text","text":"r"}],"encrypted_content":"tg2.x.y"},{"type":"function_call","call_id":"c1","name":"f","arguments":"{}"},{"type":"function_call","call_id":"c2","name":"f","arguments":"{}"},`+
			`{"type":"function_call_output","call_id":"c1","output":%s},{"type":"function_call_output","call_id":"c2","output":[{"type":"input_text","text":%s}]},{"role":"assistant","content":[{"type":"output_text","text":%s}]},{"role":"user","content":%s}]}`,
			escaped, str(long), invalid, str(long), str(long), str(long), str(long), str(long)),
		fmt.Sprintf(`{"model":"m","input":[{"type":"function_call_output","call_id":"none","output":%s},{"role":"user","content":[{"type":"input_text","text":%s}]},{"role":"user","content":""},{"role":"user","content":null}]}`, str(long), str(long)),
		string(agentTurnsOf("responses", 3, 0)),
		string(agentTurnsOf("responses", 2, 300)),
	}
	return map[string][]string{"messages": messages, "responses": input}
}

// A client API's translation that puts the long strings apart, named by
// index rather than copied, makes the same upstream request on every
// protocol as one that copies them, with the same repair and input
// count: what goes apart is what would have been copied.
func TestContentApart(t *testing.T) {
	for api, bodies := range apartBodies() {
		for _, b := range bodies {
			apartSame(t, api, []byte(b))
		}
	}
	// And apart they are: the long strings are not in the chat request.
	body := agentTurnsOf("messages", 3, 300)
	r, err := anthropic.Decode(body, false)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := r.Chat(anthropic.ChatOptions{Protocol: translate.Gemini, Apart: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Strings) != 6 || bytes.Contains(tr.Chat, []byte("// file 1")) || !bytes.Contains(tr.Chat, []byte(wire.KeptContent)) {
		t.Errorf("%d kept; chat %s", len(tr.Kept), tr.Chat)
	}
}

// FuzzContentApart: any Messages or Responses body makes the same
// upstream request on every protocol with its long strings put apart as
// copied (TestContentApart's bodies are its seeds).
func FuzzContentApart(f *testing.F) {
	for api, bodies := range apartBodies() {
		for _, b := range bodies {
			f.Add(api == "responses", b)
		}
	}
	f.Fuzz(func(t *testing.T, isResponses bool, body string) {
		api := "messages"
		if isResponses {
			api = "responses"
		}
		apartSame(t, api, []byte(body))
	})
}
