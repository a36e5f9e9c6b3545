package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// Quirks switches the normalizations a [Collector] applies to one
// upstream's tool-call fragments (QUIRKS section A). The zero value is
// strict: every departure from the protocol is a *ProtocolError.
type Quirks struct {
	// MissingIndex (A01): a fragment without an index continues the last
	// call, or starts a new one when it carries a new id.
	MissingIndex bool
	// IndexReuse (A02): a fragment with a new id at an index whose call
	// already has another id starts a new call instead of conflicting.
	IndexReuse bool
	// RepeatedName (A10): a name repeated on a continuation is dropped
	// instead of being appended.
	RepeatedName bool
	// ArgumentsObject (A12): arguments sent as a JSON value other than a
	// string are taken as that value's text.
	ArgumentsObject bool
}

// ProtocolError is a tool-call fragment stream that breaks the protocol
// (SPEC §2): a malformed fragment, an id conflict, or a call left without
// id or name.
type ProtocolError struct {
	Index int // the call's index as the upstream sent it, or -1
	Msg   string
}

func (e *ProtocolError) Error() string {
	if e.Index < 0 {
		return "wire: tool-call protocol error: " + e.Msg
	}
	return fmt.Sprintf("wire: tool-call protocol error at index %d: %s", e.Index, e.Msg)
}

// CollectedCall is one call as the collector assembled it.
type CollectedCall struct {
	ID        string
	Name      string
	Arguments string
}

// Fragment is one canonical tool-call fragment to send to the client:
// Index is the call's canonical index (0, 1, … in order of appearance); the
// first fragment of a call carries its ID, type and Name, later ones only
// argument text.
type Fragment struct {
	Index     int
	ID        string // set on the first fragment only
	Name      string // set on the first fragment only
	Arguments string
	// Extra holds the fragment's members other than index, id, type and
	// function, passed on as received (Gemini's extra_content with its
	// thought_signature must round-trip, QUIRKS A33).
	Extra Object
}

// MarshalJSON writes the fragment in OpenAI's delta shape.
func (f Fragment) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 64+len(f.Arguments))
	b = append(b, `{"index":`...)
	b = strconv.AppendInt(b, int64(f.Index), 10)
	if f.ID != "" {
		b = append(b, `,"id":`...)
		b = appendString(b, f.ID)
		b = append(b, `,"type":"function","function":{"name":`...)
		b = appendString(b, f.Name)
		b = append(b, `,"arguments":`...)
	} else {
		b = append(b, `,"function":{"arguments":`...)
	}
	b = appendString(b, f.Arguments)
	b = append(b, '}')
	for _, m := range f.Extra.members {
		b = append(b, ',')
		b = m.appendKey(b)
		b = append(b, ':')
		b = append(b, m.value...)
	}
	return append(b, '}'), nil
}

// Collector aggregates streamed tool-call fragments by index (SPEC §2) and
// turns them into canonical fragments. One implementation serves streams,
// non-streamed responses and the completion policy. A fragment whose call
// has no id or no name yet is held back and released, merged, once both
// are known; text is never held.
//
// A Collector is created per response and is not safe for concurrent use.
type Collector struct {
	quirks Quirks
	calls  []*collecting
	byIdx  map[int]*collecting // upstream index → the call now using it
	byID   map[string]*collecting
	last   *collecting
	fixes  map[string]int
}

type collecting struct {
	upIndex int
	index   int // canonical
	id      string
	name    string
	args    bytes.Buffer
	held    bytes.Buffer // argument text not yet sent (before id and name were known)
	extra   Object       // unknown members not yet sent
	started bool         // the first canonical fragment went out
}

// Bounds on what one response may make the collector hold, so hostile
// input (endless fragments of one call, or endless calls) cannot grow it
// without limit.
const (
	MaxCallArguments = 8 << 20 // bytes of arguments per call
	MaxCalls         = 1024    // calls per response
)

// NewCollector returns a Collector applying q.
func NewCollector(q Quirks) *Collector {
	return &Collector{quirks: q, fixes: map[string]int{}} // the index maps are made with the first call
}

// Fixes returns how many times each normalization was applied, by kind.
func (c *Collector) Fixes() map[string]int { return c.fixes }

// Calls reports how many calls have been started.
func (c *Collector) Calls() int { return len(c.calls) }

// optString decodes an optional string field: absent, null and "" are "".
func optString(raw json.RawMessage, field string) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	s, ok := stringOf(raw)
	if !ok {
		return "", &ProtocolError{Index: -1, Msg: field + " must be a string, got " + kindAt(raw, 0)}
	}
	return s, nil
}

// Add takes the raw tool_calls array of one delta and returns the canonical
// fragments to send now, in order. An error is a *ProtocolError; after one,
// the response must be ended as a violation.
func (c *Collector) Add(toolCalls json.RawMessage) ([]Fragment, error) {
	if len(toolCalls) == 0 || string(toolCalls) == "null" {
		return nil, nil
	}
	raws, ok := elements(toolCalls, nil)
	if !ok {
		return nil, &ProtocolError{Index: -1, Msg: "tool_calls must be an array, got " + kindAt(toolCalls, 0)}
	}
	var out []Fragment
	for _, raw := range raws {
		f, err := c.add(raw, -1)
		if err != nil {
			return nil, err
		}
		out = append(out, f...)
	}
	return out, nil
}

// AddMessage takes the tool_calls array of a whole (non-streamed) message,
// whose calls carry no index: each call's position is its index.
func (c *Collector) AddMessage(toolCalls json.RawMessage) error {
	if len(toolCalls) == 0 || string(toolCalls) == "null" {
		return nil
	}
	raws, ok := elements(toolCalls, nil)
	if !ok {
		return &ProtocolError{Index: -1, Msg: "tool_calls must be an array, got " + kindAt(toolCalls, 0)}
	}
	for k, raw := range raws {
		if _, err := c.add(raw, k); err != nil {
			return err
		}
	}
	return nil
}

// add takes one fragment; position is the index of a fragment that has
// none (a whole message's call), or -1.
func (c *Collector) add(raw json.RawMessage, position int) ([]Fragment, error) {
	frag, err := ParseObject(raw)
	if len(raw) == 0 || raw[0] != '{' || err != nil {
		return nil, &ProtocolError{Index: -1, Msg: "a tool-call fragment must be an object"}
	}
	idx := -1
	if v, ok := frag.Get("index"); ok && string(v) != "null" {
		n, err := strconv.Atoi(string(v))
		if err != nil || n < 0 {
			return nil, &ProtocolError{Index: -1, Msg: "index must be a non-negative integer, got " + string(v)}
		}
		idx = n
	} else if position >= 0 {
		idx = position
	}
	rawID, _ := frag.Get("id")
	id, err := optString(rawID, "id")
	if err != nil {
		return nil, err
	}
	var fn Object
	if v, ok := frag.Get("function"); ok && string(v) != "null" {
		if fn, err = ParseObject(v); v[0] != '{' || err != nil {
			return nil, &ProtocolError{Index: idx, Msg: "function must be an object"}
		}
	}
	rawName, _ := fn.Get("name")
	name, err := optString(rawName, "function.name")
	if err != nil {
		return nil, err
	}
	var args string
	if a, ok := fn.Get("arguments"); ok && len(a) > 0 && string(a) != "null" {
		if a[0] == '"' {
			args, _ = stringOf(a) // validated by ParseObject
		} else if c.quirks.ArgumentsObject {
			args = string(a)
			c.fixes["arguments_object"]++
		} else {
			return nil, &ProtocolError{Index: idx, Msg: "function.arguments must be a string, got " + kindAt(a, 0)}
		}
	}

	call, err := c.callFor(idx, id)
	if err != nil {
		return nil, err
	}
	for _, m := range frag.members {
		switch m.key {
		case "index", "id", "type", "function":
		default:
			call.extra.members = append(call.extra.members, m)
		}
	}
	if id != "" && call.id == "" {
		if other, ok := c.byID[id]; ok && other != call {
			return nil, &ProtocolError{Index: idx, Msg: fmt.Sprintf("id %q is already used by the call at index %d", id, other.upIndex)}
		}
		call.id = id
		if c.byID == nil {
			c.byID = map[string]*collecting{}
		}
		c.byID[id] = call
	}
	if name != "" {
		switch {
		case !call.started:
			call.name += name // before the call goes out, a name may come in pieces (A10)
		case c.quirks.RepeatedName && name == call.name:
			c.fixes["repeated_name"]++
		default:
			return nil, &ProtocolError{Index: call.upIndex, Msg: fmt.Sprintf("function.name %q sent again after the call started", name)}
		}
	}
	if call.args.Len()+len(args) > MaxCallArguments {
		return nil, &ProtocolError{Index: call.upIndex, Msg: fmt.Sprintf("the call's arguments exceed %d bytes", MaxCallArguments)}
	}
	call.args.WriteString(args)
	if call.id == "" || call.name == "" {
		call.held.WriteString(args)
		return nil, nil
	}
	if !call.started {
		call.started = true
		call.held.WriteString(args)
		f := Fragment{Index: call.index, ID: call.id, Name: call.name, Arguments: call.held.String(), Extra: call.extra}
		call.held.Reset()
		call.extra = Object{}
		return []Fragment{f}, nil
	}
	if args == "" && len(call.extra.members) == 0 {
		return nil, nil
	}
	f := Fragment{Index: call.index, Arguments: args, Extra: call.extra}
	call.extra = Object{}
	return []Fragment{f}, nil
}

// callFor finds or starts the call a fragment belongs to.
func (c *Collector) callFor(idx int, id string) (*collecting, error) {
	if idx < 0 {
		if !c.quirks.MissingIndex {
			return nil, &ProtocolError{Index: -1, Msg: "a tool-call fragment has no index"}
		}
		c.fixes["missing_index"]++
		if c.last != nil && (id == "" || id == c.last.id) {
			return c.last, nil
		}
		if id != "" {
			if known, ok := c.byID[id]; ok {
				return known, nil
			}
		}
		idx = len(c.calls)
		for c.byIdx[idx] != nil {
			idx++
		}
	}
	call, ok := c.byIdx[idx]
	if ok && id != "" && call.id != "" && id != call.id {
		if !c.quirks.IndexReuse {
			return nil, &ProtocolError{Index: idx, Msg: fmt.Sprintf("id %q conflicts with id %q already seen at this index", id, call.id)}
		}
		c.fixes["index_reuse"]++
		ok = false
	}
	if !ok {
		if len(c.calls) >= MaxCalls {
			return nil, &ProtocolError{Index: idx, Msg: fmt.Sprintf("more than %d tool calls in one response", MaxCalls)}
		}
		call = &collecting{upIndex: idx, index: len(c.calls)}
		c.calls = append(c.calls, call)
		if c.byIdx == nil {
			c.byIdx = map[int]*collecting{}
		}
		c.byIdx[idx] = call
	}
	c.last = call
	return call, nil
}

// Finish returns the collected calls in canonical order, or a
// *ProtocolError naming a call that is still missing its id or name. One
// complete call never masks an incomplete one.
func (c *Collector) Finish() ([]CollectedCall, error) {
	out := make([]CollectedCall, 0, len(c.calls))
	for _, call := range c.calls {
		if call.id == "" || call.name == "" {
			missing := "id"
			if call.id != "" {
				missing = "name"
			} else if call.name == "" {
				missing = "id and name"
			}
			return nil, &ProtocolError{Index: call.upIndex, Msg: "the call was left without " + missing}
		}
		out = append(out, CollectedCall{ID: call.id, Name: call.name, Arguments: call.args.String()})
	}
	return out, nil
}
