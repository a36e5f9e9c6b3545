package wiretest

import (
	"encoding/json"

	"github.com/toolgate/toolgate/internal/wire"
)

// Translated decodes a chat body a client API's translator made
// (wire.DecodeTranslated) that is written with the blocks or items its
// messages keep inline, in the members named: they are moved to the
// request's Kept, each member left holding their indices there, as the
// translators write them. It fails the test when the body does not
// decode.
func Translated(t TB, body string, members ...string) *wire.ChatRequest {
	t.Helper()
	var kept []json.RawMessage
	b := eachKept(t, []byte(body), members, func(inline []json.RawMessage) any {
		idx := make([]int, len(inline))
		for k, v := range inline {
			idx[k] = len(kept)
			kept = append(kept, v)
		}
		return idx
	})
	req, err := wire.DecodeTranslated(b, kept, nil)
	if err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	return req
}

// Inline is a translated chat body with the blocks or items its
// messages keep by index in kept (the members named) put in their
// place, for a test to compare with the blocks it expects.
func Inline(t TB, body []byte, kept []json.RawMessage, members ...string) []byte {
	t.Helper()
	return eachKept(t, body, members, func(raw []json.RawMessage) any {
		out := make([]json.RawMessage, len(raw))
		for k, v := range raw {
			var i int
			if json.Unmarshal(v, &i) != nil || i < 0 || i >= len(kept) {
				t.Fatalf("kept member element %s is no index of the %d kept", v, len(kept))
			}
			out[k] = kept[i]
		}
		return out
	})
}

// eachKept rewrites each kept member (of those named) of body's
// messages with what fn makes of its elements.
func eachKept(t TB, body []byte, members []string, fn func([]json.RawMessage) any) []byte {
	t.Helper()
	var top map[string]json.RawMessage
	var msgs []map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	if err := json.Unmarshal(top["messages"], &msgs); err != nil {
		t.Fatalf("messages of %s: %v", body, err)
	}
	for _, m := range msgs {
		for _, name := range members {
			var els []json.RawMessage
			if v, ok := m[name]; !ok || json.Unmarshal(v, &els) != nil {
				continue
			}
			m[name] = marshal(t, fn(els))
		}
	}
	top["messages"] = marshal(t, msgs)
	return marshal(t, top)
}

func marshal(t TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	return b
}
