package wire

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// goldenStreams are the normalizer's golden inputs (testdata/normalize,
// one chunk a line) as SSE streams, one single-line data event a chunk,
// by file name.
func goldenStreams(t testing.TB) map[string][]byte {
	t.Helper()
	streams := map[string][]byte{}
	files, _ := filepath.Glob("testdata/normalize/*.txt")
	for _, path := range files {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		in, _, _ := strings.Cut(strings.SplitN(string(b), "-- in --\n", 2)[1], "-- out --")
		streams[filepath.Base(path)] = sseOf(in)
	}
	return streams
}

// sseOf is payloads, one per line, as an SSE stream: each line one
// event's data.
func sseOf(payloads string) []byte {
	var s strings.Builder
	for line := range strings.Lines(payloads) {
		s.WriteString("data: " + strings.TrimSuffix(line, "\n") + "\n\n")
	}
	return []byte(s.String())
}

// payloadsOf is payloads, one per line (the last line's newline
// optional), each as a chunk's bytes.
func payloadsOf(s string) [][]byte {
	var out [][]byte
	for line := range strings.Lines(s) {
		out = append(out, []byte(strings.TrimSuffix(line, "\n")))
	}
	return out
}
