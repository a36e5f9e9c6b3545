package wire

import (
	"strings"
	"testing"
)

// Usage in streams (QUIRKS A22, A25): read from every form an upstream
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
			Usage{9, 3, 12}, 1},
		{"choices null", []string{text, `{"id":"c","choices":null,"usage":{"prompt_tokens":9,"completion_tokens":3,"total_tokens":12}}`}, Usage{9, 3, 12}, 1},
		{"no choices key", []string{text, `{"id":"c","usage": {"prompt_tokens":9,"completion_tokens":3}}`}, Usage{9, 3, 12}, 1},
		{"cumulative on every chunk", []string{
			`{"id":"c","choices":[{"index":0,"delta":{"content":"a"}}],"usage":{"prompt_tokens":10,"completion_tokens":1,"total_tokens":11}}`,
			`{"id":"c","choices":[{"index":0,"delta":{"content":"b"}}],"usage":{"prompt_tokens":10,"completion_tokens":4,"total_tokens":14}}`},
			Usage{10, 4, 14}, 2},
		{"on the last content chunk (Gemini)", []string{text,
			`{"id":"c","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}}`},
			Usage{5, 2, 7}, 2},
		{"none", []string{text}, Usage{}, 1},
	} {
		for _, hold := range []bool{false, true} {
			rs := NewRestream(Quirks{}, true)
			rs.HoldUsage = hold
			sent := 0
			for _, c := range tc.chunks {
				out, ok, err := rs.Chunk(c)
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
				if !hold && out != c {
					t.Errorf("%s: changed without HoldUsage: %s", tc.name, out)
				}
			}
			if rs.Usage != tc.want || rs.UsageSeen != (tc.want != Usage{}) {
				t.Errorf("%s: usage %+v, want %+v", tc.name, rs.Usage, tc.want)
			}
			if hold && sent != tc.sent {
				t.Errorf("%s: %d chunks sent, want %d", tc.name, sent, tc.sent)
			}
			u := rs.UsageChunk()
			if tc.want == (Usage{}) {
				if u != "" {
					t.Errorf("%s: usage chunk without usage: %s", tc.name, u)
				}
				continue
			}
			o, err := ParseObject([]byte(u))
			raw, _ := o.Get("usage")
			got, _ := ParseUsage(raw)
			choices, _ := o.Get("choices")
			if err != nil || got != tc.want || string(choices) != "[]" || !strings.HasPrefix(u, `{"id":"c"`) {
				t.Errorf("%s: usage chunk %s", tc.name, u)
			}
		}
	}
}

func TestHasUsage(t *testing.T) {
	for data, want := range map[string]bool{
		`{"usage":null}`:                         false,
		`{"usage" : {"total_tokens":1}}`:         true,
		`{"x":"say \"usage\": {}","usage":null}`: false,
		`{"choices":[],"usage":{}}`:              true,
		`{"usage"`:                               false,
		`{"x":"usage","usage":{"a":1}}`:          true,
	} {
		if hasUsage(data) != want {
			t.Errorf("hasUsage(%s) = %v", data, !want)
		}
	}
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
		rs := NewRestream(Quirks{MissingIndex: true, IndexReuse: true, RepeatedName: true, ArgumentsObject: true}, true)
		rs.HoldUsage, rs.FixChunks, rs.KeepText = true, true, true
		for _, data := range []string{a, b} {
			out, ok, err := rs.Chunk(data)
			if err != nil {
				if _, isProtocol := err.(*ProtocolError); !isProtocol {
					t.Fatalf("error of type %T", err)
				}
				return
			}
			if !ok {
				continue
			}
			if !Valid([]byte(out)) {
				t.Fatalf("sent invalid JSON %q for %q", out, data)
			}
			if o, err := ParseObject([]byte(out)); err == nil {
				if u, _ := o.Get("usage"); len(u) > 0 && u[0] == '{' {
					t.Fatalf("usage left in %s", out)
				}
			}
		}
		if u := rs.UsageChunk(); u != "" && !Valid([]byte(u)) {
			t.Fatalf("invalid usage chunk %q", u)
		}
		for _, out := range rs.Flush() {
			if !Valid([]byte(out)) {
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
		rs := NewRestream(Quirks{}, true)
		rs.KeepText, rs.LimitText, rs.TextLimit = true, true, tc.limit
		last := ""
		for _, c := range tc.chunks {
			out, ok, err := rs.Chunk(c)
			if err != nil {
				t.Fatal(err)
			}
			if ok {
				last = out
			}
		}
		if rs.Text.String() != tc.text || rs.TextCut != tc.cut || last != tc.last {
			t.Errorf("%s: text %q cut %v last %s", tc.name, rs.Text.String(), rs.TextCut, last)
		}
	}
}
