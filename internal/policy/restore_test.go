package policy

import (
	"context"
	"errors"
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
	RememberReasoning(ctx, store, Carry{}, Turn{Reasoning: "why-a", Calls: []wire.CollectedCall{{ID: "a"}}})
	RememberReasoning(ctx, store, Carry{}, Turn{Reasoning: "why-text", Content: "It is sunny."})
	msgs := wiretest.Messages(t, `[{"role":"user","content":"x"},`+
		`{"role":"assistant","content":null,"x":1,"tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}}]},`+
		`{"role":"tool","tool_call_id":"a","content":"r"},`+
		`{"role":"assistant","content":"It is sunny."},`+
		`{"role":"assistant","content":null,"reasoning_content":"kept","tool_calls":[{"id":"b","type":"function","function":{"name":"f","arguments":"{}"}}]},`+
		`{"role":"tool","tool_call_id":"b","content":"r"},`+
		`{"role":"assistant","content":null,"tool_calls":[{"id":"zz","type":"function","function":{"name":"f","arguments":"{}"}}]}]`)
	r := RestoreReasoning(ctx, msgs, Carry{Field: "reasoning_content"}, store)
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
	// A turn is found by any of its first calls' ids.
	RememberReasoning(ctx, store, Carry{}, Turn{Reasoning: "why-d", Calls: []wire.CollectedCall{{ID: "d"}}})
	second := wiretest.Messages(t, `[{"role":"assistant","content":null,"tool_calls":[`+
		`{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}},{"id":"d","type":"function","function":{"name":"f","arguments":"{}"}}]}]`)
	if r := RestoreReasoning(ctx, second, Carry{Field: "reasoning_content"}, store); r.Restored != 1 || !strings.Contains(string(r.Messages[0].Raw), `"reasoning_content":"why-d"`) {
		t.Errorf("by the second call: restored %d: %s", r.Restored, r.Messages[0].Raw)
	}
	// A store that fails: every lookup misses, and the failure is said.
	if r := RestoreReasoning(ctx, msgs, Carry{Field: "reasoning_content"}, failingStore{}); r.Restored != 0 || r.Missed != 2 || r.Err == nil {
		t.Errorf("a failing store: restored %d, missed %d, err %v", r.Restored, r.Missed, r.Err)
	}
}

// failingStore is a ReasoningStore whose every call fails.
type failingStore struct{}

var errStore = errors.New("store unreachable")

func (failingStore) GetMany(context.Context, []string) (map[string]string, error) {
	return nil, errStore
}
func (failingStore) PutMany(context.Context, map[string]string) error { return errStore }

// Each protocol's state lives in its own key space: what a Gemini turn
// left is never restored into a request to another protocol's upstream.
func TestRestoreSpaces(t *testing.T) {
	store := Tenant(state.NewQuotaStore(state.QuotaOptions{}), "k")
	ctx := context.Background()
	gemini := Carry{Space: "gemini:", Field: "toolgate_carried"}
	RememberReasoning(ctx, store, gemini, Turn{Reasoning: `{"calls":{"a":"sig"}}`, Calls: []wire.CollectedCall{{ID: "a"}}})
	msgs := wiretest.Messages(t, `[{"role":"assistant","content":null,"tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}}]}]`)
	if r := RestoreReasoning(ctx, msgs, Carry{Field: "reasoning_content"}, store); r.Restored != 0 || r.Missed != 1 {
		t.Errorf("another space: restored %d, missed %d", r.Restored, r.Missed)
	}
	if r := RestoreReasoning(ctx, msgs, gemini, store); r.Restored != 1 || !strings.Contains(string(r.Messages[0].Raw), `"toolgate_carried":"{\"calls\":{\"a\":\"sig\"}}"`) {
		t.Errorf("its own space: restored %d: %s", r.Restored, r.Messages[0].Raw)
	}
}

// Gemini's OpenAI-compatible dialect: a call's extra_content is put back
// on the replayed first call that lacks it; in a conversation that shows
// signing, a first call with none remembered gets the placeholder; one
// that shows none is left alone (OpenAI refuses members it does not know).
func TestRestoreSignatures(t *testing.T) {
	store := Tenant(state.NewQuotaStore(state.QuotaOptions{}), "k")
	ctx := context.Background()
	extra := `{"google":{"thought_signature":"c2lnLWE="}}`
	if err := RememberSignatures(ctx, store, []wire.CollectedCall{{ID: "a", ExtraContent: extra}, {ID: "b"}}); err != nil {
		t.Fatal(err)
	}
	call := func(id, extra string) string {
		if extra != "" {
			extra = `,"extra_content":` + extra
		}
		return `{"role":"assistant","content":null,"tool_calls":[{"id":"` + id + `","type":"function","function":{"name":"f","arguments":"{}"}` + extra + `}]},{"role":"tool","tool_call_id":"` + id + `","content":"r"}`
	}
	msgs := wiretest.Messages(t, `[{"role":"user","content":"x"},`+call("a", "")+`,`+call("made-up", "")+`]`)
	r := RestoreSignatures(ctx, msgs, store)
	if r.Restored != 1 || r.Placeholders != 1 || r.Missed != 1 {
		t.Fatalf("restored %d, placeholders %d, missed %d", r.Restored, r.Placeholders, r.Missed)
	}
	if !strings.Contains(string(r.Messages[1].Raw), `"extra_content":`+extra) ||
		!strings.Contains(string(r.Messages[3].Raw), `"thought_signature":"skip_thought_signature_validator"`) ||
		string(msgs[1].Raw) == string(r.Messages[1].Raw) {
		t.Errorf("%s\n%s", r.Messages[1].Raw, r.Messages[3].Raw)
	}
	plain := wiretest.Messages(t, `[{"role":"user","content":"x"},`+call("other", "")+`]`)
	if r := RestoreSignatures(ctx, plain, store); r.Placeholders != 0 || string(r.Messages[1].Raw) != string(plain[1].Raw) {
		t.Errorf("a conversation without signing was changed: %+v %s", r, r.Messages[1].Raw)
	}
	kept := wiretest.Messages(t, `[{"role":"user","content":"x"},`+call("a", `{"google":{"thought_signature":"a2VwdA=="}}`)+`]`)
	if r := RestoreSignatures(ctx, kept, store); r.Restored != 0 || string(r.Messages[1].Raw) != string(kept[1].Raw) {
		t.Errorf("a kept signature was replaced: %s", r.Messages[1].Raw)
	}
	// A key spelled with an escape is the same key: the call is signed.
	escaped := strings.Replace(call("a", `{"google":{"thought_signature":"a2VwdA=="}}`), `"extra_content"`, `"extra\u005fcontent"`, 1)
	kept = wiretest.Messages(t, `[{"role":"user","content":"x"},`+escaped+`]`)
	if r := RestoreSignatures(ctx, kept, store); r.Restored+r.Placeholders+r.Missed != 0 || string(r.Messages[1].Raw) != string(kept[1].Raw) {
		t.Errorf("a signature under an escaped key was not seen: restored %d, placeholders %d, missed %d: %s", r.Restored, r.Placeholders, r.Missed, r.Messages[1].Raw)
	}
	// A signed second call shows signing: the unsigned first call of
	// another turn gets the placeholder.
	second := `{"role":"assistant","content":null,"tool_calls":[{"id":"p","type":"function","function":{"name":"f","arguments":"{}"}},` +
		`{"id":"q","type":"function","function":{"name":"f","arguments":"{}"},"extra_content":{"google":{"thought_signature":"cQ=="}}}]},` +
		`{"role":"tool","tool_call_id":"p","content":"r"},{"role":"tool","tool_call_id":"q","content":"r"}`
	shown := wiretest.Messages(t, `[{"role":"user","content":"x"},`+call("unknown", "")+`,`+second+`]`)
	if r := RestoreSignatures(ctx, shown, store); r.Placeholders != 2 || r.Missed != 2 {
		t.Errorf("signing shown by a second call: %d placeholders, %d missed, want 2 and 2", r.Placeholders, r.Missed)
	}
}
