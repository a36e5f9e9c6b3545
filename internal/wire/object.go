package wire

import (
	"encoding/json"
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
	return appendString(dst, m.key)
}

// ParseObject splits b, which must be a JSON object, into its members. The
// Object refers to b's bytes: b must not be modified afterwards.
func ParseObject(b []byte) (Object, error) {
	var o Object
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return o, &DecodeError{Offset: int64(i), Msg: "not a JSON object"}
	}
	r := readObject(b, i)
	for {
		ok, err := r.more()
		if err != nil {
			return Object{}, decodeError(err)
		}
		if !ok {
			break
		}
		key, escaped, at, err := r.key()
		if err != nil {
			return Object{}, decodeError(err)
		}
		end, err := skipValue(b, at, 1)
		if err != nil {
			return Object{}, decodeError(err)
		}
		o.members = append(o.members, member{key: keyString(key, escaped), rawKey: b[r.i : r.i+len(key)+2], value: b[at:end]})
		r.i = end
	}
	if skipSpace(b, r.i) != len(b) {
		return Object{}, &DecodeError{Offset: int64(r.i), Msg: "unexpected data after the object"}
	}
	return o, nil
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
