package wire

import (
	"strings"
	"testing"
)

// Usage in streams (docs/quirks.md A22, A25): read from every form an upstream
// sends it in, kept as a snapshot (largest values, never summed), and in
// HoldUsage mode taken out of the chunks and given back once.
func TestStreamUsage(t *testing.T) {
	text := `{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}],"usage":null}`
	for _, tc := range []struct {
		name   string
		chunks []string
		want   Usage
		sent   int // chunks sent in HoldUsage mode
	}{
		{"usage null on every chunk (OpenAI with include_usage)", []string{text,
			`{"id":"c","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":3,"total_tokens":12}}`},
			Usage{9, 3, 12, 0}, 1},
		{"choices null", []string{text, `{"id":"c","choices":null,"usage":{"prompt_tokens":9,"completion_tokens":3,"total_tokens":12}}`}, Usage{9, 3, 12, 0}, 1},
		{"no choices key", []string{text, `{"id":"c","usage": {"prompt_tokens":9,"completion_tokens":3}}`}, Usage{9, 3, 12, 0}, 1},
		{"cumulative on every chunk", []string{
			`{"id":"c","choices":[{"index":0,"delta":{"content":"a"}}],"usage":{"prompt_tokens":10,"completion_tokens":1,"total_tokens":11}}`,
			`{"id":"c","choices":[{"index":0,"delta":{"content":"b"}}],"usage":{"prompt_tokens":10,"completion_tokens":4,"total_tokens":14}}`},
			Usage{10, 4, 14, 0}, 2},
		{"on the last content chunk (Gemini)", []string{text,
			`{"id":"c","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}}`},
			Usage{5, 2, 7, 0}, 2},
		{"none", []string{text}, Usage{}, 1},
	} {
		for _, hold := range []bool{false, true} {
			rs := NewNormalizer(Options{Quirks: Quirks{FinishReason: true}, ClientUsage: !hold})
			sent := 0
			for _, c := range tc.chunks {
				out, ok, err := rs.Chunk([]byte(c))
				if err != nil {
					t.Fatalf("%s: %v", tc.name, err)
				}
				if !ok {
					continue
				}
				sent++
				if hold && hasUsage(out) {
					t.Errorf("%s: usage left in %s", tc.name, out)
				}
				if !hold && string(out) != c {
					t.Errorf("%s: changed without HoldUsage: %s", tc.name, out)
				}
			}
			r := rs.Result(nil)
			if r.Usage != tc.want || r.UsageSeen != (tc.want != Usage{}) {
				t.Errorf("%s: usage %+v, want %+v", tc.name, r.Usage, tc.want)
			}
			if hold && sent != tc.sent {
				t.Errorf("%s: %d chunks sent, want %d", tc.name, sent, tc.sent)
			}
			u := rs.UsageChunk()
			if tc.want == (Usage{}) {
				if u != nil {
					t.Errorf("%s: usage chunk without usage: %s", tc.name, u)
				}
				continue
			}
			o, err := ParseObject(u)
			raw, _ := o.Get("usage")
			got, _ := ParseUsage(raw)
			choices, _ := o.Get("choices")
			if err != nil || got != tc.want || string(choices) != "[]" || !strings.HasPrefix(string(u), `{"id":"c"`) {
				t.Errorf("%s: usage chunk %s", tc.name, u)
			}
		}
	}
}

// hasUsage reports whether a payload has a usage object.
func hasUsage(data []byte) bool {
	o, err := ParseObject(data)
	if err != nil {
		return false
	}
	u, _ := o.Get("usage")
	return len(u) > 0 && u[0] == '{'
}

// FuzzRestream: any two upstream payloads either fail as a ProtocolError or
// give valid JSON objects; in HoldUsage mode no usage is left in them, and
// the usage chunk is valid JSON.
func FuzzRestream(f *testing.F) {
	f.Add(`{"id":"c","choices":[{"index":0,"delta":{"content":"a"}}],"usage":{"prompt_tokens":1}}`, `{"choices":[],"usage":{"total_tokens":"x"}}`)
	f.Add(`{"id":"c","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"x","function":{"name":"f","arguments":"{"}}]}}]}`,
		`{"id":"c","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"completion_tokens":2}}`)
	f.Add(`: keepalive`, `{"usage":{}}`)
	f.Fuzz(func(t *testing.T, a, b string) {
		rs := NewNormalizer(Options{Quirks: AllQuirks(), KeepText: true, SingleChoice: true})
		for _, data := range []string{a, b} {
			out, ok, err := rs.Chunk([]byte(data))
			if err != nil {
				_, isProtocol := err.(*ProtocolError)
				_, isIncomplete := err.(*IncompleteError)
				if !isProtocol && !isIncomplete {
					t.Fatalf("error of type %T", err)
				}
				return
			}
			if !ok {
				continue
			}
			if !Valid(out) {
				t.Fatalf("sent invalid JSON %q for %q", out, data)
			}
			if hasUsage(out) {
				t.Fatalf("usage left in %s", out)
			}
		}
		if u := rs.UsageChunk(); u != nil && !Valid(u) {
			t.Fatalf("invalid usage chunk %q", u)
		}
		for _, out := range append(rs.Flush(), rs.Finish(true).Tail...) {
			if !Valid(out) {
				t.Fatalf("flushed invalid JSON %q", out)
			}
		}
	})
}

// TextLimit cuts the chunk that passes it to exactly the limit, counting
// characters (runes), and marks the cut; text that fits is not touched.
func TestTextLimit(t *testing.T) {
	chunk := func(content, finish string) string {
		return `{"id":"c","choices":[{"index":0,"delta":{"content":"` + content + `"},"finish_reason":` + finish + `}]}`
	}
	for _, tc := range []struct {
		name   string
		limit  int
		chunks []string
		text   string
		cut    bool
		last   string // the last chunk sent
	}{
		{"fits exactly", 5, []string{chunk("héllo", "null")}, "héllo", false, chunk("héllo", "null")},
		{"over by one", 4, []string{chunk("hé", "null"), chunk("llo", "null")}, "héll", true, chunk("ll", "null")},
		{"finish in the cut chunk", 2, []string{chunk("abc", `"stop"`)}, "ab", true, `{"id":"c","choices":[{"index":0,"delta":{"content":"ab"},"finish_reason":"length"}]}`},
		{"nothing fits after the limit", 2, []string{chunk("ab", "null"), chunk("c", "null")}, "ab", true, chunk("ab", "null")},
		{"limit 0", 0, []string{chunk("a", "null")}, "", true, ""},
	} {
		rs := NewNormalizer(Options{Quirks: Quirks{FinishReason: true}, LimitText: true, TextLimit: tc.limit})
		last := ""
		for _, c := range tc.chunks {
			out, ok, err := rs.Chunk([]byte(c))
			if err != nil {
				t.Fatal(err)
			}
			if ok {
				last = string(out)
			}
		}
		if text := rs.Result(nil).Text; text != tc.text || rs.Cut() != tc.cut || last != tc.last {
			t.Errorf("%s: text %q cut %v last %s", tc.name, text, rs.Cut(), last)
		}
	}
}

// Cached prompt tokens are read from prompt_tokens_details; a missing or
// odd details object is none.
func TestParseUsageCached(t *testing.T) {
	for raw, want := range map[string]Usage{
		`{"prompt_tokens":10,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":4}}`: {PromptTokens: 10, CompletionTokens: 2, TotalTokens: 12, CachedTokens: 4},
		`{"prompt_tokens":10,"prompt_tokens_details":null}`:                                      {PromptTokens: 10, TotalTokens: 10},
		`{"prompt_tokens":10,"prompt_tokens_details":{"cached_tokens":"x"}}`:                     {PromptTokens: 10, TotalTokens: 10},
	} {
		if got, ok := ParseUsage([]byte(raw)); !ok || got != want {
			t.Errorf("%s: %+v, want %+v", raw, got, want)
		}
	}
}
