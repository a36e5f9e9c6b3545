// Package wiretest builds wire values for tests.
package wiretest

import (
	"iter"
	"strings"

	"github.com/toolgate/toolgate/internal/wire"
)

// TB is what the helpers need of a test: *testing.T, *testing.B and a
// property test's T all have it.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
}

// Messages decodes a JSON array of messages, as a request carrying them
// would (each message keeps its bytes), failing the test when it does not
// decode.
func Messages(t TB, js string) []wire.Message {
	t.Helper()
	return Request(t, `"messages":`+js).Messages
}

// Request decodes a chat request whose members are model "m" and members
// (a JSON object's members, without braces), failing the test when it
// does not decode.
func Request(t TB, members string) *wire.ChatRequest {
	t.Helper()
	if members != "" && members[0] != ',' {
		members = "," + members
	}
	r, err := wire.DecodeRequest([]byte(`{"model":"m"` + members + `}`))
	if err != nil {
		t.Fatalf("bad test request: %v", err)
	}
	return r
}

// Data yields the data of each event of an SSE body (a whole response
// read as text), the [DONE] marker aside.
func Data(body string) iter.Seq[string] {
	return func(yield func(string) bool) {
		for line := range strings.SplitSeq(body, "\n") {
			data, ok := strings.CutPrefix(line, "data: ")
			if !ok || data == "[DONE]" {
				continue
			}
			if !yield(data) {
				return
			}
		}
	}
}
