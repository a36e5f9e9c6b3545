// Package wiretest builds wire values for tests.
package wiretest

import (
	"testing"

	"github.com/toolgate/toolgate/internal/wire"
)

// Messages decodes a JSON array of messages, as a request carrying them
// would, failing the test when it does not decode.
func Messages(t testing.TB, js string) []wire.Message {
	t.Helper()
	return Request(t, `"messages":`+js).Messages
}

// Request decodes a chat request whose members are model "m" and members
// (a JSON object's members, without braces), failing the test when it
// does not decode.
func Request(t testing.TB, members string) *wire.ChatRequest {
	t.Helper()
	if members != "" && members[0] != ',' {
		members = "," + members
	}
	r, err := wire.DecodeRequest([]byte(`{"model":"m"` + members + `}`))
	if err != nil {
		t.Fatal(err)
	}
	return r
}
