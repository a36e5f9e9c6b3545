package responses

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files' expected sections")

// ids are the generated item ids, made stable for comparison.
var ids = regexp.MustCompile(`"(rs|msg|fc)_[0-9a-f]{32}"`)

// golden is a file of testdata/golden: a comment, the normalized chat
// chunks in (one per line; "[DONE]" ends the stream, a chat.completion
// object is a whole answer), the Responses events out (or the whole
// response object).
type golden struct {
	comment, in, out []string
}

func readGolden(t *testing.T, path string) golden {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var g golden
	section := &g.comment
	for line := range strings.Lines(string(b)) {
		line = strings.TrimSuffix(line, "\n")
		switch line {
		case "-- in --":
			section = &g.in
		case "-- out --":
			section = &g.out
		default:
			*section = append(*section, line)
		}
	}
	return g
}

func (g golden) String() string {
	var b strings.Builder
	for _, part := range []struct {
		head  string
		lines []string
	}{{"", g.comment}, {"-- in --\n", g.in}, {"-- out --\n", g.out}} {
		b.WriteString(part.head)
		for _, l := range part.lines {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// play translates a golden file's input, streamed or whole.
func play(t *testing.T, in []string) []string {
	t.Helper()
	meta := Meta{ID: "resp_1", CreatedAt: 1700000000, Model: "m", ReasoningField: "reasoning_content"}
	stable := func(b []byte) string {
		n := 0
		seen := map[string]string{}
		return ids.ReplaceAllStringFunc(string(b), func(id string) string {
			if s, ok := seen[id]; ok {
				return s
			}
			n++
			seen[id] = strings.SplitN(id, "_", 2)[0] + `_` + string(rune('0'+n)) + `"`
			return seen[id]
		})
	}
	if len(in) == 1 && strings.Contains(in[0], `"object":"chat.completion"`) {
		object, _, err := Whole([]byte(in[0]), meta)
		if err != nil {
			t.Fatal(err)
		}
		var v any
		_ = json.Unmarshal(object, &v)
		pretty, _ := json.Marshal(v) // keys sorted: the file does not depend on map order
		return []string{stable(pretty)}
	}
	var log eventLog
	s := NewStream(meta, &log)
	for _, line := range in {
		if line == "[DONE]" {
			if err := s.Done(); err != nil {
				t.Fatal(err)
			}
			break
		}
		if err := s.Chunk([]byte(line)); err != nil {
			t.Fatal(err)
		}
	}
	var all []string
	for _, e := range log.events {
		b, _ := json.Marshal(e) // keys sorted
		all = append(all, string(b))
	}
	return strings.Split(stable([]byte(strings.Join(all, "\n"))), "\n")
}

// The Responses translator's wire fixtures (testdata/golden/*.txt): the
// normalized chat stream (or whole answer) in, the Responses events (or
// object) out. go test -run TestGolden -update rewrites the expected
// sections after a deliberate change.
func TestGolden(t *testing.T) {
	files, _ := filepath.Glob("testdata/golden/*.txt")
	if len(files) == 0 {
		t.Fatal("no golden files")
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			g := readGolden(t, path)
			out := play(t, g.in)
			if *update {
				g.out = out
				if err := os.WriteFile(path, []byte(g.String()), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if diff := cmp.Diff(g.out, out); diff != "" {
				t.Errorf("out (-want +got):\n%s", diff)
			}
		})
	}
}
