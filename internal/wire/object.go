package wire

import (
	"encoding/json"
	"iter"
)

// Object is a JSON object kept as its members' raw bytes, in their order.
// It lets the gateway change one member of a client's object (a message, a
// tool call) while every other member goes out byte-for-byte. The zero value
// is an empty object. An Object is not safe for concurrent use.
type Object struct {
	members []member
}

// member is one member of an object, as received.
type member struct {
	key    string
	rawKey []byte // the key as received, quotes included; nil for a member the gateway added
	value  json.RawMessage
}

// appendKey appends the member's key as received, or encoded when added.
func (m *member) appendKey(dst []byte) []byte {
	if m.rawKey != nil {
		return append(dst, m.rawKey...)
	}
	return AppendString(dst, m.key)
}

// ParseObject splits b, which must be a JSON object, into its members. The
// Object refers to b's bytes: b must not be modified afterwards.
func ParseObject(b []byte) (Object, error) {
	members, err := parseMembers(make([]member, 0, smallObject), b)
	if err != nil {
		return Object{}, err
	}
	return Object{members: members}, nil
}

// smallObject is the member capacity an object's parse starts with: most
// objects of the wire (a message, a choice, usage, a response's top level)
// fit, in one allocation.
const smallObject = 8

// Members yields the object's members in order, as received (or set).
func (o *Object) Members() iter.Seq2[string, json.RawMessage] {
	return func(yield func(string, json.RawMessage) bool) {
		for _, m := range o.members {
			if !yield(m.key, m.value) {
				return
			}
		}
	}
}

// Get returns the raw value of a member (the last one when the key repeats)
// and whether it is present.
func (o *Object) Get(key string) (json.RawMessage, bool) {
	for i := len(o.members) - 1; i >= 0; i-- {
		if o.members[i].key == key {
			return o.members[i].value, true
		}
	}
	return nil, false
}

// Set replaces every member named key with value, or appends it.
func (o *Object) Set(key string, value json.RawMessage) {
	found := false
	for i := range o.members {
		if o.members[i].key == key {
			o.members[i].value = value
			found = true
		}
	}
	if !found {
		o.members = append(o.members, member{key: key, value: value})
	}
}

// Delete removes every member named key.
func (o *Object) Delete(key string) {
	kept := o.members[:0]
	for _, m := range o.members {
		if m.key != key {
			kept = append(kept, m)
		}
	}
	o.members = kept
}

// AppendJSON appends the object's encoding to dst.
func (o *Object) AppendJSON(dst []byte) []byte {
	dst = append(dst, '{')
	for i, m := range o.members {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = m.appendKey(dst)
		dst = append(dst, ':')
		dst = append(dst, m.value...)
	}
	return append(dst, '}')
}

// JSON returns the object's encoding.
func (o *Object) JSON() json.RawMessage {
	size := 2
	for _, m := range o.members {
		size += len(m.key) + len(m.value) + 4
	}
	return o.AppendJSON(make([]byte, 0, size))
}

// SetMember returns a copy of the JSON object raw with the member at path
// (a member of raw, or a member of a member object, and so on) set to
// value; every other byte is kept. A member that is missing is added at the
// end of its object; an intermediate member that is missing or not an
// object leaves raw as it is and reports false. It costs one pass over raw
// and one allocation, where parsing into Objects costs one per level.
func SetMember(raw, value json.RawMessage, path ...string) (json.RawMessage, bool) {
	start, end, insert, ok := memberSpan(raw, path)
	if !ok {
		return raw, false
	}
	var prefix string
	if insert {
		// Before the closing brace: a comma unless the object is empty.
		if j := lastNonSpace(raw, start); raw[j] != '{' {
			prefix = ","
		}
		prefix += string(AppendString(nil, path[len(path)-1])) + ":"
	}
	out := make([]byte, 0, len(raw)-(end-start)+len(prefix)+len(value))
	out = append(out, raw[:start]...)
	out = append(out, prefix...)
	out = append(out, value...)
	return append(out, raw[end:]...), true
}

// memberSpan finds the value at path in raw: its span, or (insert) the
// position of the closing brace of the object it would be added to.
func memberSpan(raw []byte, path []string) (start, end int, insert, ok bool) {
	i := skipSpace(raw, 0)
	for depth, key := range path {
		if i >= len(raw) || raw[i] != '{' {
			return 0, 0, false, false
		}
		r := readObject(raw, i)
		found := false
		for {
			more, err := r.more()
			if err != nil {
				return 0, 0, false, false
			}
			if !more {
				break
			}
			k, escaped, at, err := r.key()
			if err != nil {
				return 0, 0, false, false
			}
			vend, err := skipValue(raw, at, depth+1)
			if err != nil {
				return 0, 0, false, false
			}
			if keyString(k, escaped) == key {
				start, end, found = at, vend, true
				break
			}
			r.i = vend
		}
		if !found {
			if depth < len(path)-1 {
				return 0, 0, false, false
			}
			return r.i - 1, r.i - 1, true, true // r.i is just after '}'
		}
		i = start
	}
	return start, end, false, true
}

func lastNonSpace(b []byte, before int) int {
	j := before - 1
	for j > 0 && isSpace(b[j]) {
		j--
	}
	return j
}

// parseMembers is ParseObject into a reused slice: the members of the JSON
// object b (which must be one, whole), appended to dst[:0]'s storage. The
// members share b's bytes.
func parseMembers(dst []member, b []byte) ([]member, error) {
	dst = dst[:0]
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return dst, &DecodeError{Kind: KindSyntax, Offset: int64(i), Msg: "not a JSON object"}
	}
	r := readObject(b, i)
	for {
		ok, err := r.more()
		if err != nil {
			return dst, decodeError(err)
		}
		if !ok {
			break
		}
		key, escaped, at, err := r.key()
		if err != nil {
			return dst, decodeError(err)
		}
		end, err := skipValue(b, at, 1)
		if err != nil {
			return dst, decodeError(err)
		}
		dst = append(dst, member{key: keyString(key, escaped), rawKey: b[r.i : r.i+len(key)+2], value: b[at:end]})
		r.i = end
	}
	if skipSpace(b, r.i) != len(b) {
		return dst, &DecodeError{Kind: KindSyntax, Offset: int64(r.i), Msg: "unexpected data after the object"}
	}
	return dst, nil
}

// lookup returns the value of the last member named key, or nil.
func lookup(members []member, key string) []byte {
	for i := len(members) - 1; i >= 0; i-- {
		if members[i].key == key {
			return members[i].value
		}
	}
	return nil
}

// index returns the position of the last member named key, or -1.
func index(members []member, key string) int {
	for i := len(members) - 1; i >= 0; i-- {
		if members[i].key == key {
			return i
		}
	}
	return -1
}

// clone returns m with its own copy of the bytes it shares.
func (m member) clone() member {
	b := make([]byte, 0, len(m.key)+len(m.rawKey)+len(m.value))
	b = append(b, m.key...)
	b = append(b, m.rawKey...)
	b = append(b, m.value...)
	return member{key: string(b[:len(m.key)]), rawKey: b[len(m.key) : len(m.key)+len(m.rawKey) : len(m.key)+len(m.rawKey)], value: b[len(m.key)+len(m.rawKey):]}
}

// isNull reports whether a raw value is absent or null.
func isNull(v []byte) bool { return len(v) == 0 || string(v) == "null" }
