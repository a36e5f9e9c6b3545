package wire

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files' expected sections from what the code does")

// golden is one testdata/normalize file: options, the upstream's data
// payloads in (a line "[DONE]" is the end marker), the payloads the client
// gets out (those sent as they come, then — if the response is complete —
// the held and tail chunks), and what the response came to.
type golden struct {
	comment []string
	options string
	in      []string
	out     []string
	result  []string
}

func readGolden(t *testing.T, path string) golden {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var g golden
	var section *[]string
	for _, line := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		switch {
		case line == "-- in --":
			section = &g.in
		case line == "-- out --":
			section = &g.out
		case line == "-- result --":
			section = &g.result
		case section == nil && strings.HasPrefix(line, "options:"):
			g.options = strings.TrimSpace(strings.TrimPrefix(line, "options:"))
		case section == nil:
			g.comment = append(g.comment, line)
		default:
			*section = append(*section, line)
		}
	}
	return g
}

func (g golden) String() string {
	var b strings.Builder
	for _, l := range g.comment {
		b.WriteString(l + "\n")
	}
	b.WriteString("options: " + g.options + "\n-- in --\n")
	for _, sec := range []struct {
		name  string
		lines []string
	}{{"", g.in}, {"-- out --", g.out}, {"-- result --", g.result}} {
		if sec.name != "" {
			b.WriteString(sec.name + "\n")
		}
		for _, l := range sec.lines {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// goldenOptions reads an options line: quirks=all|strict|name,name…,
// buffer, keep, limit=N, single, clientusage, reasoning=field|think,
// out=<member>.
func goldenOptions(t *testing.T, s string) Options {
	o := Options{Upstream: "up"}
	for _, f := range strings.Fields(s) {
		k, v, _ := strings.Cut(f, "=")
		switch k {
		case "quirks":
			q, err := ParseQuirks(strings.Split(v, ","))
			if err != nil {
				t.Fatal(err)
			}
			o.Quirks = q
		case "buffer":
			o.Buffer = true
		case "keep":
			o.KeepText = true
		case "limit":
			n, _ := strconv.Atoi(v)
			o.LimitText, o.TextLimit = true, n
		case "single":
			o.SingleChoice = true
		case "clientusage":
			o.ClientUsage = true
		case "reasoning":
			o.ReasoningIn = map[string]ReasoningSource{"field": ReasoningField, "think": ReasoningThink}[v]
		case "out":
			o.ReasoningOut = v
		default:
			t.Fatalf("unknown option %q", f)
		}
	}
	return o
}

// runGolden plays a golden file's input through a Normalizer the way the
// gateway does, and renders what the client gets and the result.
func runGolden(t *testing.T, g golden) (out, result []string) {
	n := NewNormalizer(goldenOptions(t, g.options))
	sawDone := false
	var err error
	// Each chunk is given in one buffer, scribbled over after the call, as
	// the event reader reuses its buffer: what the normalizer keeps of a
	// chunk, it must copy.
	var buf []byte
	for _, line := range g.in {
		if line == "[DONE]" {
			sawDone = true
			break
		}
		var o []byte
		var send bool
		buf = append(buf[:0], line...)
		o, send, err = n.Chunk(buf)
		if send {
			o = bytes.Clone(o)
		}
		for i := range buf {
			buf[i] = 'X'
		}
		if err != nil {
			break
		}
		if send {
			out = append(out, string(o))
		}
		if n.Cut() {
			if n.Result(nil).FinishReason == "" {
				out = append(out, string(n.LengthChunk()))
			}
			break
		}
	}
	fin := Finished{}
	if err == nil {
		fin = n.Finish(sawDone)
		if fin.Done {
			for _, c := range append(n.Flush(), fin.Tail...) {
				out = append(out, string(c))
			}
		}
	}
	res := n.Result(nil)
	if err != nil {
		result = append(result, "error: "+err.Error())
	} else {
		result = append(result, fmt.Sprintf("done: %v", fin.Done))
	}
	if res.FinishReason != "" {
		result = append(result, "finish: "+res.FinishReason)
	}
	if len(res.Calls) > 0 {
		var calls []string
		for _, c := range res.Calls {
			calls = append(calls, c.ID+":"+c.Name+"("+c.Arguments+")")
		}
		result = append(result, "calls: "+strings.Join(calls, " "))
	}
	if res.CallsErr != nil {
		result = append(result, "calls error: "+res.CallsErr.Error())
	}
	if res.Text != "" {
		result = append(result, "text: "+res.Text)
	}
	if res.Reasoning != "" {
		result = append(result, "reasoning: "+res.Reasoning)
	}
	if res.UsageSeen {
		result = append(result, fmt.Sprintf("usage: %d/%d/%d", res.Usage.PromptTokens, res.Usage.CompletionTokens, res.Usage.TotalTokens))
	}
	if f := res.Fixes.String(); f != "" {
		result = append(result, "fixes: "+f)
	}
	return out, result
}

// The normalizer's wire fixtures (testdata/normalize/*.txt): an upstream's
// stream in, the client's stream and the result out, one file per quirk or
// rule (docs/spec.md §2, docs/quirks.md section A). go test -run TestNormalizeGolden
// -update rewrites the expected sections.
func TestNormalizeGolden(t *testing.T) {
	files, _ := filepath.Glob("testdata/normalize/*.txt")
	if len(files) == 0 {
		t.Fatal("no golden files")
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			g := readGolden(t, path)
			out, result := runGolden(t, g)
			if *update {
				g.out, g.result = out, result
				if err := os.WriteFile(path, []byte(g.String()), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if diff := cmp.Diff(g.out, out); diff != "" {
				t.Errorf("out (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(g.result, result); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
		})
	}
}

// FirstChunks names, for each normalization, the upstream chunk it was
// first applied at (counted from 1), whichever part of the normalizer
// applied it: two parallel calls sent at one index (A02, the collector's
// index_reuse) at chunk 3, a role missing from the first delta (A26) at
// chunk 1.
func TestFirstChunks(t *testing.T) {
	n := NewNormalizer(Options{Quirks: AllQuirks(), SingleChoice: true})
	defer n.Release()
	for _, c := range []string{
		`{"id":"c","choices":[{"index":0,"delta":{"content":""}}]}`,
		`{"id":"c","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","type":"function","function":{"name":"f","arguments":"{}"}}]}}]}`,
		`{"id":"c","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"b","type":"function","function":{"name":"f","arguments":"{}"}}]}}]}`,
		`{"id":"c","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
	} {
		if _, _, err := n.Chunk([]byte(c)); err != nil {
			t.Fatal(err)
		}
	}
	at := n.FirstChunks()
	if at.Of("index_reuse") != 3 || at.Of("missing_role") != 1 || at.Of("no_done") != 0 || at.Of("nonsense") != 0 {
		t.Errorf("%v", at)
	}
}
