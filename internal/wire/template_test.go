package wire

import (
	"bytes"
	"context"
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
	// Parallel calls: a template's hole for the call's index.
	for _, p := range parallelSeeds() {
		for _, sel := range [][]byte{{0, 0}, {2, 1}, {6, 0}, {0x22, 0x41}} {
			f.Add(append(sel, p...))
		}
	}
	// The quirk corpus's streams, as payloads (their SSE framing aside).
	for _, e := range corpus(f) {
		if e.Whole {
			continue
		}
		var payloads []byte
		for ev, err := range Events(context.Background(), bytes.NewReader(e.Body), ReadOptions{}) {
			if err != nil || ev.Done {
				break
			}
			if len(ev.Data) > 0 && bytes.IndexByte(ev.Data, '\n') < 0 {
				payloads = append(append(payloads, ev.Data...), '\n')
			}
		}
		for _, sel := range [][]byte{{0, 0}, {2, 1}, {6, 0}, {0x22, 0x41}} {
			f.Add(append(sel, payloads...))
		}
	}
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
		b := call.args.AvailableBuffer()
		b = b[:cap(b)]
		for i := range b {
			b[i] = 'x'
		}
	}
	prev.collector.spare = nil
	n := NewNormalizer(opts)
	n.wake()
	n.collector.spare = append(n.collector.spare, spare...)
	return n
}

// parallelStream is an answer of parallel tool calls, one payload per
// line: the role, each call's first fragment (id, name) and its argument
// fragments, the finish. The calls' upstream indexes are first, first+step,
// …; their fragments come one call after another, or (interleaved) all
// calls first, then their fragments taking turns; keys in the canonical
// order (sent as they came) or sorted, as the simulator sends them (every
// fragment rewritten).
func parallelStream(calls, frags, first, step int, sorted, interleaved bool) string {
	var b strings.Builder
	start, frag := `{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":%[1]d,"id":"call_%[1]d","type":"function","function":{"name":"f","arguments":""}}]},"finish_reason":null}]}`,
		`{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":%[1]d,"function":{"arguments":"a%[2]d "}}]},"finish_reason":null}]}`
	if sorted {
		start, frag = `{"choices":[{"delta":{"tool_calls":[{"function":{"arguments":"","name":"f"},"id":"call_%[1]d","index":%[1]d,"type":"function"}]},"finish_reason":null,"index":0}],"created":1,"id":"c","model":"m","object":"chat.completion.chunk"}`,
			`{"choices":[{"delta":{"tool_calls":[{"function":{"arguments":"a%[2]d "},"index":%[1]d}]},"finish_reason":null,"index":0}],"created":1,"id":"c","model":"m","object":"chat.completion.chunk"}`
	}
	b.WriteString(`{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}` + "\n")
	if interleaved {
		for c := range calls {
			fmt.Fprintf(&b, start+"\n", first+c*step)
		}
		for i := range frags {
			for c := range calls {
				fmt.Fprintf(&b, frag+"\n", first+c*step, i)
			}
		}
	} else {
		for c := range calls {
			fmt.Fprintf(&b, start+"\n", first+c*step)
			for i := range frags {
				fmt.Fprintf(&b, frag+"\n", first+c*step, i)
			}
		}
	}
	b.WriteString(`{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}` + "\n")
	return b.String()
}

// parallelSeeds are parallel calls' streams for the fuzz targets: one
// call after another and interleaved, keys canonical and sorted, indexes
// of one and two digits, indexes apart.
func parallelSeeds() map[string]string {
	seeds := map[string]string{}
	for _, sorted := range []bool{false, true} {
		for _, interleaved := range []bool{false, true} {
			name := fmt.Sprintf("parallel-sorted%v-interleaved%v", sorted, interleaved)
			seeds[name] = parallelStream(3, 4, 0, 1, sorted, interleaved)
			seeds[name+"-9"] = parallelStream(3, 4, 9, 1, sorted, interleaved)
			seeds[name+"-apart"] = parallelStream(3, 4, 0, 2, sorted, interleaved)
		}
	}
	// A fragment of a call not yet known, a call's id before its name:
	// their fragments are held, then the template fits them.
	head := `{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[`
	tail := `]},"finish_reason":null}]}` + "\n"
	var b strings.Builder
	b.WriteString(head + `{"index":0,"id":"call_0","type":"function","function":{"name":"f","arguments":""}}` + tail)
	for _, f := range []string{
		`{"index":0,"function":{"arguments":"a"}}`, `{"index":0,"function":{"arguments":"b"}}`,
		`{"index":1,"function":{"arguments":"x"}}`, `{"index":0,"function":{"arguments":"c"}}`,
		`{"index":1,"id":"call_1"}`, `{"index":1,"function":{"arguments":"y"}}`, `{"index":0,"function":{"arguments":"d"}}`,
		`{"index":1,"function":{"name":"g"}}`, `{"index":1,"function":{"arguments":"z"}}`, `{"index":0,"function":{"arguments":"e"}}`,
	} {
		b.WriteString(head + f + tail)
	}
	// The finish, then a fragment (the PostFinish quirk's): the template
	// made before the finish no longer fits it.
	b.WriteString(`{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}` + "\n")
	b.WriteString(head + `{"index":1,"function":{"arguments":"w"}}` + tail)
	seeds["parallel-held"] = b.String()
	// An index with a leading zero is not JSON.
	seeds["parallel-leading-zero"] = head + `{"index":0,"id":"call_0","type":"function","function":{"name":"f","arguments":""}}` + tail +
		head + `{"index":0,"function":{"arguments":"a"}}` + tail + head + `{"index":00,"function":{"arguments":"b"}}` + tail
	return seeds
}

// The template serves ordinary streams: after the first chunk of each
// shape, text deltas and argument fragments skip the full path — also
// when every fragment is rewritten (keys in another order), when the
// stream rests between chunks, and for every call of parallel calls
// after the first's first fragment, one after another or interleaved —
// and what they add still reaches the result.
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
		calls  int // the calls in the result
		full   int // the chunks that take the full path
	}{
		{"text", strings.ReplaceAll(strings.ReplaceAll(benchStream(100, false), "data: ", ""), "\n\n", "\n"), 0, 3},
		{"tool", strings.ReplaceAll(strings.ReplaceAll(benchStream(100, true), "data: ", ""), "\n\n", "\n"), 1, 4},
		{"tool, keys sorted", sortedStream(100), 1, 2},
		// The role, each call's first fragment, the first call's first
		// argument fragment, the finish.
		{"parallel", parallelStream(4, 50, 0, 1, false, false), 4, 7},
		{"parallel, keys sorted", parallelStream(4, 50, 0, 1, true, false), 4, 7},
		{"parallel, interleaved", parallelStream(4, 50, 0, 1, false, true), 4, 7},
		{"parallel, interleaved, keys sorted", parallelStream(4, 50, 0, 1, true, true), 4, 7},
		{"parallel, indexes of one and two digits, keys sorted", parallelStream(4, 50, 8, 1, true, false), 4, 7},
		// Indexes 0, 2, 4, 6 are canonical 0, 1, 2, 3: a template of
		// fragments sent as they came (index 0's, whichever order their
		// keys are in) does not fit index 2's, whose are rewritten; index
		// 2's template fits 4's and 6's.
		{"parallel, indexes apart, keys sorted", parallelStream(4, 50, 0, 2, true, false), 4, 8},
		{"parallel, indexes apart", parallelStream(4, 50, 0, 2, false, false), 4, 8},
	} {
		// Resting between chunks is a stream paced by its model, one
		// chunk per read: the template outlives the wait.
		for _, rest := range []bool{false, true} {
			n := NewNormalizer(Options{Quirks: AllQuirks(), KeepText: true, SingleChoice: true})
			all := 0
			for _, p := range payloadsOf(tc.stream) {
				if string(p) == "[DONE]" {
					break
				}
				all++
				if _, _, err := n.Chunk(p); err != nil {
					t.Fatal(err)
				}
				if rest {
					n.Rest()
				}
			}
			res := n.Result(nil)
			if n.fullPaths != tc.full {
				t.Errorf("%s, resting %v: %d of %d chunks took the full path, want %d", tc.name, rest, n.fullPaths, all, tc.full)
			}
			if tc.calls == 0 && !strings.HasPrefix(res.Text, "tok0 tok1 ") || len(res.Calls) != tc.calls {
				t.Errorf("%s, resting %v: result %+v", tc.name, rest, res)
			}
			for _, c := range res.Calls {
				if !strings.HasPrefix(c.Arguments, "tok0 tok1 ") && !strings.HasPrefix(c.Arguments, "a0 a1 a2 ") {
					t.Errorf("%s, resting %v: call %+v", tc.name, rest, c)
				}
			}
		}
	}
}

// A terminal finish that leaves choice 0's finish reason as it was (""
// without the FinishReason quirk) and the count of choices seen (another
// choice finished first) still ends a template's use across the chunk,
// by the finish it holds (PostFinish): a fragment after it counts as one
// after the finish. (The fuzz targets pick all quirks or none, and one
// choice.)
func TestTemplateAfterEmptyFinish(t *testing.T) {
	q := AllQuirks()
	q.FinishReason = false
	opts := Options{Quirks: q}
	chunk := func(choice string) string {
		return `{"choices":[` + choice + `],"created":1,"id":"c","model":"m","object":"chat.completion.chunk"}` + "\n"
	}
	frag := func(args string) string {
		return chunk(`{"delta":{"tool_calls":[{"function":{"arguments":"` + args + `"},"index":0}]},"finish_reason":null,"index":0}`)
	}
	s := chunk(`{"delta":{"role":"assistant","content":""},"finish_reason":null,"index":0}`) +
		chunk(`{"delta":{"tool_calls":[{"function":{"arguments":"","name":"f"},"id":"call_0","index":0,"type":"function"}]},"finish_reason":null,"index":0}`) +
		frag("a") + frag("b") +
		chunk(`{"delta":{},"finish_reason":"stop","index":1}`) +
		frag("c") + frag("d") +
		chunk(`{"delta":{},"finish_reason":"","index":0}`) +
		frag("late")
	payloads := payloadsOf(s)
	full := NewNormalizer(opts)
	full.fullPathOnly = true
	want := normalizeAll(full, payloads, false)
	if !strings.Contains(want, "late") {
		t.Fatalf("the stream does not reach the late fragment:\n%s", want)
	}
	if got := normalizeAll(NewNormalizer(opts), payloads, false); got != want {
		t.Fatalf("with templates:\n%s\nfull path:\n%s", got, want)
	}
}
