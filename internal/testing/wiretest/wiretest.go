// Package wiretest builds wire values for tests.
package wiretest

import (
	"encoding/json"
	"errors"
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

// JSON decodes b for a comparison that ignores member order, failing the
// test when it is not JSON.
func JSON(t TB, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return v
}

// Normalize feeds a translator's chunks to n, failing the test when a
// chunk is not JSON or the normalizer refuses it with anything but its
// own protocol and incomplete errors (what a fuzzed translator may make
// it say; a panic or another error is a bug).
func Normalize(t TB, n *wire.Normalizer, chunks [][]byte) {
	t.Helper()
	for _, ch := range chunks {
		if !json.Valid(ch) {
			t.Fatalf("chunk %q is not JSON", ch)
		}
		if _, _, err := n.Chunk(ch); err != nil {
			_, protocol := errors.AsType[*wire.ProtocolError](err)
			_, incomplete := errors.AsType[*wire.IncompleteError](err)
			if !protocol && !incomplete {
				t.Fatalf("normalizer error of type %T", err)
			}
		}
	}
}

// Translate feeds events to s, an upstream protocol's stream translator
// (translate.Events), skipping those it refuses, and the chunks it makes
// to one normalizer for upstream, as Normalize does; it fails the test
// when what s carries at the end is not JSON. Fuzz tests of translators
// call it with their inputs.
func Translate(t TB, s interface {
	Event(data []byte) ([][]byte, bool, error)
	Carried() []byte
}, upstream string, events ...string) {
	t.Helper()
	n := wire.NewNormalizer(wire.Options{Upstream: upstream, Quirks: wire.AllQuirks(), SingleChoice: true})
	for _, e := range events {
		chunks, _, err := s.Event([]byte(e))
		if err != nil {
			continue
		}
		Normalize(t, n, chunks)
	}
	if c := s.Carried(); c != nil && !json.Valid(c) {
		t.Fatalf("carried %q is not JSON", c)
	}
}

// TranslatesOrRefuses holds an upstream translator to what a fuzz target
// of it checks: a body that decodes as a chat request is translated into
// a JSON body, or refused with a client's error (*wire.ParamError), never
// anything else; a body that does not decode is skipped.
func TranslatesOrRefuses(t TB, body string, translate func(*wire.ChatRequest) ([]byte, error)) {
	t.Helper()
	req, err := wire.DecodeRequest([]byte(body))
	if err != nil {
		return
	}
	out, err := translate(req)
	var pe *wire.ParamError
	switch {
	case err == nil && !json.Valid(out):
		t.Fatalf("%s translated to %s", body, out)
	case err != nil && !errors.As(err, &pe):
		t.Fatalf("error of type %T: %v", err, err)
	}
}
