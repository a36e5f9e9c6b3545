package wire

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// templateOptions reads a fuzz input's first two bytes as Normalizer
// options.
func templateOptions(sel []byte) Options {
	for len(sel) < 2 {
		sel = append(sel, 0)
	}
	o := Options{Upstream: "up", SingleChoice: sel[0]&1 == 0, KeepText: sel[0]&2 != 0, Buffer: sel[0]&4 != 0,
		ClientUsage: sel[0]&8 != 0, ReasoningIn: ReasoningSource(sel[0] >> 4 % 3)}
	if sel[1]&1 == 0 {
		o.Quirks = AllQuirks()
	}
	if sel[1]&2 != 0 {
		o.LimitText, o.TextLimit = true, int(sel[1]>>2)
	}
	if sel[0]&0x40 != 0 {
		o.ReasoningOut = "reasoning"
	}
	return o
}

// outcome is everything a Normalizer says about one stream.
func normalizeAll(n *Normalizer, payloads [][]byte, rest bool) string {
	var b strings.Builder
	for _, p := range payloads {
		out, send, err := n.Chunk(p)
		fmt.Fprintf(&b, "%q %v %v\n", out, send, err)
		if rest {
			n.Rest()
			poisonScratch()
		}
		if err != nil {
			break
		}
		if n.Cut() {
			fmt.Fprintf(&b, "cut %q\n", n.LengthChunk())
			break
		}
	}
	return b.String() + ending(n)
}

// ending is what a Normalizer says once its stream is over.
func ending(n *Normalizer) string {
	fin := n.Finish(true)
	res := n.Result(nil)
	callsErr := fmt.Sprint(res.CallsErr)
	res.CallsErr = nil
	return fmt.Sprintf("finish %v %q\nflush %q\nusage %q\nresult %#v %s\nfixes %v\n", fin.Done, fin.Tail, n.Flush(), n.UsageChunk(), res, callsErr, n.Fixes())
}

// poisonScratch overwrites the scratch a resting Normalizer let go of, as
// another stream using it meanwhile would.
func poisonScratch() {
	b := scratches.Get().(*scratch)
	for _, buf := range [][]byte{b.out1, b.cbuf, b.dbuf, b.tbuf} {
		buf = buf[:cap(buf)]
		for i := range buf {
			buf[i] = 'x'
		}
	}
	for _, ms := range [][]member{b.top, b.choice, b.delta, b.frag, b.fn} {
		ms = ms[:cap(ms)]
		for i := range ms {
			ms[i] = member{key: "poison", value: []byte(`"poison"`)}
		}
	}
	scratches.Put(b)
}

// FuzzTemplate: a stream normalized with templates gives the same chunks,
// state and result as the full path alone, chunk by chunk.
func FuzzTemplate(f *testing.F) {
	files, _ := filepath.Glob("testdata/normalize/*.txt")
	for _, path := range files {
		b, _ := os.ReadFile(path)
		in, _, _ := strings.Cut(string(b), "\n-- out --")
		_, in, _ = strings.Cut(in, "-- in --\n")
		for _, sel := range [][]byte{{0, 0}, {2, 1}, {6, 0x2a}, {0x1a, 0}, {0x22, 0x41}} {
			f.Add(append(sel, in...))
		}
	}
	for _, tool := range []bool{false, true} {
		s := strings.ReplaceAll(strings.ReplaceAll(benchStream(20, tool), "data: ", ""), "\n\n", "\n")
		f.Add(append([]byte{2, 0}, s...))
		f.Add(append([]byte{2, 0x32}, strings.ReplaceAll(s, "tok1", `t\u00e9\"k\n`)...))
	}
	// Keys in another order than the canonical one (the simulator's, sorted):
	// every fragment is rewritten, around the same arguments.
	sorted := `{"choices":[{"delta":{"role":"assistant","content":""},"finish_reason":null,"index":0}],"created":1,"id":"c","model":"m","object":"chat.completion.chunk"}
{"choices":[{"delta":{"tool_calls":[{"function":{"arguments":"","name":"f"},"id":"call_1","index":0,"type":"function"}]},"finish_reason":null,"index":0}],"created":1,"id":"c","model":"m","object":"chat.completion.chunk"}
{"choices":[{"delta":{"tool_calls":[{"function":{"arguments":"{\"a\""},"index":0}]},"finish_reason":null,"index":0}],"created":1,"id":"c","model":"m","object":"chat.completion.chunk"}
{"choices":[{"delta":{"tool_calls":[{"function":{"arguments":":1"},"index":0}]},"finish_reason":null,"index":0}],"created":1,"id":"c","model":"m","object":"chat.completion.chunk"}
{"choices":[{"delta":{"tool_calls":[{"function":{"arguments":"}"},"index":0}]},"finish_reason":null,"index":0}],"created":1,"id":"c","model":"m","object":"chat.completion.chunk"}
{"choices":[{"delta":{},"finish_reason":"tool_calls","index":0}],"created":1,"id":"c","model":"m","object":"chat.completion.chunk"}`
	f.Add(append([]byte{0, 0}, sorted...))
	f.Add(append([]byte{6, 1}, sorted...))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) < 2 {
			return
		}
		opts := templateOptions(b[:2])
		var payloads [][]byte
		for _, p := range bytes.Split(b[2:], []byte("\n")) {
			if string(p) != "[DONE]" {
				payloads = append(payloads, p)
			}
		}
		full := NewNormalizer(opts)
		full.fullPathOnly = true
		want := normalizeAll(full, payloads, false)
		got := normalizeAll(NewNormalizer(opts), payloads, false)
		if got != want {
			t.Fatalf("options %+v\nwith templates:\n%s\nfull path:\n%s", opts, got, want)
		}
		// Resting between chunks (as a stream does when it waits) changes
		// nothing, even when the scratch let go of is overwritten meanwhile.
		if rested := normalizeAll(NewNormalizer(opts), payloads, true); rested != want {
			t.Fatalf("options %+v\nresting between chunks:\n%s\nfull path:\n%s", opts, rested, want)
		}
		// Calls emptied by an earlier response (Release) and taken again
		// change nothing either, whatever their buffers held.
		if reused := normalizeAll(withSpareCalls(opts, payloads), payloads, false); reused != want {
			t.Fatalf("options %+v\nwith an earlier response's calls:\n%s\nfull path:\n%s", opts, reused, want)
		}
	})
}

// withSpareCalls returns a Normalizer for opts holding, as spares, the
// calls another one collected from payloads, emptied as Release empties
// them, the free room of their buffers overwritten.
func withSpareCalls(opts Options, payloads [][]byte) *Normalizer {
	prev := NewNormalizer(opts)
	normalizeAll(prev, payloads, false)
	if prev.s == nil {
		prev.wake()
	}
	prev.collector.recycle()
	spare := prev.collector.spare
	for _, call := range spare {
		for _, buf := range []*bytes.Buffer{&call.args, &call.held} {
			b := buf.AvailableBuffer()
			b = b[:cap(b)]
			for i := range b {
				b[i] = 'x'
			}
		}
	}
	prev.collector.spare = nil
	n := NewNormalizer(opts)
	n.wake()
	n.collector.spare = append(n.collector.spare, spare...)
	return n
}

// The template serves ordinary streams: after the first chunk of each
// shape, text deltas and argument fragments skip the full path — also
// when every fragment is rewritten (keys in another order), and when the
// stream rests between chunks — and what they add still reaches the
// result.
func TestTemplateUsed(t *testing.T) {
	sortedStream := func(n int) string {
		var b strings.Builder
		b.WriteString(`{"choices":[{"delta":{"tool_calls":[{"function":{"arguments":"","name":"f"},"id":"call_1","index":0,"type":"function"}]},"finish_reason":null,"index":0}],"id":"c"}` + "\n")
		for i := range n {
			fmt.Fprintf(&b, `{"choices":[{"delta":{"tool_calls":[{"function":{"arguments":"tok%d "},"index":0}]},"finish_reason":null,"index":0}],"id":"c"}`+"\n", i)
		}
		return b.String()
	}
	for _, tc := range []struct {
		name   string
		stream string
	}{
		{"text", strings.ReplaceAll(strings.ReplaceAll(benchStream(100, false), "data: ", ""), "\n\n", "\n")},
		{"tool", strings.ReplaceAll(strings.ReplaceAll(benchStream(100, true), "data: ", ""), "\n\n", "\n")},
		{"tool, keys sorted", sortedStream(100)},
	} {
		// Resting between chunks is a stream paced by its model, one
		// chunk per read: the template outlives the wait.
		for _, rest := range []bool{false, true} {
			n := NewNormalizer(Options{Quirks: AllQuirks(), KeepText: true, SingleChoice: true})
			full, all := 0, 0
			for _, p := range strings.Split(strings.TrimSuffix(tc.stream, "\n"), "\n") {
				if p == "[DONE]" {
					break
				}
				all++
				if n.tmpl.kind == noTemplate || !n.fromTemplateProbe([]byte(p)) {
					full++
				}
				if _, _, err := n.Chunk([]byte(p)); err != nil {
					t.Fatal(err)
				}
				if rest {
					n.Rest()
				}
			}
			res := n.Result(nil)
			if full > 4 {
				t.Errorf("%s, resting %v: %d of %d chunks took the full path", tc.name, rest, full, all)
			}
			if tc.name == "text" && !strings.HasPrefix(res.Text, "tok0 tok1 ") || tc.name != "text" && (len(res.Calls) != 1 || !strings.HasPrefix(res.Calls[0].Arguments, "tok0 tok1 ")) {
				t.Errorf("%s, resting %v: result %+v", tc.name, rest, res)
			}
		}
	}
}

// fromTemplateProbe reports whether data fits the template, changing
// nothing.
func (n *Normalizer) fromTemplateProbe(data []byte) bool {
	t := &n.tmpl
	p, s := len(t.prefix), len(t.suffix)
	if len(data) < p+s || !bytes.Equal(data[:p], t.prefix) || !bytes.Equal(data[len(data)-s:], t.suffix) {
		return false
	}
	end, _, err := skipString(data, p-1)
	return err == nil && end == len(data)-s+1
}
