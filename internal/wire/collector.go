package wire

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Quirks switches the normalizations applied to one upstream's responses
// (docs/quirks.md section A). The zero value is strict: every departure from the
// protocol is a *ProtocolError, and nothing is rewritten.
type Quirks struct {
	// MissingIndex (A01): a fragment without an index continues the last
	// call, or starts a new one when it carries a new id.
	MissingIndex bool
	// IndexReuse (A02): a fragment with a new id at an index whose call
	// already has another id starts a new call instead of conflicting.
	IndexReuse bool
	// RepeatedName (A10): a name repeated on a continuation is dropped
	// instead of being an error.
	RepeatedName bool
	// ArgumentsObject (A12): arguments sent as a JSON value other than a
	// string are taken as that value's text.
	ArgumentsObject bool
	// FinishReason (A15, A16, A18): "stop" (or none, in a whole response)
	// after calls becomes "tool_calls", "" becomes null, and a second
	// terminal finish reason for a choice is dropped.
	FinishReason bool
	// MissingFinishReason (A17): [DONE] without a finish reason gets one.
	MissingFinishReason bool
	// NoDone (A21): a finish reason followed by EOF counts as complete.
	NoDone bool
	// Chunks (A23, A24, A26, A27, A28, A40): a placeholder first chunk is
	// dropped, every chunk carries the first chunk's id, the first delta
	// says role "assistant", a single-choice request's lone choice is
	// index 0, calls spread over choices are folded into choice 0, and an
	// "error": null member is removed.
	Chunks bool
	// Usage (A22, A25): usage is taken out of every chunk and sent once,
	// last, to a client that asked for it.
	Usage bool
	// MissingID (A07): a call whose id is empty or absent gets one, made
	// up on its first fragment that has a name ("call_" and 24 letters
	// and digits, derived from the response's id and the call's index, so
	// stable within the answer). Without it such a call is left without
	// id: a protocol error (docs/spec.md §2).
	MissingID bool
	// ContentBlocks (A31): content sent as an array of typed blocks
	// (Mistral's text, thinking, reference) becomes the content string
	// and reasoning in the client's field; other blocks are dropped.
	ContentBlocks bool
	// PostFinish: a choice's finish reason goes out once, in the last
	// chunk the client gets for that choice. A finishing chunk's finish is
	// held to the end of the stream (its content goes at once), and a
	// later chunk for the finished choice (Azure's content-filter chunk,
	// OpenRouter's usage chunk, both with finish_reason null) is folded
	// into it: its members kept, its usage taken as usage always is.
	PostFinish bool
	// ThoughtSignatures (docs/quirks.md C17): Gemini's OpenAI-compatible
	// dialect signs tool calls (extra_content.google.thought_signature)
	// and refuses a replayed call without its signature. The gateway
	// remembers each call's extra_content and puts it back when a client
	// replays the call without it; a turn whose first call has none at
	// all gets skip_thought_signature_validator. It acts on requests; the
	// stream passes extra_content on as it is.
	ThoughtSignatures bool
}

// AllQuirks returns every normalization on (an upstream's "all").
func AllQuirks() Quirks {
	return Quirks{MissingIndex: true, IndexReuse: true, RepeatedName: true, ArgumentsObject: true,
		FinishReason: true, MissingFinishReason: true, NoDone: true, Chunks: true, Usage: true,
		MissingID: true, ContentBlocks: true, PostFinish: true, ThoughtSignatures: true}
}

// quirkSwitches names each normalization as configured.
var quirkSwitches = map[string]func(*Quirks) *bool{
	"missing_index":         func(q *Quirks) *bool { return &q.MissingIndex },
	"index_reuse":           func(q *Quirks) *bool { return &q.IndexReuse },
	"repeated_name":         func(q *Quirks) *bool { return &q.RepeatedName },
	"arguments_object":      func(q *Quirks) *bool { return &q.ArgumentsObject },
	"finish_reason":         func(q *Quirks) *bool { return &q.FinishReason },
	"missing_finish_reason": func(q *Quirks) *bool { return &q.MissingFinishReason },
	"no_done":               func(q *Quirks) *bool { return &q.NoDone },
	"chunks":                func(q *Quirks) *bool { return &q.Chunks },
	"usage":                 func(q *Quirks) *bool { return &q.Usage },
	"missing_id":            func(q *Quirks) *bool { return &q.MissingID },
	"content_blocks":        func(q *Quirks) *bool { return &q.ContentBlocks },
	"post_finish":           func(q *Quirks) *bool { return &q.PostFinish },
	"thought_signatures":    func(q *Quirks) *bool { return &q.ThoughtSignatures },
}

// QuirkNames are the names of the normalizations an upstream can switch
// on, besides "all" and "strict".
func QuirkNames() []string { return slices.Sorted(maps.Keys(quirkSwitches)) }

// ParseQuirks switches on the named normalizations: "all" is every one,
// "strict" none (each stands alone); an unknown name is an error listing
// the names.
func ParseQuirks(names []string) (Quirks, error) {
	var q Quirks
	for _, n := range names {
		switch field, ok := quirkSwitches[n]; {
		case (n == "all" || n == "strict") && len(names) > 1:
			return Quirks{}, fmt.Errorf("%q must stand alone, not in a list", n)
		case n == "all":
			q = AllQuirks()
		case n == "strict":
		case ok:
			*field(&q) = true
		default:
			return Quirks{}, fmt.Errorf("unknown quirk %q; use all, strict, or a list of: %s", Clip(n), strings.Join(QuirkNames(), ", "))
		}
	}
	return q, nil
}

// ProtocolError is a tool-call fragment stream that breaks the protocol
// (docs/spec.md §2): a malformed fragment, an id conflict, or a call left without
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
	// ExtraContent is the call's extra_content member as the upstream sent
	// it (Gemini's thought signature rides there), "" when it had none.
	ExtraContent string
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
	// thought_signature must round-trip, docs/quirks.md A33).
	Extra Object
}

// MarshalJSON writes the fragment in OpenAI's delta shape.
func (f Fragment) MarshalJSON() ([]byte, error) {
	return out1{index: f.Index, id: f.ID, name: f.Name, args: AppendString(nil, f.Arguments), extra: f.Extra.members}.append(nil), nil
}

// out1 is one canonical fragment to send: id and name are set on a call's
// first; args is the arguments' JSON string as it goes out (the
// upstream's own bytes when they can be).
type out1 struct {
	index    int
	id, name string
	args     []byte
	extra    []member
	// asIs is the upstream's fragment when it is already canonical but
	// for the order of its members or its spaces: it goes out as it came.
	asIs []byte
}

// append writes the fragment.
func (f out1) append(b []byte) []byte {
	if f.asIs != nil {
		return append(b, f.asIs...)
	}
	b = append(b, `{"index":`...)
	b = strconv.AppendInt(b, int64(f.index), 10)
	if f.id != "" {
		b = append(b, `,"id":`...)
		b = AppendString(b, f.id)
		b = append(b, `,"type":"function","function":{"name":`...)
		b = AppendString(b, f.name)
		b = append(b, `,"arguments":`...)
	} else {
		b = append(b, `,"function":{"arguments":`...)
	}
	b = append(b, f.args...)
	b = append(b, '}')
	for i := range f.extra {
		b = append(b, ',')
		b = f.extra[i].appendKey(b)
		b = append(b, ':')
		b = append(b, f.extra[i].value...)
	}
	return append(b, '}')
}

// Collector aggregates streamed tool-call fragments by index (docs/spec.md §2) and
// turns them into canonical fragments. One implementation serves streams,
// non-streamed responses and the completion policy. A fragment whose call
// has no id or no name yet, or follows a call that has not, is held back
// and released, merged, once both are known for it and every call before
// it; text is never held.
//
// A Collector is created per response and is not safe for concurrent use.
type Collector struct {
	quirks Quirks
	fixes  *Fixes
	// first and read, when the collector serves a Normalizer, are where it
	// notes the chunk a normalization was first applied at.
	first *FixChunks
	read  *int
	calls []*collecting
	byIdx map[int]*collecting // upstream index → the call now using it
	byID  map[string]*collecting
	last  *collecting
	next  int    // the canonical index of the first call not started
	seed  string // the response's id, for synthesized call ids
	frag  []member
	fn    []member
	spare []*collecting // emptied calls of an earlier response, taken before new ones
}

type collecting struct {
	upIndex int
	index   int // canonical
	id      string
	name    string
	args    bytes.Buffer // the arguments' text so far
	extra   Object       // unknown members not yet sent (copies)
	// extraContent is the call's first extra_content member (a copy).
	extraContent string
	// ready: the call had its id and name at the end of a fragment (a
	// name may come in pieces before, and only be repeated after).
	ready   bool
	started bool // the first canonical fragment went out
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
	return &Collector{quirks: q, fixes: new(Fixes)} // a Normalizer's counts in its own
}

// Fixes returns how many times each normalization was applied.
func (c *Collector) Fixes() Fixes { return *c.fixes }

// Calls reports how many calls have been started.
func (c *Collector) Calls() int { return len(c.calls) }

// Add takes the raw tool_calls array of one delta and returns the canonical
// fragments to send now, in order. An error is a *ProtocolError; after one,
// the response must be ended as a violation.
func (c *Collector) Add(toolCalls json.RawMessage) ([]Fragment, error) {
	var out []Fragment
	_, err := c.each(toolCalls, false, func(f out1) {
		var args string
		if s, ok := stringOf(f.args); ok {
			args = s
		}
		out = append(out, Fragment{Index: f.index, ID: f.id, Name: f.name, Arguments: args, Extra: Object{members: f.extra}})
	})
	return out, err
}

// AddMessage takes the tool_calls array of a whole (non-streamed) message,
// whose calls carry no index: each call's position is its index.
func (c *Collector) AddMessage(toolCalls json.RawMessage) error {
	_, err := c.each(toolCalls, true, func(out1) {})
	return err
}

// appendFragments writes the canonical fragments of a tool_calls array
// into dst, comma-separated; n is how many it wrote.
func (c *Collector) appendFragments(dst, toolCalls []byte, whole bool) ([]byte, int, error) {
	n := 0
	_, err := c.each(toolCalls, whole, func(f out1) {
		if n > 0 {
			dst = append(dst, ',')
		}
		dst = f.append(dst)
		n++
	})
	return dst, n, err
}

// each runs every fragment of a tool_calls array through the collector
// and hands each canonical fragment to emit.
func (c *Collector) each(toolCalls []byte, whole bool, emit func(out1)) (int, error) {
	if len(toolCalls) == 0 || string(toolCalls) == "null" {
		return 0, nil
	}
	i := skipSpace(toolCalls, 0)
	if i >= len(toolCalls) {
		return 0, &ProtocolError{Index: -1, Msg: "tool_calls must be an array"}
	}
	if toolCalls[i] != '[' {
		return 0, &ProtocolError{Index: -1, Msg: "tool_calls must be an array, got " + kindAt(toolCalls, i)}
	}
	r := readArray(toolCalls, i)
	for k := 0; ; k++ {
		more, err := r.more()
		if err != nil {
			return k, &ProtocolError{Index: -1, Msg: "tool_calls must be an array"}
		}
		if !more {
			return k, nil
		}
		end, err := skipValue(toolCalls, r.i, 1)
		if err != nil {
			return k, &ProtocolError{Index: -1, Msg: "tool_calls must be an array"}
		}
		position := -1
		if whole {
			position = k
		}
		if err := c.add(toolCalls[r.i:end], position, emit); err != nil {
			return k, err
		}
		r.i = end
	}
}

// fragment is one fragment as received: its members' views of the
// chunk's bytes.
type fragment struct {
	idx  int // the upstream's index, or -1
	id   string
	name string
	args []byte // the arguments as a JSON string (an object's text encoded, A12)
}

// parse reads one fragment; position is the index of a fragment that has
// none (a whole message's call), or -1.
func (c *Collector) parse(raw []byte, position int) (fragment, error) {
	f := fragment{idx: -1}
	var err error
	if len(raw) == 0 || raw[0] != '{' {
		return f, &ProtocolError{Index: -1, Msg: "a tool-call fragment must be an object"}
	}
	if c.frag, err = parseMembers(c.frag[:0], raw); err != nil {
		return f, &ProtocolError{Index: -1, Msg: "a tool-call fragment must be an object"}
	}
	if v := lookup(c.frag, "index"); v != nil && string(v) != "null" {
		n, err := strconv.Atoi(string(v))
		if err != nil || n < 0 {
			return f, &ProtocolError{Index: -1, Msg: "index must be a non-negative integer, got " + truncate(string(v), 40)}
		}
		f.idx = n
	} else if position >= 0 {
		f.idx = position
	}
	if f.id, err = optView(lookup(c.frag, "id"), "id"); err != nil {
		return f, err
	}
	c.fn = c.fn[:0]
	if v := lookup(c.frag, "function"); v != nil && string(v) != "null" {
		if v[0] != '{' {
			return f, &ProtocolError{Index: f.idx, Msg: "function must be an object"}
		}
		if c.fn, err = parseMembers(c.fn, v); err != nil {
			return f, &ProtocolError{Index: f.idx, Msg: "function must be an object"}
		}
	}
	if f.name, err = optView(lookup(c.fn, "name"), "function.name"); err != nil {
		return f, err
	}
	if a := lookup(c.fn, "arguments"); len(a) > 0 && string(a) != "null" {
		switch {
		case a[0] == '"':
			f.args = a
		case c.quirks.ArgumentsObject:
			f.args = AppendString(nil, string(a))
			c.fix(FixArgumentsObject)
		default:
			return f, &ProtocolError{Index: f.idx, Msg: "function.arguments must be a string, got " + kindAt(a, 0)}
		}
	}
	return f, nil
}

// add takes one fragment and hands emit the canonical fragments it makes
// sendable (none while its call lacks an id or a name).
func (c *Collector) add(raw []byte, position int, emit func(out1)) error {
	f, err := c.parse(raw, position)
	if err != nil {
		return err
	}
	call, err := c.callFor(f.idx, f.id)
	if err != nil {
		return err
	}
	for _, m := range c.frag {
		switch m.key {
		case "index", "id", "type", "function":
		default:
			call.extra.members = append(call.extra.members, m.clone())
			if m.key == "extra_content" && call.extraContent == "" {
				call.extraContent = string(m.value)
			}
		}
	}
	if err := c.identify(call, f); err != nil {
		return err
	}
	if call.id == "" && call.name != "" && c.quirks.MissingID {
		c.synthesizeID(call)
	}
	if call.args.Len()+len(f.args) > MaxCallArguments {
		return &ProtocolError{Index: call.upIndex, Msg: fmt.Sprintf("the call's arguments exceed %d bytes", MaxCallArguments)}
	}
	before := call.args.Len()
	if len(f.args) > 0 {
		call.args.Write(appendUnquoted(call.args.AvailableBuffer(), f.args, 0, len(f.args)))
	}
	call.ready = call.id != "" && call.name != ""
	switch {
	case !call.ready || call.index > c.next:
		// Held: the call lacks its id or name, or a call before it does
		// (calls go out in order, so a client that numbers calls as they
		// come gets the indexes they have). Its arguments so far are what
		// it holds.
	case !call.started:
		out := out1{index: call.index, id: call.id, name: call.name, args: f.args, extra: call.extra.members}
		if before > 0 { // text held before: sent merged, encoded afresh
			out.args = AppendString(nil, call.args.String())
		} else if len(f.args) == 0 {
			out.args = []byte(`""`)
		}
		c.start(call, out, emit)
	case len(f.args) > 0 || len(call.extra.members) > 0:
		out := out1{index: call.index, args: f.args, extra: call.extra.members}
		if len(f.args) == 0 {
			out.args = []byte(`""`)
		} else if c.canonical(call) {
			out.asIs = raw
		}
		emit(out)
		call.extra.members = call.extra.members[:0]
	}
	return nil
}

// start sends a call's first fragment, out, then the first fragments of
// the calls after it that waited only for it, each with the arguments it
// held.
func (c *Collector) start(call *collecting, out out1, emit func(out1)) {
	for {
		call.started = true
		emit(out)
		call.extra = Object{}
		c.next = call.index + 1
		if c.next == len(c.calls) || !c.calls[c.next].ready {
			return
		}
		call = c.calls[c.next]
		args := []byte(`""`)
		if call.args.Len() > 0 {
			args = AppendString(nil, call.args.String())
		}
		out = out1{index: call.index, id: call.id, name: call.name, args: args, extra: call.extra.members}
	}
}

// canonical reports whether the continuation fragment just parsed (c.frag,
// c.fn) of call says exactly what its canonical form would: its index
// (the canonical one, in the same digits), its arguments as a string and
// nothing else, whatever the order of the members (JSON's objects have
// none). Such a fragment goes out as it came, so that an upstream whose
// fragments need no fix has its chunks relayed as they came whatever
// order its encoder writes (a sorted-key encoder's
// {"function":{"arguments":"…"},"index":0}), as OpenAI's are.
func (c *Collector) canonical(call *collecting) bool {
	if len(c.frag) != 2 || len(c.fn) != 1 || c.fn[0].key != "arguments" || firstByte(c.fn[0].value) != '"' ||
		len(call.extra.members) > 0 {
		return false
	}
	var d [20]byte
	idx := lookup(c.frag, "index")
	return idx != nil && lookup(c.frag, "function") != nil &&
		string(idx) == string(strconv.AppendInt(d[:0], int64(call.index), 10))
}

// identify gives call the fragment's id and name: the first non-empty id
// (one id for two calls is an error), a name that may come in pieces
// before the call has both and may only be repeated after (A10).
func (c *Collector) identify(call *collecting, f fragment) error {
	if f.id != "" && call.id == "" {
		if other, ok := c.byID[f.id]; ok && other != call {
			return &ProtocolError{Index: f.idx, Msg: fmt.Sprintf("id %q is already used by the call at index %d", Clip(f.id), other.upIndex)}
		}
		call.id = strings.Clone(f.id) // the id shares the chunk's bytes
		if c.byID == nil {
			c.byID = map[string]*collecting{}
		}
		c.byID[call.id] = call
	}
	switch {
	case f.name == "":
	case !call.ready && call.name == "":
		call.name = strings.Clone(f.name)
	case !call.ready:
		call.name += f.name
	case c.quirks.RepeatedName && f.name == call.name:
		c.fix(FixRepeatedName)
	default:
		return &ProtocolError{Index: call.upIndex, Msg: fmt.Sprintf("function.name %q sent again after the call started", Clip(f.name))}
	}
	return nil
}

// synthesizeID gives a call that has a name but no id one (A07): "call_"
// and 24 letters and digits from the response's id and the call's
// canonical index, so the same answer gets the same ids, never one the
// response already uses.
func (c *Collector) synthesizeID(call *collecting) {
	for n := 0; ; n++ {
		h := sha256.Sum256([]byte(c.seed + "\x00" + strconv.Itoa(call.index) + "\x00" + strconv.Itoa(n)))
		id := make([]byte, 0, 29)
		id = append(id, "call_"...)
		for _, b := range h[:24] {
			id = append(id, base62[int(b)%len(base62)])
		}
		if _, taken := c.byID[string(id)]; taken {
			continue
		}
		call.id = string(id)
		if c.byID == nil {
			c.byID = map[string]*collecting{}
		}
		c.byID[call.id] = call
		c.fix(FixMissingID)
		return
	}
}

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// optView reads an optional string field without copying it: absent, null
// and "" are "". The view shares the fragment's bytes.
func optView(raw []byte, field string) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	if raw[0] != '"' {
		return "", &ProtocolError{Index: -1, Msg: field + " must be a string, got " + kindAt(raw, 0)}
	}
	_, escaped, _ := skipString(raw, 0) // validated by parseMembers
	return stringView(raw, 0, len(raw), escaped), nil
}

// callFor finds or starts the call a fragment belongs to.
func (c *Collector) callFor(idx int, id string) (*collecting, error) {
	if idx < 0 {
		if !c.quirks.MissingIndex {
			return nil, &ProtocolError{Index: -1, Msg: "a tool-call fragment has no index"}
		}
		c.fix(FixMissingIndex)
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
			return nil, &ProtocolError{Index: idx, Msg: fmt.Sprintf("id %q conflicts with id %q already seen at this index", Clip(id), call.id)}
		}
		c.fix(FixIndexReuse)
		ok = false
	}
	if !ok {
		if len(c.calls) >= MaxCalls {
			return nil, &ProtocolError{Index: idx, Msg: fmt.Sprintf("more than %d tool calls in one response", MaxCalls)}
		}
		if k := len(c.spare) - 1; k >= 0 {
			call, c.spare = c.spare[k], c.spare[:k]
			call.upIndex, call.index = idx, len(c.calls)
		} else {
			call = &collecting{upIndex: idx, index: len(c.calls)}
		}
		c.calls = append(c.calls, call)
		if c.byIdx == nil {
			c.byIdx = map[int]*collecting{}
		}
		c.byIdx[idx] = call
	}
	c.last = call
	return call, nil
}

// Bounds on the emptied calls a Collector keeps for the next response: a
// few calls of ordinary size, so that a stream's calls do not regrow their
// argument buffers from nothing, while large ones are left to the garbage
// collector.
const (
	maxSpareCalls = 8
	maxSpareBytes = 32 << 10 // their buffers' capacity, in all
)

// recycle empties the response's calls into spare, for the next response
// to take, as far as the bounds allow. Nothing the calls held may be used
// afterwards (Finish's results are copies).
func (c *Collector) recycle() {
	size := 0
	for _, call := range c.spare {
		size += call.args.Cap()
	}
	for _, call := range c.calls {
		if len(c.spare) == maxSpareCalls || size+call.args.Cap() > maxSpareBytes {
			continue
		}
		size += call.args.Cap()
		call.args.Reset()
		*call = collecting{args: call.args}
		c.spare = append(c.spare, call)
	}
	c.calls = nil
}

// ids returns the calls' ids in canonical order.
func (c *Collector) ids() []string {
	out := make([]string, len(c.calls))
	for k, call := range c.calls {
		out[k] = call.id
	}
	return out
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
		out = append(out, CollectedCall{ID: call.id, Name: call.name, Arguments: call.args.String(), ExtraContent: call.extraContent})
	}
	return out, nil
}

// fix counts a normalization the collector applied.
func (c *Collector) fix(f Fix) {
	if c.fixes[f] == 0 && c.first != nil {
		c.first[f] = *c.read
	}
	c.fixes[f]++
}
