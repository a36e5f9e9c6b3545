package wire

import (
	"encoding/json"
	"unicode/utf8"
	"unsafe"
)

// Value decodes one JSON text into the values encoding/json gives with
// UseNumber — map[string]any, []any, string, json.Number, bool and nil —
// which is what a JSON Schema validator takes. ok is false when b is not
// one valid JSON text; the caller words that error. A member repeated in
// an object keeps its last value, as encoding/json does, and invalid UTF-8
// in a string becomes U+FFFD.
//
// It is the argument check's decoder: encoding/json's Decoder costs a
// 4 KB buffer and a reflection walk per call, several microseconds for a
// call's few hundred bytes; this walks the bytes the scanner has already
// validated. The strings it returns may share b's bytes, which the caller
// must not modify afterwards.
func Value(b []byte) (v any, ok bool) {
	if !Valid(b) {
		return nil, false
	}
	v, _ = value(b, skipSpace(b, 0))
	return v, true
}

// ValueString is Value for JSON text held in a string: it reads the
// string's own bytes, which cannot change, without copying them.
func ValueString(s string) (v any, ok bool) {
	return Value(unsafe.Slice(unsafe.StringData(s), len(s)))
}

// value decodes the valid JSON value at b[i] and returns where it ends.
// Its recursion is bounded by the scanner's maxDepth, checked by Valid.
func value(b []byte, i int) (any, int) {
	switch c := b[i]; c {
	case '{':
		m := map[string]any{}
		r := readObject(b, i)
		for {
			if more, _ := r.more(); !more {
				return m, r.i
			}
			k, escaped, at, _ := r.key()
			var v any
			v, r.i = value(b, at)
			m[keyString(k, escaped || !utf8.Valid(k))] = v // invalid UTF-8 decoded as U+FFFD
		}
	case '[':
		a := []any{}
		r := readArray(b, i)
		for {
			if more, _ := r.more(); !more {
				return a, r.i
			}
			var v any
			v, r.i = value(b, r.i)
			a = append(a, v)
		}
	case '"':
		end, escaped, _ := skipString(b, i)
		return stringView(b, i, end, escaped), end
	case 't':
		return true, i + len("true")
	case 'f':
		return false, i + len("false")
	case 'n':
		return nil, i + len("null")
	}
	end, _ := skipNumber(b, i)
	return json.Number(b[i:end]), end
}
