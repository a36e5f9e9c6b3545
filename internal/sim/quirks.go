package sim

import (
	"fmt"
	"sort"
	"strings"
)

// quirkScripts reproduce the streaming quirks of docs/quirks.md section A. A
// model name containing "q-<name>" plays the script <name>: a tool-call
// stream (get_weather, {"city":"Paris"}) shaped the way that quirk's
// upstreams shape it. Each entry is the raw SSE text, events in order; the
// stream ends with the last entry (no [DONE] unless the script sends it).
var quirkScripts = map[string][]string{
	// A01: no index on tool-call fragments.
	"noindex": toolStream(`{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\""}}`,
		`{"function":{"arguments":":\"Paris\"}"}}`),
	// A02: two parallel calls, both at index 0 (Ollama, SGLang): each
	// opens with a new id and empty arguments, which follow in fragments
	// carrying only "index":0.
	"sameindex": toolStream(`{"index":0,"id":"call_a","type":"function","function":{"name":"get_weather","arguments":""}}`,
		`{"index":0,"function":{"arguments":"{\"city\":"}}`, `{"index":0,"function":{"arguments":"\"Paris\"}"}}`,
		`{"index":0,"id":"call_b","type":"function","function":{"name":"get_weather","arguments":""}}`,
		`{"index":0,"function":{"arguments":"{\"city\":"}}`, `{"index":0,"function":{"arguments":"\"Rome\"}"}}`),
	// A02: each call whole in one chunk, both at index 0.
	"sameindexwhole": withDone(role, delta(`{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]}`),
		delta(`{"tool_calls":[{"index":0,"id":"call_b","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Rome\"}"}}]}`),
		finish("tool_calls")),
	// A03: indexes that start at 1.
	"sparse": toolStream(`{"index":1,"id":"toolu_1","type":"function","function":{"name":"get_weather","arguments":""}}`,
		`{"index":1,"function":{"arguments":"{\"city\":\"Paris\"}"}}`),
	// A05 + A10: id, type and name repeated on every fragment.
	"repeat": toolStream(`{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\""}}`,
		`{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":":\"Paris\"}"}}`),
	// A11: the name arrives after the first fragment.
	"latename": toolStream(`{"index":0,"id":"call_1","type":"function","function":{"name":null,"arguments":"{\"city\""}}`,
		`{"index":0,"function":{"name":"get_weather","arguments":":\"Paris\"}"}}`),
	// A12: arguments as a JSON object.
	"argsobject": toolStream(`{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":{"city":"Paris"}}}`),
	// A15: finish_reason "stop" although a call was made.
	"stop": withDone(role, delta(`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]}`),
		finish("stop")),
	// A16: two terminal finish reasons.
	"twofinish": withDone(role, delta(`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]}`),
		finish("tool_calls"), finish("stop")),
	// A17: [DONE] but never a finish_reason.
	"nofinish": withDone(role, delta(`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]}`)),
	// A21: a finish reason, then EOF without [DONE].
	"nodone": {role, delta(`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]}`),
		finish("tool_calls")},
	// A34–A36: keep-alive comments, CRLF line ends, data: without a space.
	"keepalive": {": OPENROUTER PROCESSING\r\n\r\n", strings.ReplaceAll(role, "data: ", "data:"),
		"event: ping\r\n\r\n", strings.ReplaceAll(delta(`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]}`), "\n", "\r\n"),
		finish("tool_calls"), "data: [DONE]\r\n\r\n"},
	// A23, A24, A26: an Azure-style placeholder first chunk, a chunk id that
	// changes, and no role anywhere.
	"chunkids": {
		`data: {"id":"","object":"","created":0,"model":"","choices":[],"prompt_filter_results":[{"prompt_index":0,"content_filter_results":{}}]}` + "\n\n",
		strings.Replace(delta(`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\""}}]}`), "chatcmpl-q", "chat.id.1", 1),
		strings.Replace(delta(`{"tool_calls":[{"index":0,"function":{"arguments":":\"Paris\"}"}}]}`), "chatcmpl-q", "chat.id.2", 1),
		strings.Replace(finish("tool_calls"), "chatcmpl-q", "chat.id.3", 1), "data: [DONE]\n\n"},
	// A04: a negative index with null id and name: no fix without guessing.
	"negindex": toolStream(`{"index":-1,"id":null,"function":{"name":null,"arguments":"{"}}`),
	// A08: one id for two calls: no fix without guessing.
	"dupid": toolStream(`{"index":0,"id":"get_weather","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}`,
		`{"index":1,"id":"get_weather","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Rome\"}"}}`),
	// A09: type missing.
	"notype": toolStream(`{"index":0,"id":"call_1","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}`),
	// A13: the whole call in one chunk, then an empty extra fragment.
	"onechunk": toolStream(`{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}`,
		`{"index":0,"function":{"arguments":""}}`),
	// A13: the whole call in one chunk, then its arguments again: the
	// concatenation is no JSON text, an error rather than a guess.
	"repeatargs": toolStream(`{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}`,
		`{"index":0,"function":{"arguments":"{\"city\":\"Paris\"}"}}`),
	// A14 + A15: the last fragment and finish "stop" in one chunk.
	"samechunk": withDone(role, delta(`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\""}}]}`),
		strings.Replace(delta(`{"tool_calls":[{"index":0,"function":{"arguments":":\"Paris\"}"}}]}`), `"finish_reason":null`, `"finish_reason":"stop"`, 1)),
	// A18: finish_reason "" on every chunk, then the real one.
	"emptyfinish": withDone(strings.Replace(role, `"finish_reason":null`, `"finish_reason":""`, 1),
		strings.Replace(delta(`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]}`), `"finish_reason":null`, `"finish_reason":""`, 1),
		finish("tool_calls")),
	// A19: arguments cut, yet reported as finished with tool_calls.
	"truncated": toolStream(`{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Pa"}}`),
	// A22: a usage-only final chunk.
	"usageonly": append(toolStream(`{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}`)[:3],
		`data: {"id":"chatcmpl-q","object":"chat.completion.chunk","created":1700000000,"model":"sim-quirk","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":3,"total_tokens":12}}`+"\n\n", "data: [DONE]\n\n"),
	// A32: empty tool_calls arrays on ordinary deltas.
	"emptytoolcalls": withDone(role, delta(`{"content":"","tool_calls":[]}`),
		delta(`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]}`), finish("tool_calls")),
	// A33: per-call provider metadata that must round-trip.
	"extracontent": toolStream(`{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"},"extra_content":{"google":{"thought_signature":"sig=="}}}`),
	// A37: one event's JSON split over two data: lines.
	"multiline": withDone(role, "data: {\"id\":\"chatcmpl-q\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\n"+
		"data: \"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"arguments\":\"{\\\"city\\\":\\\"Paris\\\"}\"}}]},\"finish_reason\":null}]}\n\n",
		finish("tool_calls")),
	// A38: an error object mid-stream, then [DONE].
	"errorevent": withDone(role, `data: {"error":{"message":"Provider returned error","code":502}}`+"\n\n"),
	// C27: the model's own call failed the server's parser (Groq): an
	// error object typed invalid_request_error instead of the call.
	"toolusefailed": withDone(role, `data: {"error":{"message":"Failed to call a function. Please adjust your prompt. See 'failed_generation' for more details.","type":"invalid_request_error","code":"tool_use_failed"}}`+"\n\n"),
	// A39: a data payload that is not JSON.
	"nonjson": withDone(role, "data: error: model not loaded\n\n"),
	// A40: extra top-level fields, "error": null included.
	"extrafields": withDone(role, strings.Replace(delta(`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]}`), `"model"`, `"obfuscation":"YhS7A","error":null,"provider":"x","model"`, 1),
		finish("tool_calls")),
	// A43: the fragments of two parallel calls interleaved.
	"interleaved": toolStream(`{"index":0,"id":"call_a","type":"function","function":{"name":"get_weather","arguments":"{\"city\""}}`,
		`{"index":1,"id":"call_b","type":"function","function":{"name":"get_weather","arguments":"{\"city\""}}`,
		`{"index":0,"function":{"arguments":":\"Paris\"}"}}`, `{"index":1,"function":{"arguments":":\"Rome\"}"}}`),
	// A06: the id changes inside one call (a placeholder first): no fix
	// without guessing which one is real.
	"placeholderid": toolStream(`{"index":0,"id":"tmp_1","type":"function","function":{"name":"get_weather","arguments":""}}`,
		`{"index":0,"id":"call_9f2","function":{"arguments":"{\"city\":\"Paris\"}"}}`),
	// A25: cumulative usage on every chunk: passed on as sent.
	"cumulativeusage": withDone(role,
		strings.Replace(delta(`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]}`), `"finish_reason":null}]`, `"finish_reason":null}],"usage":{"prompt_tokens":9,"completion_tokens":2,"total_tokens":11}`, 1),
		strings.Replace(finish("tool_calls"), `"finish_reason":"tool_calls"}]`, `"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":9,"completion_tokens":4,"total_tokens":13}`, 1)),
	// A27: the choice index increments on every chunk.
	"choiceindex": withDone(strings.Replace(role, `"index":0,"delta"`, `"index":197,"delta"`, 1),
		strings.Replace(delta(`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]}`), `"index":0,"delta"`, `"index":198,"delta"`, 1),
		strings.Replace(finish("tool_calls"), `"index":0,"delta"`, `"index":199,"delta"`, 1)),
	// A41: tool-call markup leaked into content: passed on as text.
	"markup": withDone(role, delta(`{"content":"<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>{\"city\":\"Paris\"}"}`), finish("stop")),
	// A29: reasoning in a field named "reasoning".
	"reasoningfield": withDone(role, delta(`{"reasoning":"Checking the weather tool."}`),
		delta(`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]}`), finish("tool_calls")),
	// A30: reasoning inline in content, the tags split across chunks.
	"thinkinline": withDone(role, delta(`{"content":"<thi"}`), delta(`{"content":"nk>The user wants weather.</th"}`), delta(`{"content":"ink>Calling the tool."}`),
		delta(`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]}`), finish("tool_calls")),
	// A07: the id is empty (Gemini's OpenAI-compatible endpoint).
	"noid": toolStream(`{"index":0,"id":"","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}`),
	// A07: no id at all, on any fragment (vLLM).
	"noidfield": toolStream(`{"index":0,"type":"function","function":{"name":"get_weather","arguments":"{\"city\""}}`,
		`{"index":0,"function":{"arguments":":\"Paris\"}"}}`),
	// A31: content as typed blocks (Mistral's reasoning models): thinking,
	// then text with a reference block, then the call.
	"blocks": withDone(role, delta(`{"content":[{"type":"thinking","thinking":[{"type":"text","text":"The user wants "},{"type":"text","text":"the weather."}]}]}`),
		delta(`{"content":[{"type":"text","text":"Looking it up."},{"type":"reference","reference_ids":[1]}]}`),
		delta(`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]}`), finish("tool_calls")),
	// A chunk after the finish chunk, finish_reason null: Azure's content
	// filter results.
	"postfinish": withDone(role, delta(`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]}`),
		finish("tool_calls"),
		`data: {"id":"chatcmpl-q","object":"chat.completion.chunk","created":1700000000,"model":"sim-quirk","choices":[{"index":0,"delta":{},"finish_reason":null,"content_filter_results":{"hate":{"filtered":false,"severity":"safe"}}}]}`+"\n\n"),
	// A chunk after the finish chunk, finish_reason null: OpenRouter's
	// usage chunk.
	"postusage": withDone(role, delta(`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]}`),
		finish("tool_calls"),
		`data: {"id":"chatcmpl-q","object":"chat.completion.chunk","created":1700000000,"model":"sim-quirk","choices":[{"index":0,"delta":{},"finish_reason":null}],"usage":{"prompt_tokens":9,"completion_tokens":3,"total_tokens":12}}`+"\n\n"),
	// A19/A20: the stream stops mid-arguments, with neither finish nor [DONE].
	"cutargs": {role, delta(`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Pa"}}]}`)},
}

// QuirkNames lists the quirk scripts, sorted.
func QuirkNames() []string {
	names := make([]string, 0, len(quirkScripts))
	for n := range quirkScripts {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

const role = "data: {\"id\":\"chatcmpl-q\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,\"model\":\"sim-quirk\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":null},\"finish_reason\":null}]}\n\n"

func delta(d string) string {
	return fmt.Sprintf("data: {\"id\":\"chatcmpl-q\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,\"model\":\"sim-quirk\",\"choices\":[{\"index\":0,\"delta\":%s,\"finish_reason\":null}]}\n\n", d)
}

func finish(reason string) string {
	return fmt.Sprintf("data: {\"id\":\"chatcmpl-q\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,\"model\":\"sim-quirk\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":%q}]}\n\n", reason)
}

func withDone(events ...string) []string { return append(events, "data: [DONE]\n\n") }

// toolStream is a role chunk, one delta per fragment, finish tool_calls, [DONE].
func toolStream(fragments ...string) []string {
	evs := []string{role}
	for _, f := range fragments {
		evs = append(evs, delta(`{"tool_calls":[`+f+`]}`))
	}
	return withDone(append(evs, finish("tool_calls"))...)
}

// quirkFor returns the quirk script a model name asks for.
func quirkFor(model string) ([]string, bool) {
	i := strings.Index(model, "q-")
	if i < 0 {
		return nil, false
	}
	evs, ok := quirkScripts[model[i+2:]]
	return evs, ok
}
