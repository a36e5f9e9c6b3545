package policy

import (
	"encoding/json"

	"github.com/toolgate/toolgate/internal/wire"
)

// RestoreReasoning puts stored reasoning back into the assistant messages
// that lack it (field is the upstream's reasoning field): found by the
// turn's tool-call ids, else by its content. It returns the messages (the
// input itself when nothing changed), how many turns were restored, and
// how many tool-call turns lacked reasoning the store did not have.
func RestoreReasoning(msgs []wire.Message, field string, store ReasoningStore) ([]wire.Message, int, int) {
	out := msgs
	restored, missed := 0, 0
	for i := range msgs {
		m := &msgs[i]
		if m.Role != "assistant" || m.Raw == nil {
			continue
		}
		obj, err := wire.ParseObject(m.Raw)
		if err != nil {
			continue
		}
		if v, ok := obj.Get(field); ok && string(v) != "null" && string(v) != `""` {
			continue
		}
		reasoning, found := "", false
		for k, c := range m.ToolCalls {
			// A turn's reasoning is stored under each of its calls' ids, so
			// its first calls suffice: a message of 50,000 calls costs no
			// more store lookups than one of four.
			if k == maxLookups {
				break
			}
			if reasoning, found = store.Get("call:" + c.ID); found {
				break
			}
		}
		if !found && len(m.ToolCalls) == 0 {
			var content string
			if json.Unmarshal(m.Content, &content) == nil && content != "" {
				reasoning, found = store.Get(ContentKey(content))
			}
		}
		if !found {
			if len(m.ToolCalls) > 0 {
				missed++
			}
			continue
		}
		if restored == 0 {
			out = append([]wire.Message(nil), msgs...)
		}
		restored++
		r, _ := json.Marshal(reasoning) // a string always marshals
		obj.Set(field, r)
		out[i].Raw = obj.JSON()
	}
	return out, restored, missed
}

// maxLookups bounds the store lookups for one assistant turn.
const maxLookups = 4

// RememberReasoning stores a finished turn's reasoning under each of its
// call ids, or under its content when it made no call.
func RememberReasoning(store ReasoningStore, reasoning string, calls []wire.CollectedCall, content string) {
	if reasoning == "" {
		return
	}
	for _, c := range calls {
		store.Put("call:"+c.ID, reasoning)
	}
	if len(calls) == 0 && content != "" {
		store.Put(ContentKey(content), reasoning)
	}
}
