package repair

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strconv"

	"github.com/toolgate/toolgate/internal/enum"
	"github.com/toolgate/toolgate/internal/wire"
)

// ContentMode is how [ToolCallContent] writes the content of assistant
// messages that carry tool_calls.
type ContentMode uint8

// Content modes.
const (
	ContentKeep  ContentMode = iota // leave it as the client sent it (the default)
	ContentNull                     // "" becomes null
	ContentEmpty                    // null or absent becomes ""
)

var contentModeNames = []string{"keep", "null", "empty"}

func (m ContentMode) String() string { return contentModeNames[m] }

// Names are the configured names of the content modes.
func (ContentMode) Names() []string { return slices.Clone(contentModeNames) }

// Parse reads a configured mode: keep, null or empty.
func (ContentMode) Parse(s string) (ContentMode, error) {
	return enum.Parse[ContentMode](contentModeNames, s)
}

// ToolCallSteps switches the normalizations on and off.
type ToolCallSteps struct {
	StringifyArguments bool
	SynthesizeIDs      bool
	DedupeCallIDs      bool
	ToolCallContent    ContentMode
}

// ToolCallFixes counts what each normalization changed.
type ToolCallFixes struct {
	StringifiedArguments int
	SynthesizedIDs       int
	DedupedCallIDs       int
	ToolCallContent      int
	ShortenedIDs         int // ids over the upstream's length limit, rewritten (ShortenIDs)
}

// Any reports whether any normalization changed something.
func (f ToolCallFixes) Any() bool {
	return f.StringifiedArguments+f.SynthesizedIDs+f.DedupedCallIDs+f.ToolCallContent+f.ShortenedIDs > 0
}

// Header is the X-Toolgate-Normalize value, listing the non-zero counts,
// e.g. "synthesized_ids=1; arguments_to_string=2".
func (f ToolCallFixes) Header() string {
	var s string
	add := func(name string, n int) {
		if n == 0 {
			return
		}
		if s != "" {
			s += "; "
		}
		s += name + "=" + strconv.Itoa(n)
	}
	add("arguments_to_string", f.StringifiedArguments)
	add("synthesized_ids", f.SynthesizedIDs)
	add("deduped_call_ids", f.DedupedCallIDs)
	add("tool_call_content", f.ToolCallContent)
	add("shortened_call_ids", f.ShortenedIDs)
	return s
}

// FixToolCalls runs the switched-on steps in order. The input is not
// modified; when nothing changes it is returned as is.
func FixToolCalls(msgs []wire.Message, s ToolCallSteps) ([]wire.Message, ToolCallFixes) {
	var f ToolCallFixes
	if s.StringifyArguments {
		msgs, f.StringifiedArguments = StringifyArguments(msgs)
	}
	if s.SynthesizeIDs {
		msgs, f.SynthesizedIDs = SynthesizeIDs(msgs)
	}
	if s.DedupeCallIDs {
		msgs, f.DedupedCallIDs = DedupeCallIDs(msgs)
	}
	if s.ToolCallContent != ContentKeep {
		msgs, f.ToolCallContent = ToolCallContent(msgs, s.ToolCallContent)
	}
	return msgs, f
}

// editCalls applies edit to each assistant message with tool_calls; edit
// returns the message's new calls and whether it changed them. Changed
// messages are rewritten (only their tool_calls member); the slice is copied
// on the first change.
func editCalls(msgs []wire.Message, edit func(i int, m *wire.Message) ([]wire.ToolCall, int)) ([]wire.Message, int) {
	out, total := msgs, 0
	for i := range msgs {
		m := &msgs[i]
		if m.Role != "assistant" || len(m.ToolCalls) == 0 {
			continue
		}
		calls, n := edit(i, m)
		if n == 0 {
			continue
		}
		if total == 0 {
			out = append([]wire.Message(nil), msgs...)
		}
		total += n
		out[i] = withCalls(*m, calls)
	}
	return out, total
}

// StringifyArguments turns arguments given as a JSON object (or any
// non-string JSON) into a string holding those bytes.
func StringifyArguments(msgs []wire.Message) ([]wire.Message, int) {
	return editCalls(msgs, func(_ int, m *wire.Message) ([]wire.ToolCall, int) {
		var calls []wire.ToolCall
		n := 0
		for k, c := range m.ToolCalls {
			a := c.Function.Arguments
			if len(a) == 0 || a[0] == '"' || string(a) == "null" {
				continue
			}
			if calls == nil {
				calls = append([]wire.ToolCall(nil), m.ToolCalls...)
			}
			s, _ := json.Marshal(string(a))
			calls[k] = withCallFields(c, "", s)
			n++
		}
		return calls, n
	})
}

// SynthesizeIDs gives every call with an empty or missing id a
// deterministic id (see the package doc).
func SynthesizeIDs(msgs []wire.Message) ([]wire.Message, int) {
	return editCalls(msgs, func(_ int, m *wire.Message) ([]wire.ToolCall, int) {
		var calls []wire.ToolCall
		var msgHash [sha256.Size]byte // of the message's bytes, taken once
		n := 0
		for k, c := range m.ToolCalls {
			if c.ID != "" {
				continue
			}
			if calls == nil {
				calls = append([]wire.ToolCall(nil), m.ToolCalls...)
				raw := m.Raw
				if raw == nil {
					raw, _ = json.Marshal(m)
				}
				msgHash = sha256.Sum256(raw)
			}
			buf := binary.BigEndian.AppendUint64(msgHash[:], uint64(k))
			sum := sha256.Sum256(buf)
			calls[k] = withCallFields(c, "call_tg"+hex.EncodeToString(sum[:8]), nil)
			n++
		}
		return calls, n
	})
}

// DedupeCallIDs removes exact repeats of a call inside one message and
// renames a different call that reuses an id (see the package doc).
func DedupeCallIDs(msgs []wire.Message) ([]wire.Message, int) {
	return editCalls(msgs, func(_ int, m *wire.Message) ([]wire.ToolCall, int) {
		var ids wire.Names
		dup := false
		for _, c := range m.ToolCalls {
			if c.ID != "" && !ids.Add(c.ID) {
				dup = true
				break
			}
		}
		if !dup {
			return nil, 0
		}
		used := make(map[string]bool, len(m.ToolCalls))
		for _, c := range m.ToolCalls {
			used[c.ID] = true
		}
		// The first call made with each id, and its arguments' text
		// (computed once: comparing a repeat costs the repeat's size).
		type made struct {
			call wire.ToolCall
			args string
		}
		first := map[string]made{}
		// next is, per reused id, the smallest suffix that may still be
		// free: every smaller one is taken, so renaming n calls costs O(n).
		next := map[string]int{}
		calls := make([]wire.ToolCall, 0, len(m.ToolCalls))
		n := 0
		for _, c := range m.ToolCalls {
			orig, seen := first[c.ID]
			switch {
			case c.ID == "" || !seen:
				first[c.ID] = made{c, c.Function.ArgumentsText()}
				calls = append(calls, c)
			case orig.call.Function.Name == c.Function.Name && orig.args == c.Function.ArgumentsText():
				n++ // an exact repeat: one call, one reply
			default:
				k := max(next[c.ID], 2)
				id := c.ID + "_" + strconv.Itoa(k)
				for used[id] {
					k++
					id = c.ID + "_" + strconv.Itoa(k)
				}
				next[c.ID] = k + 1
				used[id] = true
				calls = append(calls, withCallFields(c, id, nil))
				n++
			}
		}
		return calls, n
	})
}

// ShortenIDs rewrites every tool-call id longer than max characters, in
// the calls that make it and in the replies that answer it, to one that
// fits (docs/quirks.md C04: OpenAI refuses ids over 40): "call_" and letters and
// digits from a hash of the id (only the letters and digits under 10
// characters), never an id the transcript already uses. The same id gets
// the same new id in every message, so pairs stay pairs; the rewrite is
// for this request only. It returns how many ids it rewrote.
func ShortenIDs(msgs []wire.Message, max int) ([]wire.Message, int) {
	used := map[string]bool{}
	var long []string
	note := func(id string) {
		if id == "" || used[id] {
			return
		}
		used[id] = true
		if len(id) > max {
			long = append(long, id)
		}
	}
	for i := range msgs {
		for _, c := range msgs[i].ToolCalls {
			note(c.ID)
		}
		note(msgs[i].ToolCallID)
	}
	if len(long) == 0 {
		return msgs, 0
	}
	short := make(map[string]string, len(long))
	for _, id := range long {
		for n := 0; ; n++ {
			s := hashID(id, n, max)
			if !used[s] {
				used[s], short[id] = true, s
				break
			}
		}
	}
	out, _ := editCalls(msgs, func(_ int, m *wire.Message) ([]wire.ToolCall, int) {
		var calls []wire.ToolCall
		for k, c := range m.ToolCalls {
			if s, ok := short[c.ID]; ok {
				if calls == nil {
					calls = append([]wire.ToolCall(nil), m.ToolCalls...)
				}
				calls[k] = withCallFields(c, s, nil)
			}
		}
		return calls, len(calls)
	})
	for i := range out {
		if s, ok := short[out[i].ToolCallID]; ok && out[i].Role == "tool" {
			if &out[0] == &msgs[0] {
				out = append([]wire.Message(nil), msgs...)
			}
			idJSON, _ := json.Marshal(s)
			out[i] = withMember(out[i], "tool_call_id", idJSON)
			out[i].ToolCallID = s
		}
	}
	return out, len(short)
}

// hashID is attempt n at a new id of at most max characters for id.
func hashID(id string, n, max int) string {
	sum := sha256.Sum256([]byte(id + "\x00" + strconv.Itoa(n)))
	b := make([]byte, 0, 5+len(sum))
	if max >= 10 {
		b = append(b, "call_"...)
	}
	for _, c := range sum {
		if len(b) == max || len(b) == 29 {
			break
		}
		b = append(b, base62[int(c)%len(base62)])
	}
	return string(b)
}

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// ToolCallContent rewrites the content of assistant messages that carry
// tool_calls according to mode.
func ToolCallContent(msgs []wire.Message, mode ContentMode) ([]wire.Message, int) {
	var want json.RawMessage
	out, n := msgs, 0
	for i := range msgs {
		m := &msgs[i]
		if m.Role != "assistant" || len(m.ToolCalls) == 0 {
			continue
		}
		c := string(m.Content)
		switch {
		case mode == ContentNull && c == `""`:
			want = json.RawMessage("null")
		case mode == ContentEmpty && (c == "" || c == "null"):
			want = json.RawMessage(`""`)
		default:
			continue
		}
		if n == 0 {
			out = append([]wire.Message(nil), msgs...)
		}
		n++
		out[i] = withMember(*m, "content", want)
		out[i].Content = want
	}
	return out, n
}

// withCalls returns m with its calls replaced; Raw is rewritten with only
// the tool_calls member changed.
func withCalls(m wire.Message, calls []wire.ToolCall) wire.Message {
	size := 2
	for k := range calls {
		size += len(calls[k].Raw) + 1
	}
	arr := make([]byte, 1, size)
	arr[0] = '['
	for k := range calls {
		if k > 0 {
			arr = append(arr, ',')
		}
		if calls[k].Raw != nil {
			arr = append(arr, calls[k].Raw...)
			continue
		}
		b, _ := json.Marshal(calls[k]) // typed fields only: cannot fail
		arr = append(arr, b...)
	}
	arr = append(arr, ']')
	m = withMember(m, "tool_calls", arr)
	m.ToolCalls = calls
	return m
}

// withMember returns m with one member of its Raw replaced (m.Raw stays
// nil for a message the gateway built).
func withMember(m wire.Message, key string, value json.RawMessage) wire.Message {
	if m.Raw != nil {
		m.Raw, _ = wire.SetMember(m.Raw, value, key) // Raw came from a decoded request: an object
	}
	return m
}

// withCallFields returns c with a new id (when id != "") and/or new raw
// arguments (when args != nil), rewriting only those members of its Raw.
func withCallFields(c wire.ToolCall, id string, args json.RawMessage) wire.ToolCall {
	if id != "" {
		c.ID = id
	}
	if args != nil {
		c.Function.Arguments = args
	}
	if c.Raw == nil {
		return c
	}
	raw, ok := c.Raw, true
	if id != "" {
		idJSON, _ := json.Marshal(id)
		raw, ok = wire.SetMember(raw, idJSON, "id")
	}
	if args != nil && ok {
		if raw, ok = wire.SetMember(raw, args, "function", "arguments"); !ok {
			// No function object to put them in: the call is rebuilt
			// from its typed fields.
			c.Raw = nil
			return c
		}
	}
	c.Raw = raw
	return c
}
