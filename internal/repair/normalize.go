package repair

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/toolgate/toolgate/internal/wire"
)

// ContentMode is how [ToolCallContent] writes the content of assistant
// messages that carry tool_calls.
type ContentMode string

// Content modes.
const (
	ContentKeep  ContentMode = "keep"  // leave it as the client sent it (the default)
	ContentNull  ContentMode = "null"  // "" becomes null
	ContentEmpty ContentMode = "empty" // null or absent becomes ""
)

// Steps switches the normalizations on and off.
type Steps struct {
	StringifyArguments bool
	SynthesizeIDs      bool
	DedupeCallIDs      bool
	ToolCallContent    ContentMode
}

// Fixes counts what each normalization changed.
type Fixes struct {
	StringifiedArguments int
	SynthesizedIDs       int
	DedupedCallIDs       int
	ToolCallContent      int
}

// Any reports whether any normalization changed something.
func (f Fixes) Any() bool {
	return f.StringifiedArguments+f.SynthesizedIDs+f.DedupedCallIDs+f.ToolCallContent > 0
}

// Header is the X-Toolgate-Normalize value, listing the non-zero counts,
// e.g. "synthesized_ids=1; arguments_to_string=2".
func (f Fixes) Header() string {
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
	return s
}

// Normalize runs the switched-on steps in order. The input is not
// modified; when nothing changes it is returned as is.
func Normalize(msgs []wire.Message, s Steps) ([]wire.Message, Fixes) {
	var f Fixes
	if s.StringifyArguments {
		msgs, f.StringifiedArguments = StringifyArguments(msgs)
	}
	if s.SynthesizeIDs {
		msgs, f.SynthesizedIDs = SynthesizeIDs(msgs)
	}
	if s.DedupeCallIDs {
		msgs, f.DedupedCallIDs = DedupeCallIDs(msgs)
	}
	if s.ToolCallContent != "" && s.ToolCallContent != ContentKeep {
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
		n := 0
		for k, c := range m.ToolCalls {
			if c.ID != "" {
				continue
			}
			if calls == nil {
				calls = append([]wire.ToolCall(nil), m.ToolCalls...)
			}
			raw := m.Raw
			if raw == nil {
				raw, _ = json.Marshal(m)
			}
			h := sha256.New()
			h.Write(raw)
			fmt.Fprintf(h, "\x00%d", k)
			calls[k] = withCallFields(c, "call_tg"+hex.EncodeToString(h.Sum(nil))[:16], nil)
			n++
		}
		return calls, n
	})
}

// DedupeCallIDs removes exact repeats of a call inside one message and
// renames a different call that reuses an id (see the package doc).
func DedupeCallIDs(msgs []wire.Message) ([]wire.Message, int) {
	return editCalls(msgs, func(_ int, m *wire.Message) ([]wire.ToolCall, int) {
		dup := false
		for a := range m.ToolCalls {
			for b := range a {
				if m.ToolCalls[a].ID != "" && m.ToolCalls[a].ID == m.ToolCalls[b].ID {
					dup = true
				}
			}
		}
		if !dup {
			return nil, 0
		}
		used := map[string]bool{}
		for _, c := range m.ToolCalls {
			used[c.ID] = true
		}
		first := map[string]wire.ToolCall{}
		calls := make([]wire.ToolCall, 0, len(m.ToolCalls))
		n := 0
		for _, c := range m.ToolCalls {
			orig, seen := first[c.ID]
			switch {
			case c.ID == "" || !seen:
				first[c.ID] = c
				calls = append(calls, c)
			case orig.Function.Name == c.Function.Name && orig.Function.ArgumentsText() == c.Function.ArgumentsText():
				n++ // an exact repeat: one call, one reply
			default:
				id := c.ID
				for k := 2; used[id]; k++ {
					id = c.ID + "_" + strconv.Itoa(k)
				}
				used[id] = true
				calls = append(calls, withCallFields(c, id, nil))
				n++
			}
		}
		return calls, n
	})
}

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
	arr := []byte{'['}
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
	if m.Raw == nil {
		return m
	}
	obj, err := wire.ParseObject(m.Raw)
	if err != nil {
		return m // Raw came from a decoded request: it is an object
	}
	obj.Set(key, value)
	m.Raw = obj.JSON()
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
	obj, err := wire.ParseObject(c.Raw)
	if err != nil {
		c.Raw = nil
		return c
	}
	if id != "" {
		idJSON, _ := json.Marshal(id)
		obj.Set("id", idJSON)
	}
	if args != nil {
		fn, _ := obj.Get("function")
		fobj, err := wire.ParseObject(fn)
		if err != nil {
			fobj = wire.Object{}
		}
		fobj.Set("arguments", args)
		obj.Set("function", fobj.JSON())
	}
	c.Raw = obj.JSON()
	return c
}
