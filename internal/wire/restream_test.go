package wire

import (
	"strings"
	"testing"
)

// Restream passes text deltas on untouched, rewrites tool-call fragments to
// the canonical shape, fixes finish reasons when told to, and drops a chunk
// whose only content is held back (SPEC §2, QUIRKS A11, A15, A16, A18).
func TestRestream(t *testing.T) {
	chunk := func(delta, finish string) string {
		return `{"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + finish + `}],"obfuscation":"zz"}`
	}
	s := NewRestream(Quirks{RepeatedName: true}, true)
	in := []string{
		chunk(`{"role":"assistant","content":"Hi"}`, "null"),
		chunk(`{"tool_calls":[{"index":0,"id":"a","function":{"name":null,"arguments":"{\"x\""}}]}`, "null"),
		chunk(`{"tool_calls":[{"index":0,"function":{"name":"f","arguments":":1}"}}]}`, "null"),
		chunk(`{}`, `"stop"`),
		chunk(`{}`, `"stop"`),
	}
	var out []string
	for _, d := range in {
		o, ok, err := s.Chunk(d)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			out = append(out, o)
		}
	}
	want := []string{
		in[0], // text: the same bytes
		`{"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","type":"function","function":{"name":"f","arguments":"{\"x\":1}"}}]},"finish_reason":null}],"obfuscation":"zz"}`,
		chunk(`{}`, `"tool_calls"`),
	}
	if strings.Join(out, "\n") != strings.Join(want, "\n") {
		t.Errorf("\n got: %s\nwant: %s", strings.Join(out, "\n"), strings.Join(want, "\n"))
	}
	if s.FinishReason != "tool_calls" {
		t.Errorf("finish %q", s.FinishReason)
	}
	if f := s.Collector.Fixes(); f["finish_reason"] != 1 || f["second_finish_reason"] != 1 {
		t.Errorf("fixes %v", f)
	}
}

// Without the finish-reason fix, "stop" after calls stays as sent.
func TestRestreamStrictFinish(t *testing.T) {
	s := NewRestream(Quirks{}, false)
	s.Chunk(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"f","arguments":"{}"}}]}}]}`)
	d := `{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`
	if o, ok, err := s.Chunk(d); err != nil || !ok || o != d || s.FinishReason != "stop" {
		t.Fatalf("%q %v %v %q", o, ok, err, s.FinishReason)
	}
}

// Keep-alives sent as data are dropped; other non-JSON data is a protocol
// error rather than something a client would choke on (QUIRKS A34, A39).
func TestRestreamNonJSON(t *testing.T) {
	s := NewRestream(Quirks{}, true)
	if _, ok, err := s.Chunk(": keepalive"); ok || err != nil {
		t.Errorf("keepalive: ok %v err %v", ok, err)
	}
	if _, _, err := s.Chunk("error: model not loaded"); err == nil || !strings.Contains(err.Error(), "not a JSON object") {
		t.Errorf("err = %v", err)
	}
}

// The chunk-level fixes: a placeholder chunk dropped (A23), a changing
// chunk id made constant (A24), a role given to the first delta (A26).
func TestRestreamChunkFixes(t *testing.T) {
	s := NewRestream(Quirks{}, true)
	s.FixChunks = true
	var out []string
	for _, d := range []string{
		`{"id":"","object":"","choices":[],"prompt_filter_results":[]}`,
		`{"id":"a.1","choices":[{"index":0,"delta":{"content":"Hi"}}]}`,
		`{"id":"a.2","choices":[{"index":0,"delta":{"content":"!"}}]}`,
	} {
		if o, ok, err := s.Chunk(d); err != nil {
			t.Fatal(err)
		} else if ok {
			out = append(out, o)
		}
	}
	want := `{"id":"a.1","choices":[{"index":0,"delta":{"role":"assistant","content":"Hi"}}]}` + "\n" +
		`{"id":"a.1","choices":[{"index":0,"delta":{"content":"!"}}]}`
	if got := strings.Join(out, "\n"); got != want {
		t.Errorf("\n got: %s\nwant: %s", got, want)
	}
}

// Reasoning reaches the client in one field: renamed from "reasoning", or
// extracted from inline <think> text split across chunks (QUIRKS A29, A30).
func TestRestreamReasoning(t *testing.T) {
	s := NewRestream(Quirks{}, true)
	s.ReasoningIn = "reasoning"
	out, _, _ := s.Chunk(`{"choices":[{"index":0,"delta":{"reasoning":"hmm"}}]}`)
	if out != `{"choices":[{"index":0,"delta":{"reasoning_content":"hmm"}}]}` {
		t.Errorf("rename: %s", out)
	}
	s = NewRestream(Quirks{}, true)
	s.ReasoningIn = "think"
	var got []string
	for _, d := range []string{
		`{"choices":[{"index":0,"delta":{"content":"<thi"}}]}`,
		`{"choices":[{"index":0,"delta":{"content":"nk>plan</think>Ans"}}]}`,
		`{"choices":[{"index":0,"delta":{"content":"wer"}}]}`,
	} {
		o, ok, err := s.Chunk(d)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			got = append(got, o)
		}
	}
	want := `{"choices":[{"index":0,"delta":{"content":""}}]}` + "\n" +
		`{"choices":[{"index":0,"delta":{"content":"Ans","reasoning_content":"plan"}}]}` + "\n" +
		`{"choices":[{"index":0,"delta":{"content":"wer"}}]}`
	if strings.Join(got, "\n") != want {
		t.Errorf("\n got: %s\nwant: %s", strings.Join(got, "\n"), want)
	}
}
