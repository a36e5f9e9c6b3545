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
		var s strings.Builder
		for line := range strings.Lines(in) {
			s.WriteString("data: " + strings.TrimSuffix(line, "\n") + "\n\n")
		}
		streams[filepath.Base(path)] = []byte(s.String())
	}
	return streams
}
