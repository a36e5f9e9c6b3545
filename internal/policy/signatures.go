package policy

import (
	"context"
	"encoding/json"

	"github.com/toolgate/toolgate/internal/wire"
)

// Gemini's OpenAI-compatible dialect signs each step's first tool call
// (extra_content.google.thought_signature) and refuses a replayed call
// without its signature; most clients drop the member when they rebuild
// the assistant message. These functions keep it for an upstream with the
// thought_signatures quirk: a call's extra_content is remembered under its
// id (in its own key space) and put back on a replayed call that lacks it.

// signatureSpace is the key space of remembered extra_content members.
const signatureSpace = "signature:"

// SkipSignature is the placeholder Gemini documents for a call whose
// signature is not known: the check is skipped instead of the request
// refused.
const SkipSignature = "skip_thought_signature_validator"

// placeholder is the extra_content a call without a known signature gets.
var placeholder = json.RawMessage(`{"google":{"thought_signature":"` + SkipSignature + `"}}`)

// RememberSignatures stores the extra_content of each call that carries a
// thought signature, under the call's id, in one write. It returns the
// store's failure.
func RememberSignatures(ctx context.Context, store ReasoningStore, calls []wire.CollectedCall) error {
	var entries map[string]string // made for the first signed call: most answers have none
	for _, c := range calls {
		if !signed(json.RawMessage(c.ExtraContent)) {
			continue
		}
		if entries == nil {
			entries = map[string]string{}
		}
		entries[signatureKey(c.ID)] = c.ExtraContent
	}
	if entries == nil {
		return nil
	}
	return store.PutMany(ctx, entries)
}

// signed reports whether an extra_content member holds a thought
// signature.
func signed(extra json.RawMessage) bool { return wire.ThoughtSignature(extra) != "" }

// RestoreSignatures puts remembered extra_content back on the first call
// of each assistant message that lacks a signature (Gemini checks the
// first call of each step; one key per message, all looked up at once).
// In a conversation that shows signing — a call that carries a signature,
// or got one back — a first call still without one gets the placeholder
// (Placeholders counts them). A conversation that shows none is left as
// it is: an upstream that never signs has no use for the member, and
// OpenAI's own refuses members it does not know.
func RestoreSignatures(ctx context.Context, msgs []wire.Message, store ReasoningStore) Restored {
	r := Restored{Messages: msgs}
	steps := 0
	for i := range msgs {
		if replaysCalls(&msgs[i]) {
			steps++
		}
	}
	if steps == 0 {
		return r
	}
	lacking := make([]int, 0, steps) // messages whose first call is unsigned
	keys := make([]string, 0, steps)
	shows := false
	for i := range msgs {
		m := &msgs[i]
		if !replaysCalls(m) {
			continue
		}
		first := signed(m.ToolCalls[0].Extra)
		shows = shows || first
		for _, c := range m.ToolCalls[1:] {
			if shows {
				break
			}
			shows = signed(c.Extra)
		}
		if !first {
			lacking = append(lacking, i)
			keys = append(keys, signatureKey(m.ToolCalls[0].ID))
		}
	}
	if len(lacking) == 0 {
		return r
	}
	found, err := store.GetMany(ctx, keys) // on a failure every lookup misses
	r.Err = err
	var unsigned []int // messages whose first call is still unsigned
	for k, i := range lacking {
		v, ok := found[keys[k]]
		if !ok {
			r.Missed++
			unsigned = append(unsigned, i)
			continue
		}
		if setFirstExtra(&r, i, json.RawMessage(v)) {
			r.Restored++
			shows = true
		}
	}
	if shows {
		for _, i := range unsigned {
			if setFirstExtra(&r, i, placeholder) {
				r.Placeholders++
			}
		}
	}
	return r
}

// replaysCalls reports whether m is an assistant message that replays
// tool calls, as the client sent it.
func replaysCalls(m *wire.Message) bool {
	return m.Role == "assistant" && len(m.ToolCalls) > 0 && m.Raw != nil
}

// signatureKey is the store key of a call's extra_content.
func signatureKey(id string) string { return signatureSpace + "call:" + id }

// setFirstExtra sets the extra_content of message i's first call, on a
// copy of the messages made at the first change.
func setFirstExtra(r *Restored, i int, extra json.RawMessage) bool {
	m := r.Messages[i]
	obj, err := wire.ParseObject(m.Raw)
	if err != nil {
		return false
	}
	rawCalls, _ := obj.Get("tool_calls")
	var calls []json.RawMessage
	if json.Unmarshal(rawCalls, &calls) != nil || len(calls) == 0 {
		return false
	}
	call, err := wire.ParseObject(calls[0])
	if err != nil {
		return false
	}
	call.Set("extra_content", extra)
	calls[0] = call.JSON()
	arr, _ := json.Marshal(calls) // raw messages marshal as they are
	obj.Set("tool_calls", arr)
	if r.Restored+r.Placeholders == 0 {
		r.Messages = append([]wire.Message(nil), r.Messages...)
	}
	m.Raw = obj.JSON()
	m.ToolCalls = append([]wire.ToolCall(nil), m.ToolCalls...)
	m.ToolCalls[0].Raw = calls[0]
	m.ToolCalls[0].Extra = extra
	r.Messages[i] = m
	return true
}
