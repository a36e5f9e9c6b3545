package policy

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/toolgate/toolgate/internal/wire"
)

// Restored is what RestoreReasoning did.
type Restored struct {
	// Messages are the messages (the input itself when nothing changed).
	Messages []wire.Message
	// Restored counts the turns whose reasoning was put back; Missed the
	// tool-call turns that lacked reasoning the store did not have;
	// Placeholders the turns sent with the upstream's placeholder instead.
	Restored, Missed, Placeholders int
	// Err is the store's first failure; a turn it failed for is a miss.
	Err error
}

// Carry is how the reasoning state an upstream needs back is kept and put
// back, one rule per protocol: what a finished turn leaves (its reasoning
// text for an upstream of chat completions such as DeepSeek's thinking
// mode; Anthropic's signed thinking blocks; Gemini's thought signatures)
// is stored under the turn's call ids (or its text's hash when it made no
// call), in the protocol's own key space, and restored into the
// assistant message that replays the turn, in Field.
type Carry struct {
	// Space prefixes the store's keys, so that one protocol's state is
	// never restored into another's request (a fallback route to another
	// protocol finds nothing rather than something it cannot read).
	Space string
	// Field is the assistant message member the state is restored into:
	// the upstream's reasoning field, or the gateway's own member that a
	// translator reads.
	Field string
}

// RestoreReasoning puts stored reasoning back into the assistant messages
// that lack it (in c.Field): found by the turn's tool-call ids, else by
// its content. Every message's keys are looked up at once.
func RestoreReasoning(ctx context.Context, msgs []wire.Message, c Carry, store ReasoningStore) Restored {
	turns, keys := lookups(msgs, c)
	if len(turns) == 0 {
		return Restored{Messages: msgs}
	}
	found, err := store.GetMany(ctx, keys) // on a failure every lookup misses
	r := Restored{Messages: msgs, Err: err}
	for _, t := range turns {
		reasoning, ok := "", false
		for _, k := range t.keys {
			if reasoning, ok = found[k]; ok {
				break
			}
		}
		if !ok {
			if len(msgs[t.i].ToolCalls) > 0 {
				r.Missed++
			}
			continue
		}
		if reasoning == "" {
			continue // the turn had none (RememberReasoning's mark): nothing to restore, nothing missed
		}
		obj, err := wire.ParseObject(msgs[t.i].Raw)
		if err != nil {
			continue
		}
		if r.Restored == 0 {
			r.Messages = append([]wire.Message(nil), msgs...)
		}
		r.Restored++
		v, _ := json.Marshal(reasoning) // a string always marshals
		obj.Set(c.Field, v)
		r.Messages[t.i].Raw = obj.JSON()
	}
	return r
}

// lacking is an assistant turn that lacks its reasoning: its message,
// and its keys in the order they are tried.
type lacking struct {
	i    int
	keys []string
}

// lookups are the turns of msgs that lack their reasoning, and all their
// keys. The lists are sized first and the keys written into one string:
// a transcript's lookups cost a few bytes per assistant turn.
func lookups(msgs []wire.Message, c Carry) ([]lacking, []string) {
	assistants, n, size := 0, 0, 0
	for i := range msgs {
		if m := &msgs[i]; m.Role == "assistant" && m.Raw != nil {
			assistants++
			n += max(1, min(len(m.ToolCalls), maxLookups))
			for _, call := range m.ToolCalls[:min(len(m.ToolCalls), maxLookups)] {
				size += len(c.Space) + len("call:") + len(call.ID)
			}
			if len(m.ToolCalls) == 0 {
				size += len(c.Space) + contentKeyLen
			}
		}
	}
	if assistants == 0 {
		return nil, nil
	}
	turns := make([]lacking, 0, assistants)
	keys := make([]string, 0, n)
	var all strings.Builder // what is written is never changed: each key is a view of it
	all.Grow(size)
	// key ends a key, written into all from at.
	key := func(at int) { keys = append(keys, all.String()[at:]) }
	var text []byte
	var contentKey [contentKeyLen]byte
	for i := range msgs {
		m := &msgs[i]
		if m.Role != "assistant" || m.Raw == nil {
			continue
		}
		// Read in place: only a message that gets its reasoning back is
		// parsed, to be written again.
		if v, ok := wire.Member(m.Raw, c.Field); ok && string(v) != "null" && string(v) != `""` {
			continue
		}
		from := len(keys)
		// A turn's reasoning is stored under each of its calls' ids, so
		// its first calls suffice: a message of 50,000 calls costs no
		// more keys than one of four.
		for _, call := range m.ToolCalls[:min(len(m.ToolCalls), maxLookups)] {
			at := all.Len()
			all.WriteString(c.Space)
			all.WriteString("call:")
			all.WriteString(call.ID)
			key(at)
		}
		if len(m.ToolCalls) == 0 {
			// The text read into the lookups' own buffer and its key
			// written from it: nothing allocated for the turn.
			var ok bool
			if text, ok = wire.AppendText(text[:0], m.Content); !ok || len(text) == 0 {
				continue
			}
			at := all.Len()
			all.WriteString(c.Space)
			all.Write(appendContentKey(contentKey[:0], text))
			key(at)
		}
		turns = append(turns, lacking{i: i, keys: keys[from:len(keys):len(keys)]})
	}
	return turns, keys
}

// maxLookups bounds the keys looked up for one assistant turn.
const maxLookups = 4

// Turn is one finished assistant turn: its reasoning, the calls it made
// and its text.
type Turn struct {
	Reasoning string
	Calls     []wire.CollectedCall
	Content   string
}

// RememberReasoning stores a finished turn's reasoning under each of its
// call ids, or under its content when it made no call, in c's key space,
// in one write. A tool-call turn without reasoning (thinking off) is
// stored as "", so that replaying it later is no restore miss: a miss is
// a turn that had reasoning the store no longer has. It returns the
// store's failure.
func RememberReasoning(ctx context.Context, store ReasoningStore, c Carry, t Turn) error {
	if t.Reasoning == "" && len(t.Calls) == 0 {
		return nil
	}
	entries := make(map[string]string, max(len(t.Calls), 1))
	for _, call := range t.Calls {
		entries[c.Space+"call:"+call.ID] = t.Reasoning
	}
	if len(t.Calls) == 0 && t.Content != "" {
		entries[c.Space+ContentKey(t.Content)] = t.Reasoning
	}
	return store.PutMany(ctx, entries)
}
