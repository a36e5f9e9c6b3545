package wire

import "unicode/utf8"

// TextRule is what TextChars does with a member's value.
type TextRule uint8

// The rules.
const (
	TextCount  TextRule = iota // counted
	TextSkip                   // not counted (an id, a type, binary data)
	TextIfText                 // counted when its object's "type" is "text" (a document's text source's data), else not (base64)
)

// TextChars counts the characters (runes) of the string values in the
// JSON value raw — what a model reads as text, wherever a protocol puts
// it (a content part, a document block, a tool's description or schema,
// a search result, past thinking, a member no protocol here knows) —
// each member's value as rule says for its key (ids, types, opaque
// signatures and binary data are skipped). Member keys are not counted.
// An escaped string counts as it decodes (\n is one character). A value
// that is not valid JSON counts what was read before the fault; the
// callers' values were validated when the request was decoded. It
// allocates only for an escaped string, and is linear in raw.
func TextChars(raw []byte, rule func(key string) TextRule) int {
	n, _ := textChars(raw, skipSpace(raw, 0), 0, rule)
	return n
}

// textChars counts the value at b[i] and returns where it ends.
func textChars(b []byte, i, depth int, rule func(string) TextRule) (int, int) {
	if i >= len(b) || depth > maxDepth {
		return 0, len(b)
	}
	switch b[i] {
	case '"':
		end, escaped, err := skipString(b, i)
		if err != nil {
			return 0, len(b)
		}
		if !escaped {
			return utf8.RuneCount(b[i+1 : end-1]), end
		}
		var buf [64]byte
		return utf8.RuneCount(appendUnquoted(buf[:0], b, i, end)), end
	case '{':
		n, ifText, typeText := 0, 0, false
		r := readObject(b, i)
		for {
			ok, err := r.more()
			if err != nil || !ok {
				if typeText {
					n += ifText
				}
				return n, r.i
			}
			key, escaped, at, err := r.key()
			if err != nil {
				return n, len(b)
			}
			k, what := keyString(key, escaped), TextCount
			if rule != nil {
				what = rule(k)
			}
			if what == TextSkip {
				end, err := skipValue(b, at, depth+1)
				if err != nil {
					return n, len(b)
				}
				typeText = typeText || k == "type" && string(b[at:end]) == `"text"`
				r.i = end
				continue
			}
			m, end := textChars(b, at, depth+1, rule)
			if what == TextIfText {
				ifText += m
			} else {
				n += m
			}
			r.i = end
		}
	case '[':
		n := 0
		r := readArray(b, i)
		for {
			ok, err := r.more()
			if err != nil || !ok {
				return n, r.i
			}
			m, end := textChars(b, r.i, depth+1, rule)
			n, r.i = n+m, end
		}
	}
	end, err := skipScalar(b, i)
	if err != nil {
		return 0, len(b)
	}
	return 0, end
}
