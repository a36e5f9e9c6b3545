package policy

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/wire"
	"github.com/toolgate/toolgate/internal/wire/wiretest"
)

// The memory store is bounded in size and time.
func TestMemoryStore(t *testing.T) {
	now := time.Unix(0, 0)
	s := NewMemoryStore(2, time.Minute, func() time.Time { return now })
	ctx := context.Background()
	s.Put(ctx, "a", "ra")
	s.Put(ctx, "b", "rb")
	s.Get(ctx, "a") // a is now the most recent
	s.Put(ctx, "c", "rc")
	if _, ok, _ := s.Get(ctx, "b"); ok || s.Len() != 2 {
		t.Errorf("b should have been evicted; len %d", s.Len())
	}
	if v, ok, _ := s.Get(ctx, "a"); !ok || v != "ra" {
		t.Errorf("a = %q %v", v, ok)
	}
	now = now.Add(2 * time.Minute)
	if _, ok, _ := s.Get(ctx, "c"); ok {
		t.Error("an expired entry was returned")
	}
	x1, x2 := ContentKey("x"), ContentKey(strings.Repeat("x", 1))
	if ContentKey("x") == ContentKey("y") || x1 != x2 {
		t.Error("content keys: equal texts must give equal keys, different texts different ones")
	}
}

// Restore fills only assistant turns that lack reasoning, by call id or by
// content, counts tool-call turns it could not fill, and keeps other
// members' bytes.
func TestRestoreReasoning(t *testing.T) {
	store := NewMemoryStore(0, 0, nil)
	ctx := context.Background()
	RememberReasoning(ctx, store, Turn{Reasoning: "why-a", Calls: []wire.CollectedCall{{ID: "a"}}})
	RememberReasoning(ctx, store, Turn{Reasoning: "why-text", Content: "It is sunny."})
	msgs := wiretest.Messages(t, `[{"role":"user","content":"x"},`+
		`{"role":"assistant","content":null,"x":1,"tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}}]},`+
		`{"role":"tool","tool_call_id":"a","content":"r"},`+
		`{"role":"assistant","content":"It is sunny."},`+
		`{"role":"assistant","content":null,"reasoning_content":"kept","tool_calls":[{"id":"b","type":"function","function":{"name":"f","arguments":"{}"}}]},`+
		`{"role":"tool","tool_call_id":"b","content":"r"},`+
		`{"role":"assistant","content":null,"tool_calls":[{"id":"zz","type":"function","function":{"name":"f","arguments":"{}"}}]}]`)
	r := RestoreReasoning(ctx, msgs, "reasoning_content", store)
	out, restored, missed := r.Messages, r.Restored, r.Missed
	if restored != 2 || missed != 1 || r.Err != nil {
		t.Fatalf("restored %d missed %d", restored, missed)
	}
	if string(out[1].Raw) != `{"role":"assistant","content":null,"x":1,"tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}}],"reasoning_content":"why-a"}` ||
		!strings.Contains(string(out[3].Raw), `"reasoning_content":"why-text"`) || string(out[4].Raw) != string(msgs[4].Raw) {
		t.Errorf("%s\n%s\n%s", out[1].Raw, out[3].Raw, out[4].Raw)
	}
	if string(msgs[1].Raw) == string(out[1].Raw) {
		t.Error("the input was modified")
	}
}
