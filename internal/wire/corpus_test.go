package wire

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/testing/quirkcorpus"
)

// corpus is the quirk conformance corpus (testdata/quirks).
func corpus(t testing.TB) []quirkcorpus.Entry {
	t.Helper()
	entries, err := quirkcorpus.Load("testdata/quirks")
	if err != nil {
		t.Fatal(err)
	}
	return entries
}

// corpusOptions are the Normalizer options of an entry's upstream, for a
// single-choice request whose text is kept (as a judge that reads it
// keeps it).
func corpusOptions(t *testing.T, e quirkcorpus.Entry) Options {
	o := goldenOptions(t, e.Upstream)
	o.SingleChoice, o.KeepText = true, true
	return o
}

// clientStream relays an entry's stream as the gateway does, through
// path, read in the pieces cuts gives, and ends it for the client as the
// gateway does: the held and tail chunks and [DONE] when the answer is
// usable, else one error event (a minimal judge stands in for the
// completion policy's: calls that cannot be told apart, or arguments that
// do not parse, are unusable). It returns the client's bytes.
func clientStream(body, cuts []byte, opts Options, p path) []byte {
	n, w, sink, ro := relayParts(opts, 0, p)
	defer n.Release()
	var failed error
	sawDone := false
	for ev, err := range Events(context.Background(), FlushBeforeRead(&pieces{data: body, cuts: cuts}, w), ro) {
		if err != nil {
			failed = err
			break
		}
		if ev.Done {
			sawDone = true
			break
		}
		if len(ev.Data) == 0 {
			continue
		}
		out, send, err := n.Chunk(ev.Data)
		if err != nil {
			failed = err
			break
		}
		if send {
			w.Send(out)
		}
		if n.Cut() {
			if n.Result(nil).FinishReason == "" {
				w.Send(n.LengthChunk())
			}
			sawDone = true
			break
		}
	}
	if failed == nil {
		fin := n.Finish(sawDone)
		res := n.Result(nil)
		switch {
		case !fin.Done:
			failed = ErrNoDone
		case res.CallsErr != nil:
			failed = res.CallsErr
		default:
			for _, c := range res.Calls {
				if c.Arguments != "" && !Valid([]byte(c.Arguments)) {
					failed = fmt.Errorf("call %s: arguments do not parse", c.ID)
				}
			}
		}
		if failed == nil {
			for _, c := range append(n.Flush(), fin.Tail...) {
				w.Send(c)
			}
			w.Done()
		}
	}
	if failed != nil {
		w.Fail(NewError("upstream_error", "corpus", "", failed.Error()))
	}
	w.Flush()
	return []byte(sink.String())
}

// clientView is what a client reading a normalized answer ends up with.
type clientView struct {
	finish          string
	calls           []quirkcorpus.Call
	text, reasoning string
	err             string
}

func (g clientView) String() string {
	if g.err != "" {
		return "error: " + g.err + "\n"
	}
	w := quirkcorpus.Want{Finish: g.finish, Calls: g.calls, Text: g.text, Reasoning: g.reasoning}
	return w.String()
}

// readClient reads a client's SSE stream as a strict accumulator does:
// calls keyed by their index, which counts up from 0 as calls come (a
// client that numbers calls as they come gets the same), an id, type and
// name only on a call's first fragment, arguments appended, one finish
// reason, [DONE] or one error event last. What a lenient client would forgive is an error here.
func readClient(sse []byte) clientView {
	var g clientView
	byIndex := map[int]int{}
	done := false
	for ev, err := range Events(context.Background(), bytes.NewReader(sse), ReadOptions{}) {
		if err != nil {
			return clientView{err: "client: " + err.Error()}
		}
		if ev.Done {
			done = true
			break
		}
		if done || g.err != "" {
			return clientView{err: "client: an event after the end"}
		}
		if e := g.chunk(ev.Data, byIndex); e != "" {
			return clientView{err: "client: " + e}
		}
	}
	if !done && g.err == "" {
		return clientView{err: "client: no [DONE]"}
	}
	return g
}

// chunk reads one chunk into g; it returns what was wrong with it.
func (g *clientView) chunk(data []byte, byIndex map[int]int) string {
	var c struct {
		Error   *ErrorDetail `json:"error"`
		Choices []struct {
			Index int `json:"index"`
			Delta struct {
				Content   *string          `json:"content"`
				Reasoning *string          `json:"reasoning_content"`
				ToolCalls []map[string]any `json:"tool_calls"`
			} `json:"delta"`
			FinishReason *string `json:"finish_reason"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(data, &c); err != nil {
		return "not JSON: " + string(data)
	}
	if c.Error != nil {
		g.err = c.Error.Message
		return ""
	}
	for _, ch := range c.Choices {
		if ch.Index != 0 {
			return "a choice other than 0"
		}
		if g.finish != "" {
			return "a chunk after the finish reason"
		}
		if ch.Delta.Content != nil {
			g.text += *ch.Delta.Content
		}
		if ch.Delta.Reasoning != nil {
			g.reasoning += *ch.Delta.Reasoning
		}
		for _, f := range ch.Delta.ToolCalls {
			if e := g.fragment(f, byIndex); e != "" {
				return e
			}
		}
		if ch.FinishReason != nil {
			g.finish = *ch.FinishReason
		}
	}
	return ""
}

// fragment adds one tool-call fragment.
func (g *clientView) fragment(f map[string]any, byIndex map[int]int) string {
	idx, ok := f["index"].(float64)
	if !ok || idx != float64(int(idx)) {
		return fmt.Sprintf("a fragment without an integer index: %v", f)
	}
	fn, _ := f["function"].(map[string]any)
	args, isString := fn["arguments"].(string)
	if fn["arguments"] != nil && !isString {
		return fmt.Sprintf("arguments that are not a string: %v", f)
	}
	k, seen := byIndex[int(idx)]
	if !seen {
		id, _ := f["id"].(string)
		name, _ := fn["name"].(string)
		if id == "" || name == "" || f["type"] != "function" || int(idx) != len(g.calls) {
			return fmt.Sprintf("a call's first fragment without its id, name and type, or out of order: %v", f)
		}
		byIndex[int(idx)] = len(g.calls)
		g.calls = append(g.calls, quirkcorpus.Call{ID: id, Name: name, Arguments: args})
		return ""
	}
	if f["id"] != nil || f["type"] != nil || fn["name"] != nil {
		return fmt.Sprintf("a continuation fragment repeating the call's id, type or name: %v", f)
	}
	g.calls[k].Arguments += args
	return ""
}

// matches reports whether g is what want says a client must end up with.
// An error is matched by there being one (its words are the gateway's,
// checked end to end).
func (g clientView) matches(want quirkcorpus.Want) bool {
	if want.Error != "" || g.err != "" {
		return want.Error != "" && g.err != ""
	}
	return g.finish == want.Finish && want.Matches(g.calls) && g.text == want.Text && g.reasoning == want.Reasoning
}

// Every entry of the quirk corpus (testdata/quirks, docs/quirks.md section
// A and the answer-shaping rows of C and D) reaches a client as what it
// must end up with, read by a strict accumulator; and every fast path —
// the template, Normalizer.Run — gives it byte for byte what the full
// path gives, under each option that changes what the normalizer holds or
// sends, read whole, a byte at a time, in reads of 7 bytes, and in reads
// of 0, 255 and 45 bytes (docs/spec.md §2; docs/design.md: a fast path has
// a referee).
func TestQuirkCorpus(t *testing.T) {
	ones := bytes.Repeat([]byte{1}, 1<<16)
	cutss := [][]byte{nil, ones, bytes.Repeat([]byte{7}, 1<<12), bytes.Repeat([]byte{0, 255, 45}, 1<<10)}
	for _, e := range corpus(t) {
		t.Run(e.Name, func(t *testing.T) {
			base := corpusOptions(t, e)
			if e.Whole {
				n := NewNormalizer(base)
				defer n.Release()
				if g := readWhole(n, e.Body); !g.matches(e.Want) {
					t.Fatalf("the client ends up with\n%swant\n%s", g, e.Want)
				}
				return
			}
			want := clientStream(e.Body, nil, base, fullPath)
			if g := readClient(want); !g.matches(e.Want) {
				t.Fatalf("the client ends up with\n%swant\n%sfrom\n%s", g, e.Want, want)
			}
			variants := map[string]Options{"base": base}
			for name, change := range map[string]func(*Options){
				"buffer":      func(o *Options) { o.Buffer = true },
				"clientusage": func(o *Options) { o.ClientUsage = true },
				"limit":       func(o *Options) { o.LimitText, o.TextLimit = true, 12 },
				"nokeep":      func(o *Options) { o.KeepText = false },
				"multichoice": func(o *Options) { o.SingleChoice = false },
			} {
				o := base
				change(&o)
				variants[name] = o
			}
			for name, opts := range variants {
				for _, cuts := range cutss {
					full := clientStream(e.Body, cuts, opts, fullPath)
					for _, p := range []path{templates, withRun} {
						if fast := clientStream(e.Body, cuts, opts, p); !bytes.Equal(fast, full) {
							t.Fatalf("options %s, reads %v: %v differs from the full path\n%s:\n%s\nfull path:\n%s", name, cuts[:min(len(cuts), 3)], p, p, fast, full)
						}
					}
				}
			}
		})
	}
}

// readWhole normalizes a whole answer and reads it as a client does.
func readWhole(n *Normalizer, body []byte) clientView {
	out, err := n.Whole(body)
	if err != nil {
		return clientView{err: err.Error()}
	}
	res := n.Result(nil)
	if res.CallsErr != nil {
		return clientView{err: res.CallsErr.Error()}
	}
	var c struct {
		Choices []struct {
			Message struct {
				Content   *string `json:"content"`
				Reasoning *string `json:"reasoning_content"`
				ToolCalls []struct {
					ID       string `json:"id"`
					Type     string `json:"type"`
					Function struct {
						Name      string `json:"name"`
						Arguments string `json:"arguments"`
					} `json:"function"`
				} `json:"tool_calls"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(out, &c); err != nil || len(c.Choices) != 1 {
		return clientView{err: fmt.Sprintf("client: not one choice: %s", out)}
	}
	m := c.Choices[0].Message
	g := clientView{finish: c.Choices[0].FinishReason}
	if m.Content != nil {
		g.text = *m.Content
	}
	if m.Reasoning != nil {
		g.reasoning = *m.Reasoning
	}
	for _, tc := range m.ToolCalls {
		if tc.Type != "function" {
			return clientView{err: fmt.Sprintf("client: a call of type %q", tc.Type)}
		}
		g.calls = append(g.calls, quirkcorpus.Call{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
	}
	for _, call := range g.calls {
		if call.Arguments != "" && !Valid([]byte(call.Arguments)) {
			return clientView{err: "arguments do not parse"}
		}
	}
	return g
}

// corpusParagraph is docs/quirks.md's paragraph on the corpus, which names
// the ids of sections C and D whose rows shape answers: the corpus holds
// entries for them as for every A id.
var corpusParagraph = regexp.MustCompile(`(?s)<!-- corpus -->(.*?)<!-- /corpus -->`)

// The corpus and docs/quirks.md cannot drift apart: every answer quirk (each
// A id, and each C and D id the document's corpus paragraph names) has at
// least two entries, and every id an entry shows is a row of the document.
func TestQuirkCorpusCoversDocs(t *testing.T) {
	doc, err := os.ReadFile("../../docs/quirks.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]bool{}
	for _, m := range regexp.MustCompile(`<a id="([acd]\d\d)"></a>`).FindAllStringSubmatch(string(doc), -1) {
		rows[strings.ToUpper(m[1])] = true
	}
	para := corpusParagraph.FindSubmatch(doc)
	if para == nil {
		t.Fatal("docs/quirks.md has no <!-- corpus --> paragraph naming the answer-shaping C and D ids")
	}
	need := map[string]bool{}
	for id := range rows {
		if id[0] == 'A' {
			need[id] = true
		}
	}
	for _, m := range regexp.MustCompile(`\b([CD]\d\d)\b`).FindAllStringSubmatch(string(para[1]), -1) {
		if !rows[m[1]] {
			t.Errorf("the corpus paragraph names %s, which is no row of docs/quirks.md", m[1])
		}
		need[m[1]] = true
	}
	count := map[string]int{}
	for _, e := range corpus(t) {
		for _, id := range e.Shows {
			if !rows[id] {
				t.Errorf("%s shows %s, which is no row of docs/quirks.md", e.Name, id)
			}
			count[id]++
		}
	}
	for _, id := range slices.Sorted(maps.Keys(need)) {
		if count[id] < 2 {
			t.Errorf("%s has %d corpus entries; every answer quirk needs at least two (testdata/quirks)", id, count[id])
		}
	}
}
