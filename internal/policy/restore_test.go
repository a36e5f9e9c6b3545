package policy

import (
	"context"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/state"
	"github.com/toolgate/toolgate/internal/testing/wiretest"
	"github.com/toolgate/toolgate/internal/wire"
)

// Equal texts give equal content keys, different texts different ones.
func TestContentKey(t *testing.T) {
	x1, x2 := ContentKey("x"), ContentKey(strings.Repeat("x", 1))
	if ContentKey("x") == ContentKey("y") || x1 != x2 {
		t.Error("content keys: equal texts must give equal keys, different texts different ones")
	}
}

// Restore fills only assistant turns that lack reasoning, by call id or by
// content, counts tool-call turns it could not fill, and keeps other
// members' bytes.
func TestRestoreReasoning(t *testing.T) {
	store := Tenant(state.NewQuotaStore(state.QuotaOptions{}), "k")
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
