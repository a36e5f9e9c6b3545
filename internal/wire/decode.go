package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// DecodeRequest decodes a chat-completions request body. It requires a JSON
// object with a non-empty string "model" and a non-empty "messages" array of
// objects that each have a string "role". The returned request refers to b's
// bytes (messages and members are slices of it): the caller must not modify
// b afterwards. Errors are *DecodeError: a syntax error carries the byte
// offset where it was found, a wrong type names the parameter.
func DecodeRequest(b []byte) (*ChatRequest, error) {
	i := skipSpace(b, 0)
	if i >= len(b) {
		return nil, &DecodeError{Kind: KindSyntax, Offset: int64(i), Msg: "the request body is empty; send a JSON object"}
	}
	if b[i] != '{' {
		return nil, &DecodeError{Kind: KindSyntax, Offset: int64(i), Msg: "the request body must be a JSON object"}
	}
	d := &decoder{b: b}
	r := &ChatRequest{raw: b}
	haveMessages, err := d.members(r, i)
	if err != nil {
		return nil, err
	}
	if err := r.typed(haveMessages); err != nil {
		return nil, err
	}
	if d.own > 0 {
		r.DropOwn()
	}
	return r, nil
}

// DecodeTranslated is DecodeRequest for a body the gateway itself made from
// a request of another client API (the Messages API's thinking blocks,
// which its translator puts in the gateway's own member): the members
// named with OwnPrefix are kept, kept is the request's Kept (the
// client's blocks or items its messages keep by index, nil for none),
// and strings are the strings its messages' KeptContent names (nil for
// none). A body a client sent is never decoded with it.
func DecodeTranslated(b []byte, kept, strings []json.RawMessage) (*ChatRequest, error) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil, &DecodeError{Kind: KindSyntax, Offset: int64(i), Msg: "the translated request is not a JSON object"}
	}
	d := &decoder{b: b, translated: true, strings: strings}
	r := &ChatRequest{raw: b, Kept: kept}
	haveMessages, err := d.members(r, i)
	if err != nil {
		return nil, err
	}
	return r, r.typed(haveMessages)
}

// OwnPrefix starts the name of every member the gateway adds to a message
// for its own use (the Anthropic thinking blocks it restores). A client
// never sends one: DecodeRequest strips every such member from the
// messages it decodes, so that only what the gateway itself stored is
// ever put there.
const OwnPrefix = "toolgate_"

// KeptContent is the member of a translated message (DecodeTranslated)
// that stands for its content: the index, in the strings
// DecodeTranslated is given, of a JSON string the client wrote (a view
// of its request, valid UTF-8), which the decoder makes the message's
// Content. A client API's translator names a long string so rather than
// copy it into the chat message: the request then holds the client's
// text once.
const KeptContent = OwnPrefix + "content"

// ownKey is how a member named with OwnPrefix starts in a message's bytes.
var ownKey = []byte(`"` + OwnPrefix)

// DropOwn removes the members named with OwnPrefix from a request, at
// the top level and in its messages, leaving a request it was derived
// from as it is: from what a client sent (DecodeRequest), and for an
// upstream that reads none of them (chat completions) when a translator
// of a client API put them there for another kind of upstream.
func (r *ChatRequest) DropOwn() {
	var own []string
	for _, mb := range r.obj.members {
		if strings.HasPrefix(mb.key, OwnPrefix) {
			own = append(own, mb.key)
		}
	}
	for _, k := range own {
		r.Delete(k)
	}
	var msgs []Message
	for i := range r.Messages {
		raw := r.Messages[i].Raw
		// own: the decoder saw such a member (its name perhaps escaped);
		// else the bytes tell, for a message the gateway built.
		if raw == nil || !r.Messages[i].own && !bytes.Contains(raw, ownKey) {
			continue
		}
		obj, err := ParseObject(raw)
		if err != nil {
			continue
		}
		kept, content := obj.members[:0:0], false
		for _, mb := range obj.members {
			if !strings.HasPrefix(mb.key, OwnPrefix) {
				kept, content = append(kept, mb), content || mb.key == "content"
			}
		}
		if len(kept) == len(obj.members) {
			continue
		}
		if msgs == nil {
			msgs = append([]Message(nil), r.Messages...)
		}
		if r.Messages[i].apart && !content {
			// The content the message named goes in as its member.
			kept = append(kept, member{key: "content", value: r.Messages[i].Content})
		}
		obj.members = kept
		msgs[i].Raw, msgs[i].own, msgs[i].apart = obj.JSON(), false, false
	}
	if msgs != nil {
		r.SetMessages(msgs)
	}
}

// decoder reads one request body: its bytes, and the duplicate checks of
// each level of the objects it reads, reused from one object to the next.
type decoder struct {
	b        []byte
	messages keySets
	tools    keySets
	// own counts the messages that carry a member named with OwnPrefix.
	own int
	// translated: the body is the gateway's own (DecodeTranslated), whose
	// top-level members named with OwnPrefix are kept; a client's are
	// left out.
	translated bool
	// strings are what a translated request's KeptContent indexes.
	strings []json.RawMessage
}

// members reads the top-level object at b[i] into r: every member's bytes,
// the messages and the tools decoded.
func (d *decoder) members(r *ChatRequest, i int) (haveMessages bool, err error) {
	b := d.b
	r.obj.members = make([]member, 0, 16)
	var keys Names
	var folds foldedNames
	o := readObject(b, i)
	for {
		ok, err := o.more()
		if err != nil {
			return false, decodeError(err)
		}
		if !ok {
			break
		}
		key, escaped, at, err := o.key()
		if err != nil {
			return false, decodeError(err)
		}
		k := keyString(key, escaped)
		if err := keys.member(k, func() string { return k }); err != nil {
			return false, err
		}
		if err := folds.check(k, &keys); err != nil {
			return false, err
		}
		if err := knownVariant(k, TopMembers, func() string { return k }); err != nil {
			return false, err
		}
		var end int
		switch k {
		case "messages":
			r.Messages, end, err = d.messageList(at)
			haveMessages = true
		case "tools":
			r.Tools, end, err = d.toolList(at)
		default:
			end, err = skipValue(b, at, 1)
		}
		if err != nil {
			return false, decodeError(err)
		}
		if !d.translated && strings.HasPrefix(k, OwnPrefix) {
			o.i, r.changed = end, true // the gateway's own member, which a client never sends
			continue
		}
		if len(r.obj.members) == cap(r.obj.members) {
			// Doubling (append grows a large slice by a quarter): an object
			// of a million members is copied twice over, not five times.
			r.obj.members = append(make([]member, 0, 2*cap(r.obj.members)), r.obj.members...)
		}
		r.obj.members = append(r.obj.members, member{key: k, rawKey: b[o.i : o.i+len(key)+2], value: b[at:end]})
		o.i = end
	}
	if j := skipSpace(b, o.i); j < len(b) {
		return false, &DecodeError{Kind: KindSyntax, Offset: int64(j), Msg: fmt.Sprintf("invalid JSON: unexpected data after the top-level object at byte offset %d", j)}
	}
	return haveMessages, nil
}

// ParseTop splits the top-level JSON object of a request body into its
// members, refusing what DecodeRequest refuses at that level: invalid
// JSON, a member repeated, two members whose names differ only in case
// (*DecodeError). It reads no member's value but to skip it: the
// Responses API's and the rest of /v1's bodies go through it before the
// gateway reads a member of theirs.
func ParseTop(b []byte) (Object, error) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return Object{}, &DecodeError{Kind: KindSyntax, Offset: int64(i), Msg: "the request body must be a JSON object"}
	}
	members := make([]member, 0, smallObject)
	var keys Names
	var folds foldedNames
	o := readObject(b, i)
	for {
		ok, err := o.more()
		if err != nil {
			return Object{}, decodeError(err)
		}
		if !ok {
			break
		}
		key, escaped, at, err := o.key()
		if err != nil {
			return Object{}, decodeError(err)
		}
		k := keyString(key, escaped)
		if err := keys.member(k, func() string { return k }); err != nil {
			return Object{}, err
		}
		if err := folds.check(k, &keys); err != nil {
			return Object{}, err
		}
		if err := knownVariant(k, TopMembers, func() string { return k }); err != nil {
			return Object{}, err
		}
		end, err := skipValue(b, at, 1)
		if err != nil {
			return Object{}, decodeError(err)
		}
		members = append(members, member{key: k, rawKey: b[o.i : o.i+len(key)+2], value: b[at:end]})
		o.i = end
	}
	if j := skipSpace(b, o.i); j < len(b) {
		return Object{}, &DecodeError{Kind: KindSyntax, Offset: int64(j), Msg: fmt.Sprintf("invalid JSON: unexpected data after the top-level object at byte offset %d", j)}
	}
	return Object{members: members}, nil
}

// typed reads the typed view of the members: model, stream, and that
// messages are there.
func (r *ChatRequest) typed(haveMessages bool) error {
	if v, ok := r.obj.Get("model"); ok {
		if v[0] != '"' {
			return &DecodeError{Kind: KindMissing, Param: "model", Offset: -1, Msg: "must be a string, got " + kindAt(v, 0)}
		}
		_, escaped, _ := skipString(v, 0)
		r.Model = stringValue(v, 0, len(v), escaped)
	}
	if r.Model == "" {
		return &DecodeError{Kind: KindMissing, Param: "model", Offset: -1, Msg: "you must provide a model parameter (a non-empty string)"}
	}
	if v, ok := r.obj.Get("stream"); ok {
		switch string(v) {
		case "true":
			r.Stream = true
		case "false", "null":
		default:
			return &DecodeError{Kind: KindValue, Param: "stream", Offset: -1, Msg: "must be a boolean, got " + kindAt(v, 0)}
		}
	}
	if !haveMessages {
		return &DecodeError{Kind: KindMissing, Param: "messages", Offset: -1, Msg: "you must provide a messages parameter (a non-empty array of messages)"}
	}
	if len(r.Messages) == 0 {
		return &DecodeError{Kind: KindMissing, Param: "messages", Offset: -1, Msg: "must contain at least one message"}
	}
	return nil
}

func decodeError(err error) error {
	var se *syntaxErr
	if errors.As(err, &se) {
		if se.eof {
			return &DecodeError{Kind: KindSyntax, Offset: int64(se.off), Msg: fmt.Sprintf("invalid JSON: the body ends early (at byte offset %d)", se.off), Err: err}
		}
		return &DecodeError{Kind: KindSyntax, Offset: int64(se.off), Msg: fmt.Sprintf("invalid JSON at byte offset %d: %s", se.off, se.msg), Err: err}
	}
	return err
}

// typeError is a value of the wrong JSON type at a parameter path.
func typeError(param string, b []byte, at int, want string) error {
	return &DecodeError{Kind: KindValue, Param: param, Offset: -1, Msg: "must be " + want + ", got " + kindAt(b, at)}
}

// errWrongType marks a value of the wrong type; the caller names the
// parameter (built only then, so decoding builds no strings on success).
var errWrongType = errors.New("wrong type")

// stringAt decodes the string at b[at] (null gives ""), returning the
// value's end; a value of another type is errWrongType.
func stringAt(b []byte, at int) (string, int, error) {
	switch b[at] {
	case '"':
		end, escaped, err := skipString(b, at)
		if err != nil {
			return "", 0, err
		}
		return stringView(b, at, end, escaped), end, nil
	case 'n':
		end, err := skipLiteral(b, at, "null")
		return "", end, err
	}
	end, err := skipValue(b, at, 1)
	if err != nil {
		return "", 0, err
	}
	return "", end, errWrongType
}

// msgParam names a message field for errors: messages[n].field.
func msgParam(n int, field string) string { return "messages[" + strconv.Itoa(n) + "]" + field }

// callParam names a tool-call field: messages[n].tool_calls[k].field.
func callParam(n, k int, field string) string {
	return msgParam(n, ".tool_calls["+strconv.Itoa(k)+"]"+field)
}

func (d *decoder) messageList(at int) ([]Message, int, error) {
	b := d.b
	if b[at] != '[' {
		if _, err := skipValue(b, at, 1); err != nil {
			return nil, 0, err
		}
		return nil, 0, typeError("messages", b, at, "an array of message objects")
	}
	// A body the gateway wrote is counted first; a client's messages are
	// read into a scratch list kept between requests and copied out at
	// their number: a transcript costs its messages once, not a regrown
	// list's worth, and no second scan of the body.
	if d.translated {
		msgs := make([]Message, 0, ArrayLen(b[at:]))
		return d.messagesInto(at, msgs)
	}
	scratch := scratchMessages.Get().(*[]Message)
	msgs, end, err := d.messagesInto(at, (*scratch)[:0])
	var out []Message
	if err == nil {
		out = slices.Clone(msgs)
	}
	if cap(msgs) <= maxScratch {
		clear(msgs)
		*scratch = msgs[:0]
		scratchMessages.Put(scratch)
	}
	return out, end, err
}

// scratchMessages are lists a client's messages are read into, of at
// most maxScratch messages.
var scratchMessages = sync.Pool{New: func() any { return new([]Message) }}

const maxScratch = 4096

// messagesInto reads the messages array at b[at] into msgs.
func (d *decoder) messagesInto(at int, msgs []Message) ([]Message, int, error) {
	r := readArray(d.b, at)
	for {
		ok, err := r.more()
		if err != nil {
			return msgs, 0, err
		}
		if !ok {
			return msgs, r.i, nil
		}
		msgs = append(msgs, Message{})
		if r.i, err = d.message(r.i, len(msgs)-1, &msgs[len(msgs)-1]); err != nil {
			return msgs, 0, err
		}
	}
}

// message reads messages[n] at b[at] into m.
func (d *decoder) message(at, n int, m *Message) (int, error) {
	o := objectAt{keys: &d.messages.object, param: func(f string) string { return msgParam(n, f) }, what: "a message object", depth: 2, known: messageMembers}
	end, err := d.object(o, at, func(k string, v int) (int, error) { return d.messageMember(k, v, n, m) })
	if err != nil {
		return 0, err
	}
	m.Raw = d.b[at:end]
	if m.Role == "" {
		return 0, &DecodeError{Kind: KindValue, Param: msgParam(n, ".role"), Offset: -1, Msg: "is required (system, user, assistant or tool)"}
	}
	return end, nil
}

// messageMember reads the member k of messages[n], whose value is at
// b[v], and returns the value's end.
func (d *decoder) messageMember(k string, v, n int, m *Message) (end int, err error) {
	b := d.b
	switch k {
	case "role":
		if m.Role, end, err = stringAt(b, v); err == nil {
			m.Role = intern(m.Role)
		} else if err == errWrongType {
			err = typeError(msgParam(n, ".role"), b, v, "a string")
		}
	case "name":
		// Checked, and left in Raw: the gateway reads no message's name.
		if _, end, err = stringAt(b, v); err == errWrongType {
			err = typeError(msgParam(n, ".name"), b, v, "a string")
		}
	case "tool_call_id":
		if m.ToolCallID, end, err = stringAt(b, v); err == errWrongType {
			err = typeError(msgParam(n, ".tool_call_id"), b, v, "a string")
		}
	case "content":
		if end, err = skipValue(b, v, 3); err == nil {
			m.Content = b[v:end]
		}
	case "tool_calls":
		m.ToolCalls, end, err = d.toolCalls(v, n)
	case KeptContent:
		if !d.translated {
			end, err = d.ownMember(m, b, v)
			break
		}
		end, err = d.keptContent(v, n, m)
	default:
		if strings.HasPrefix(k, OwnPrefix) {
			end, err = d.ownMember(m, b, v)
			break
		}
		end, err = skipValue(b, v, 3)
	}
	return end, err
}

// ownMember marks m as carrying a member named with OwnPrefix, whose
// value at b[v] it skips.
func (d *decoder) ownMember(m *Message, b []byte, v int) (int, error) {
	if !m.own {
		m.own = true
		d.own++
	}
	return skipValue(b, v, 3)
}

// keptContent reads a translated message's KeptContent at b[v]: the
// string its index names becomes m's Content. The gateway wrote it: an
// index that names no string is its own error, not the client's.
func (d *decoder) keptContent(v, n int, m *Message) (int, error) {
	end, err := d.ownMember(m, d.b, v)
	if err != nil {
		return 0, err
	}
	i, err := strconv.Atoi(string(d.b[v:end]))
	if err != nil || i < 0 || i >= len(d.strings) || len(d.strings[i]) == 0 || d.strings[i][0] != '"' {
		return 0, fmt.Errorf("wire: messages.%d.%s names no string", n, KeptContent)
	}
	m.Content, m.apart = d.strings[i], true
	return end, nil
}

// intern returns the usual roles as constants, so they share no memory
// with the body.
func intern(role string) string {
	switch role {
	case "user":
		return "user"
	case "assistant":
		return "assistant"
	case "tool":
		return "tool"
	case "system":
		return "system"
	case "developer":
		return "developer"
	}
	return role
}

func (d *decoder) toolCalls(at, n int) ([]ToolCall, int, error) {
	b := d.b
	switch b[at] {
	case 'n':
		end, err := skipLiteral(b, at, "null")
		return nil, end, err
	case '[':
	default:
		if _, err := skipValue(b, at, 3); err != nil {
			return nil, 0, err
		}
		return nil, 0, typeError(msgParam(n, ".tool_calls"), b, at, "an array of tool calls")
	}
	var calls []ToolCall
	r := readArray(b, at)
	for {
		ok, err := r.more()
		if err != nil {
			return nil, 0, err
		}
		if !ok {
			return calls, r.i, nil
		}
		if len(calls) == MaxCalls {
			// A response carries at most MaxCalls (the collector's bound):
			// so may a message that repeats one.
			return nil, 0, &DecodeError{Kind: KindValue, Param: msgParam(n, ".tool_calls"), Offset: -1,
				Msg: fmt.Sprintf("has more than %d tool calls; a message may carry at most %d", MaxCalls, MaxCalls)}
		}
		calls = append(calls, ToolCall{})
		if r.i, err = d.toolCall(r.i, callAt{n, len(calls) - 1}, &calls[len(calls)-1]); err != nil {
			return nil, 0, err
		}
	}
}

// callAt names a tool call: messages[msg].tool_calls[call].
type callAt struct{ msg, call int }

func (c callAt) param(field string) string { return callParam(c.msg, c.call, field) }

func (d *decoder) toolCall(at int, pos callAt, c *ToolCall) (int, error) {
	b := d.b
	o := objectAt{keys: &d.messages.call, param: pos.param, what: "a tool call object", depth: 4, known: callMembers}
	end, err := d.object(o, at, func(k string, v int) (end int, err error) {
		switch k {
		case "id":
			if c.ID, end, err = stringAt(b, v); err == errWrongType {
				err = typeError(pos.param(".id"), b, v, "a string")
			}
		case "type":
			if c.Type, end, err = stringAt(b, v); err == errWrongType {
				err = typeError(pos.param(".type"), b, v, "a string")
			}
		case "function":
			end, err = d.function(v, pos, &c.Function)
		case "extra_content":
			if end, err = skipValue(b, v, 5); err == nil {
				c.Extra = b[v:end]
			}
		default:
			end, err = skipValue(b, v, 5)
		}
		return end, err
	})
	if err == nil {
		c.Raw = b[at:end]
	}
	return end, err
}

func (d *decoder) function(at int, pos callAt, f *FunctionCall) (int, error) {
	b := d.b
	o := objectAt{keys: &d.messages.function, param: func(s string) string { return pos.param(".function" + s) }, what: "an object", depth: 5, null: true, known: functionMembers}
	return d.object(o, at, func(k string, v int) (end int, err error) {
		switch k {
		case "name":
			if f.Name, end, err = stringAt(b, v); err == errWrongType {
				err = typeError(pos.param(".function.name"), b, v, "a string")
			}
		case "arguments":
			if end, err = skipValue(b, v, 6); err == nil {
				f.Arguments = b[v:end]
			}
		default:
			end, err = skipValue(b, v, 6)
		}
		return end, err
	})
}

// objectAt is one kind of object in a request: where its keys are
// checked, how its members are named in errors (param(".name")), what a
// value of another type is told it should be, its nesting depth, and
// whether null stands for it.
type objectAt struct {
	keys  *Names
	param func(field string) string
	what  string
	depth int
	null  bool
	known []string // the names the gateway reads or writes at this level (knownVariant)
}

// object walks the object at b[at]: each key is checked (a repeat, too
// many members), then member reads that key's value at b[v] and returns
// the value's end. It returns the object's end.
func (d *decoder) object(o objectAt, at int, member func(key string, v int) (int, error)) (int, error) {
	b := d.b
	switch {
	case b[at] == '{':
	case o.null && b[at] == 'n':
		return skipLiteral(b, at, "null")
	default:
		if _, err := skipValue(b, at, o.depth); err != nil {
			return 0, err
		}
		return 0, typeError(o.param(""), b, at, o.what)
	}
	r := readObject(b, at)
	o.keys.reset()
	for {
		ok, err := r.more()
		if err != nil {
			return 0, err
		}
		if !ok {
			return r.i, nil
		}
		key, escaped, v, err := r.key()
		if err != nil {
			return 0, err
		}
		k := keyString(key, escaped) // shares b's bytes: no allocation
		if err := o.keys.member(k, func() string { return o.param("." + k) }); err != nil {
			return 0, err
		}
		if err := knownVariant(k, o.known, func() string { return o.param("." + k) }); err != nil {
			return 0, err
		}
		if r.i, err = member(k, v); err != nil {
			return 0, err
		}
	}
}

// Names is a set of names (an object's member names, a message's call
// ids) built to find a repeat: a linear scan while it is small, a map once
// it is not, so n names cost O(n) either way and a handful allocate
// nothing. The zero value is an empty set.
type Names struct {
	small [8]string
	n     int
	m     map[string]struct{}
}

// Add adds name and reports false when the set already had it.
func (s *Names) Add(name string) bool {
	if s.m != nil {
		n := len(s.m)
		s.m[name] = struct{}{}
		return len(s.m) > n
	}
	for _, k := range s.small[:s.n] {
		if k == name {
			return false
		}
	}
	if s.n < len(s.small) {
		s.small[s.n] = name
		s.n++
		return true
	}
	s.m = make(map[string]struct{}, 4*len(s.small))
	for _, k := range s.small {
		s.m[k] = struct{}{}
	}
	s.m[name] = struct{}{}
	return true
}

// Len returns how many names the set holds.
func (s *Names) Len() int {
	if s.m != nil {
		return len(s.m)
	}
	return s.n
}

// Clone returns a copy of the set whose names share no memory with the
// set's (which may be views of a request's bytes).
func (s *Names) Clone() Names {
	var c Names
	if s.m != nil {
		for k := range s.m {
			c.Add(strings.Clone(k))
		}
		return c
	}
	for _, k := range s.small[:s.n] {
		c.Add(strings.Clone(k))
	}
	return c
}

// reset empties the set, keeping its map for the next object.
func (s *Names) reset() {
	s.n = 0
	if s.m != nil {
		clear(s.m)
	}
}

// MaxMembers is the most members the decoder takes in one object it
// reads (the request, a message, a tool call, a function, a tool): no
// request needs more, and a cap keeps the duplicate check's sets small.
const MaxMembers = 1024

// keySets are the decoder's duplicate checks, one per level of the
// objects it reads, each reused from one object to the next.
type keySets struct{ object, call, function Names }

// member checks an object's next member name against set, which holds
// the names before it: a repeat or one member too many is an error
// naming param.
func (set *Names) member(name string, param func() string) error {
	if !set.Add(name) {
		return duplicateError(param())
	}
	if set.Len() > MaxMembers {
		return &DecodeError{Kind: KindValue, Param: Clip(param()), Offset: -1,
			Msg: fmt.Sprintf("is one member too many: an object may have at most %d", MaxMembers)}
	}
	return nil
}

// Has reports whether name is in the set.
func (s *Names) Has(name string) bool {
	if s.m != nil {
		_, ok := s.m[name]
		return ok
	}
	for _, k := range s.small[:s.n] {
		if k == name {
			return true
		}
	}
	return false
}

// duplicateError refuses a repeated member: parsers disagree on which
// one counts (OpenAI's keeps the last, others the first), so a gateway
// that checked one and forwarded both would forward an ambiguity.
func duplicateError(param string) error {
	return &DecodeError{Kind: KindDuplicate, Param: Clip(param), Offset: -1,
		Msg: "is given more than once in the same object; send each member once"}
}

// toolList reads the tools array: each element an object, each function
// (when present) an object whose name is a string. Their bytes are kept;
// the typed view is the name and the parameters schema.
func (d *decoder) toolList(at int) ([]Tool, int, error) {
	b := d.b
	switch b[at] {
	case 'n':
		end, err := skipLiteral(b, at, "null")
		return nil, end, err
	case '[':
	default:
		if _, err := skipValue(b, at, 1); err != nil {
			return nil, 0, err
		}
		return nil, 0, typeError("tools", b, at, "an array of tool objects")
	}
	var tools []Tool
	r := readArray(b, at)
	for {
		ok, err := r.more()
		if err != nil {
			return nil, 0, err
		}
		if !ok {
			return tools, r.i, nil
		}
		tools = append(tools, Tool{})
		if r.i, err = d.tool(r.i, len(tools)-1, &tools[len(tools)-1]); err != nil {
			return nil, 0, err
		}
	}
}

func toolParam(k int, field string) string { return "tools[" + strconv.Itoa(k) + "]" + field }

func (d *decoder) tool(at, k int, t *Tool) (int, error) {
	b := d.b
	o := objectAt{keys: &d.tools.object, param: func(f string) string { return toolParam(k, f) }, what: "a tool object", depth: 2, known: toolMembers}
	end, err := d.object(o, at, func(name string, v int) (end int, err error) {
		switch name {
		case "type":
			if t.Type, end, err = stringAt(b, v); err == errWrongType {
				err = typeError(toolParam(k, ".type"), b, v, "a string")
			}
		case "function":
			end, err = d.toolFunction(v, k, t)
		default:
			end, err = skipValue(b, v, 3)
		}
		return end, err
	})
	if err == nil {
		t.Raw = b[at:end]
	}
	return end, err
}

func (d *decoder) toolFunction(at, k int, t *Tool) (int, error) {
	b := d.b
	o := objectAt{keys: &d.tools.function, param: func(f string) string { return toolParam(k, ".function"+f) }, what: "an object", depth: 3, null: true, known: toolFunction}
	return d.object(o, at, func(name string, v int) (end int, err error) {
		switch name {
		case "name":
			if t.Name, end, err = stringAt(b, v); err == errWrongType {
				err = typeError(toolParam(k, ".function.name"), b, v, "a string")
			}
		case "parameters":
			if end, err = skipValue(b, v, 4); err == nil && b[v] != 'n' {
				t.Parameters = b[v:end]
			}
		default:
			end, err = skipValue(b, v, 4)
		}
		return end, err
	})
}
