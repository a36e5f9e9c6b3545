package wire

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// A small validating JSON scanner. The request path needs the boundaries of
// values (to keep their bytes) and a handful of typed fields; decoding a
// 50 KB transcript through encoding/json's Decoder costs over a millisecond,
// while one pass over the bytes costs tens of microseconds. The scanner
// accepts exactly the JSON grammar of RFC 8259 (as encoding/json's Valid
// does; strings are not checked for valid UTF-8), and nests at most
// maxDepth levels.

const maxDepth = 10000

// syntaxErr is a JSON syntax error at a byte offset of the scanned input.
type syntaxErr struct {
	off int
	msg string
	eof bool // the input ended before the value did
}

func (e *syntaxErr) Error() string { return e.msg }

// special marks the bytes that end the fast path of a string scan.
var special = func() (t [256]bool) {
	for c := range 0x20 {
		t[c] = true
	}
	t['"'], t['\\'] = true, true
	return t
}()

func isSpace(c byte) bool { return c == ' ' || c == '\n' || c == '\r' || c == '\t' }

func skipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

func unexpected(b []byte, i int, context string) error {
	if i >= len(b) {
		return &syntaxErr{off: i, msg: "unexpected end of JSON input", eof: true}
	}
	return &syntaxErr{off: i, msg: fmt.Sprintf("invalid character %s %s", quoteChar(b[i]), context)}
}

func quoteChar(c byte) string {
	if c == '\'' {
		return `'\''`
	}
	if c == '"' {
		return `'"'`
	}
	s := strconv.Quote(string(c))
	return "'" + s[1:len(s)-1] + "'"
}

// skipString returns the end of the string starting at b[i] == '"' and
// whether it contains escapes.
func skipString(b []byte, i int) (int, bool, error) {
	j, escaped := i+1, false
	for {
		// Eight bytes at a time while none is '"', '\\' or a control byte;
		// in the eight that hold one, straight to the first (the lowest
		// byte a mask flags is exact: only bytes above a flagged one can be
		// flagged falsely, by the borrow).
		for p := unsafe.Pointer(unsafe.SliceData(b)); j+8 <= len(b); j += 8 {
			if m := special8(word(p, j)); m != 0 {
				j += bits.TrailingZeros64(m) >> 3
				break
			}
		}
		for j < len(b) && !special[b[j]] {
			j++
		}
		if j >= len(b) {
			return 0, false, &syntaxErr{off: len(b), msg: "unexpected end of JSON input (unterminated string)", eof: true}
		}
		switch c := b[j]; {
		case c == '"':
			return j + 1, escaped, nil
		case c == '\\':
			escaped = true
			if j+1 >= len(b) {
				return 0, false, &syntaxErr{off: len(b), msg: "unexpected end of JSON input (unterminated string)", eof: true}
			}
			switch b[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j += 2
			case 'u':
				if j+6 > len(b) {
					return 0, false, &syntaxErr{off: len(b), msg: "unexpected end of JSON input (unterminated string)", eof: true}
				}
				for k := j + 2; k < j+6; k++ {
					if !isHex(b[k]) {
						return 0, false, unexpected(b, k, "in \\u hexadecimal character escape")
					}
				}
				j += 6
			default:
				return 0, false, unexpected(b, j+1, "in string escape code")
			}
		default:
			return 0, false, unexpected(b, j, "in string literal")
		}
	}
}

const (
	ones        = 0x0101010101010101
	highs       = 0x8080808080808080
	quotes      = '"' * ones
	backslashes = '\\' * ones
)

// special8 flags (its high bit set) each byte of w that is '"', '\\' or
// below 0x20 (a control byte): its lowest flag is exact, while a byte above
// a flagged one may be flagged falsely by the borrow.
func special8(w uint64) uint64 {
	q, s := w^quotes, w^backslashes
	return ((q-ones)&^q | (s-ones)&^s | (w-0x20*ones)&^w) & highs
}

// word returns the eight bytes at p+i (a slice's data, which the caller
// has checked holds them), little-endian: without the bounds checks that
// b[i:] costs in a loop.
func word(p unsafe.Pointer, i int) uint64 {
	return binary.LittleEndian.Uint64((*[8]byte)(unsafe.Add(p, i))[:])
}

func isHex(c byte) bool   { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }
func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func skipNumber(b []byte, i int) (int, error) {
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	default:
		return 0, unexpected(b, i, "in numeric literal")
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || !isDigit(b[i]) {
			return 0, unexpected(b, i, "after decimal point in numeric literal")
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || !isDigit(b[i]) {
			return 0, unexpected(b, i, "in exponent of numeric literal")
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	return i, nil
}

func skipLiteral(b []byte, i int, lit string) (int, error) {
	for k := 0; k < len(lit); k++ {
		if i+k >= len(b) || b[i+k] != lit[k] {
			return 0, unexpected(b, i+k, "in literal "+lit+" (expecting '"+lit[k:k+1]+"')")
		}
	}
	return i + len(lit), nil
}

// skipValue returns the end of the JSON value starting at b[i] (no leading
// space).
func skipValue(b []byte, i, depth int) (int, error) {
	if i >= len(b) {
		return 0, unexpected(b, i, "")
	}
	if c := b[i]; c == '{' || c == '[' {
		return skipContainer(b, i, depth+1)
	}
	return skipScalar(b, i)
}

// keyString returns a member key as a Go string. An unescaped key shares
// the input's bytes (see stringView).
func keyString(key []byte, escaped bool) string {
	if !escaped {
		if len(key) == 0 {
			return ""
		}
		return unsafe.String(&key[0], len(key))
	}
	var s string
	// The key was validated by skipString; only the quotes are needed.
	_ = json.Unmarshal(append(append([]byte{'"'}, key...), '"'), &s)
	return s
}

// stringView is stringValue without a copy for the common case: the string
// shares the bytes of b, which the caller must never modify afterwards
// (DecodeRequest's contract). Escaped or invalid UTF-8 strings are decoded
// into new memory.
func stringView(b []byte, i, end int, escaped bool) string {
	if end-i == 2 {
		return ""
	}
	if !escaped && validUTF8(b[i+1:end-1]) {
		return unsafe.String(&b[i+1], end-i-2)
	}
	return stringValue(b, i, end, escaped)
}

// validUTF8 is utf8.Valid, with the ASCII a request's short strings
// (roles, ids, names) mostly are checked a word at a time first: for those
// utf8.Valid's own set-up costs more than the check.
func validUTF8(s []byte) bool {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		if binary.LittleEndian.Uint64(s[i:])&highs != 0 {
			return utf8.Valid(s[i:])
		}
	}
	for ; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return utf8.Valid(s[i:])
		}
	}
	return true
}

// stringValue decodes the JSON string b[i:end] (b[i] == '"'), which
// skipString has validated. Invalid UTF-8 becomes U+FFFD, as encoding/json
// does.
func stringValue(b []byte, i, end int, escaped bool) string {
	in := b[i+1 : end-1]
	if !escaped && validUTF8(in) {
		return string(in)
	}
	return string(appendUnquoted(make([]byte, 0, len(in)), b, i, end))
}

// appendUnquoted appends the text of the JSON string b[i:end] (validated
// by skipString) to dst, as stringValue decodes it.
func appendUnquoted(dst, b []byte, i, end int) []byte {
	in := b[i+1 : end-1]
	for k := 0; k < len(in); {
		c := in[k]
		switch {
		case c == '\\':
			k++
			switch in[k] {
			case 'b':
				dst = append(dst, '\b')
			case 'f':
				dst = append(dst, '\f')
			case 'n':
				dst = append(dst, '\n')
			case 'r':
				dst = append(dst, '\r')
			case 't':
				dst = append(dst, '\t')
			case 'u':
				r := hex4(in[k+1:])
				k += 4
				if utf16.IsSurrogate(r) {
					r2 := rune(-1)
					if k+6 < len(in) && in[k+1] == '\\' && in[k+2] == 'u' {
						r2 = hex4(in[k+3:])
					}
					if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
						k += 6
						r = dec
					} else {
						r = utf8.RuneError
					}
				}
				dst = utf8.AppendRune(dst, r)
			default: // '"', '\\', '/'
				dst = append(dst, in[k])
			}
			k++
		case c < utf8.RuneSelf:
			dst = append(dst, c)
			k++
		default:
			r, size := utf8.DecodeRune(in[k:])
			if r == utf8.RuneError && size == 1 {
				dst = append(dst, "\ufffd"...)
			} else {
				dst = append(dst, in[k:k+size]...)
			}
			k += size
		}
	}
	return dst
}

// hex4 decodes four hex digits (validated by skipString).
func hex4(b []byte) rune {
	var r rune
	for _, c := range b[:4] {
		switch {
		case c <= '9':
			c -= '0'
		case c <= 'F':
			c -= 'A' - 10
		default:
			c -= 'a' - 10
		}
		r = r<<4 | rune(c)
	}
	return r
}

// kindAt names the JSON type of the value starting at b[i], for errors.
func kindAt(b []byte, i int) string {
	switch b[i] {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// skipContainer returns the end of the object or array at b[i], whose
// nesting level is depth. It walks the nesting with a stack of the open
// containers' closing brackets, not by recursion: 10,000 levels cost
// 10,000 bytes of stack, not a goroutine stack of megabytes, and a few
// nanoseconds each.
func skipContainer(b []byte, i, depth int) (int, error) {
	var buf [64]byte
	open := buf[:0] // the closing bracket of each open container, innermost last
	for {
		// b[i] opens a container.
		if depth+len(open) > maxDepth {
			return 0, &syntaxErr{off: i, msg: "exceeded max depth"}
		}
		closing := byte(']')
		if b[i] == '{' {
			closing = '}'
		}
		open = append(open, closing)
		i = skipSpace(b, i+1)
		if i < len(b) && b[i] == closing {
			open = open[:len(open)-1] // empty
			i++
		} else {
			var err error
			if i, err = startElement(b, i, closing); err != nil {
				return 0, err
			}
			if b[i] == '{' || b[i] == '[' {
				continue // descend
			}
			if i, err = skipScalar(b, i); err != nil {
				return 0, err
			}
		}
		// A value ended at i: move past separators and closings until the
		// next value starts, or the outermost container closes.
		for {
			if len(open) == 0 {
				return i, nil
			}
			closing := open[len(open)-1]
			i = skipSpace(b, i)
			if i < len(b) && b[i] == closing {
				open = open[:len(open)-1]
				i++
				continue
			}
			if i >= len(b) || b[i] != ',' {
				if closing == '}' {
					return 0, unexpected(b, i, "after object key:value pair")
				}
				return 0, unexpected(b, i, "after array element")
			}
			var err error
			if i, err = startElement(b, skipSpace(b, i+1), closing); err != nil {
				return 0, err
			}
			if b[i] == '{' || b[i] == '[' {
				break // descend
			}
			if i, err = skipScalar(b, i); err != nil {
				return 0, err
			}
		}
	}
}

// startElement moves to the start of a container's next value: past the
// key and colon in an object (closing '}'). It fails at the end of input.
func startElement(b []byte, i int, closing byte) (int, error) {
	if closing == '}' {
		if i >= len(b) || b[i] != '"' {
			return 0, unexpected(b, i, "looking for beginning of object key string")
		}
		kend, _, err := skipString(b, i)
		if err != nil {
			return 0, err
		}
		j := skipSpace(b, kend)
		if j >= len(b) || b[j] != ':' {
			return 0, unexpected(b, j, "after object key")
		}
		i = skipSpace(b, j+1)
	}
	if i >= len(b) {
		return 0, unexpected(b, i, "")
	}
	return i, nil
}

// skipScalar returns the end of the string, number or literal at b[i].
func skipScalar(b []byte, i int) (int, error) {
	switch c := b[i]; {
	case c == '"':
		end, _, err := skipString(b, i)
		return end, err
	case c == '-' || isDigit(c):
		return skipNumber(b, i)
	case c == 't':
		return skipLiteral(b, i, "true")
	case c == 'f':
		return skipLiteral(b, i, "false")
	case c == 'n':
		return skipLiteral(b, i, "null")
	}
	return 0, unexpected(b, i, "looking for beginning of value")
}

// objectReader walks the members of an object without callbacks (so
// decoding allocates nothing per member). Use: r := openReader(b, i); for
// { key, esc, at, ok, err := r.next(); …scan the value at `at`…; r.i = end }.
type objectReader struct {
	b     []byte
	i     int // after '{' or after the last value
	n     int // members returned so far
	close byte
}

func readObject(b []byte, i int) objectReader { return objectReader{b: b, i: i + 1, close: '}'} }
func readArray(b []byte, i int) objectReader  { return objectReader{b: b, i: i + 1, close: ']'} }

// more moves past the separator before the next member or element. It
// returns false, with r.i just after the closing bracket, at the end.
func (r *objectReader) more() (bool, error) {
	b := r.b
	i := skipSpace(b, r.i)
	if r.n > 0 {
		switch {
		case i < len(b) && b[i] == ',':
			i = skipSpace(b, i+1)
		case i < len(b) && b[i] == r.close:
			r.i = i + 1
			return false, nil
		default:
			if r.close == '}' {
				return false, unexpected(b, i, "after object key:value pair")
			}
			return false, unexpected(b, i, "after array element")
		}
	} else if i < len(b) && b[i] == r.close {
		r.i = i + 1
		return false, nil
	}
	r.n++
	r.i = i
	if i >= len(b) {
		return false, unexpected(b, i, "")
	}
	return true, nil
}

// key reads a member's key and colon; it returns the key's bytes (without
// quotes), whether they hold escapes, and where the value starts.
func (r *objectReader) key() ([]byte, bool, int, error) {
	b, i := r.b, r.i
	if b[i] != '"' {
		return nil, false, 0, unexpected(b, i, "looking for beginning of object key string")
	}
	kend, escaped, err := skipString(b, i)
	if err != nil {
		return nil, false, 0, err
	}
	j := skipSpace(b, kend)
	if j >= len(b) || b[j] != ':' {
		return nil, false, 0, unexpected(b, j, "after object key")
	}
	j = skipSpace(b, j+1)
	if j >= len(b) {
		return nil, false, 0, unexpected(b, j, "")
	}
	return b[i+1 : kend-1], escaped, j, nil
}

// Valid reports whether b is one JSON text, as encoding/json's Valid does
// (every JSON number counts, 1e999 included), using the scanner.
func Valid(b []byte) bool {
	i := skipSpace(b, 0)
	end, err := skipValue(b, i, 0)
	return err == nil && skipSpace(b, end) == len(b)
}

// elements splits a JSON array into its elements' bytes. It returns false
// when raw is not a (valid) array.
func elements(raw []byte, dst []json.RawMessage) ([]json.RawMessage, bool) {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '[' {
		return dst, false
	}
	r := readArray(raw, i)
	for {
		ok, err := r.more()
		if err != nil {
			return dst, false
		}
		if !ok {
			return dst, skipSpace(raw, r.i) == len(raw)
		}
		end, err := skipValue(raw, r.i, 1)
		if err != nil {
			return dst, false
		}
		dst = append(dst, raw[r.i:end])
		r.i = end
	}
}

// stringOf decodes a raw JSON string value.
func stringOf(raw []byte) (string, bool) {
	if len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	end, escaped, err := skipString(raw, 0)
	if err != nil || end != len(raw) {
		return "", false
	}
	return stringValue(raw, 0, end, escaped), true
}

// ArrayLen counts a JSON array's elements without decoding or copying
// them (0 when raw is not a valid array): the bound on a request's
// content blocks is checked with it before any is decoded.
func ArrayLen(raw []byte) int {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '[' {
		return 0
	}
	r := readArray(raw, i)
	n := 0
	for {
		ok, err := r.more()
		if err != nil {
			return 0
		}
		if !ok {
			return n
		}
		end, err := skipValue(raw, r.i, 1)
		if err != nil {
			return 0
		}
		n, r.i = n+1, end
	}
}

// EachElement calls fn with each element of the JSON array raw, in order
// (views of raw, nothing copied or allocated), until fn returns false; it
// reports false when raw is not a valid array (fn may have seen the
// elements before the fault).
func EachElement(raw []byte, fn func(i int, elem []byte) bool) bool {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '[' {
		return false
	}
	r := readArray(raw, i)
	for n := 0; ; n++ {
		ok, err := r.more()
		if err != nil {
			return false
		}
		if !ok {
			return skipSpace(raw, r.i) == len(raw)
		}
		end, err := skipValue(raw, r.i, 1)
		if err != nil {
			return false
		}
		if !fn(n, raw[r.i:end]) {
			return true
		}
		r.i = end
	}
}

// Member returns the raw value of the member key of the JSON object raw
// (the last one when the key repeats, as Object.Get), a view of raw,
// without parsing the object into members: nothing is allocated but for a
// key written with escapes. ok is false when raw is not a valid object or
// has no such member.
func Member(raw []byte, key string) (value json.RawMessage, ok bool) {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return nil, false
	}
	r := readObject(raw, i)
	for {
		more, err := r.more()
		if err != nil {
			return nil, false
		}
		if !more {
			if skipSpace(raw, r.i) != len(raw) {
				return nil, false
			}
			return value, ok
		}
		k, escaped, at, err := r.key()
		if err != nil {
			return nil, false
		}
		end, err := skipValue(raw, at, 1)
		if err != nil {
			return nil, false
		}
		if len(k) == len(key) && string(k) == key && !escaped || escaped && keyString(k, true) == key {
			value, ok = raw[at:end], true
		}
		r.i = end
	}
}

// EachMember calls fn with each member of the JSON object raw, in order,
// until fn returns false: its name (a view of raw unless written with
// escapes) and its value (a view of raw); nothing is copied. It reports
// false when raw is not a valid object (fn may have seen the members
// before the fault).
func EachMember(raw []byte, fn func(key string, v []byte) bool) bool {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return false
	}
	r := readObject(raw, i)
	for {
		more, err := r.more()
		if err != nil {
			return false
		}
		if !more {
			return skipSpace(raw, r.i) == len(raw)
		}
		k, escaped, at, err := r.key()
		if err != nil {
			return false
		}
		end, err := skipValue(raw, at, 1)
		if err != nil {
			return false
		}
		if !fn(keyString(k, escaped), raw[at:end]) {
			return true
		}
		r.i = end
	}
}

// StringToken is v when it is a JSON string, nil for null; ok is false
// for any other value (a member absent is nil, and not ok).
func StringToken(v []byte) (tok []byte, ok bool) {
	switch {
	case string(v) == "null":
		return nil, true
	case len(v) > 0 && v[0] == '"':
		return v, true
	}
	return nil, false
}

// KnownString decodes the JSON string v, one of known returned as that
// constant (nothing allocated for a usual type or role); null is "".
func KnownString(v []byte, known []string) (string, bool) {
	if inner, plain := plainString(v); plain {
		for _, k := range known {
			if string(inner) == k {
				return k, true
			}
		}
	}
	if string(v) == "null" {
		return "", true
	}
	return stringOf(v)
}

// AppendText appends to dst the text AsString reads from raw, decoded in
// place of a string that would hold it; false (dst as it was) when raw
// is not such a value.
func AppendText(dst, raw []byte) ([]byte, bool) {
	v := bytes.Trim(raw, " \t\r\n")
	if string(v) == "null" {
		return dst, true
	}
	if len(v) == 0 || v[0] != '"' {
		return dst, false
	}
	end, escaped, err := skipString(v, 0)
	if err != nil || end != len(v) {
		return dst, false
	}
	if in := v[1 : end-1]; !escaped && validUTF8(in) {
		return append(dst, in...), true
	}
	return appendUnquoted(dst, v, 0, end), true
}

// plainString is the text of v when v is a JSON string written without
// escapes (its text is then its bytes): the usual string, read in place.
func plainString(v []byte) ([]byte, bool) {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return nil, false
	}
	inner := v[1 : len(v)-1]
	for _, c := range inner {
		if c < 0x20 || c == '"' || c == '\\' {
			return nil, false
		}
	}
	return inner, utf8.Valid(inner)
}

// StringIs reports whether the JSON value v is the string want, however
// it is escaped (null stands for ""), decoding nothing when it is written
// without escapes.
func StringIs(v []byte, want string) bool {
	if inner, plain := plainString(v); plain {
		return string(inner) == want
	}
	if string(v) == "null" {
		return want == ""
	}
	s, ok := stringOf(v)
	return ok && s == want
}

// StringPrefix reports whether the JSON string v (or null, "") is where s
// starts, and its length: what a caller walking pieces of a text along
// it moves by.
func StringPrefix(v []byte, s string) (int, bool) {
	if string(v) == "null" {
		return 0, true
	}
	if inner, plain := plainString(v); plain {
		return len(inner), len(inner) <= len(s) && string(inner) == s[:len(inner)]
	}
	text, ok := stringOf(v)
	return len(text), ok && strings.HasPrefix(s, text)
}

// Elements splits a JSON array into its elements' bytes (no copy); false
// when raw is not a valid array. The elements are read into a list kept
// between calls and copied out at their number: an array costs its
// elements once, not a regrown list's worth.
func Elements(raw []byte) ([]json.RawMessage, bool) {
	scratch := scratchElements.Get().(*[]json.RawMessage)
	elems, ok := elements(raw, (*scratch)[:0])
	out := slices.Clone(elems)
	if len(out) == 0 {
		out = nil
	}
	if cap(elems) <= maxScratch {
		clear(elems)
		*scratch = elems[:0]
		scratchElements.Put(scratch)
	}
	return out, ok
}

// scratchElements are lists Elements reads into.
var scratchElements = sync.Pool{New: func() any { return new([]json.RawMessage) }}

// String decodes a raw JSON string value; false when raw is not one.
func String(raw []byte) (string, bool) { return stringOf(raw) }

// AsString is String for a value json.Unmarshal would read into a string:
// a JSON string, or null (""), with JSON's whitespace around it. Any
// other value is not read at all, so a caller that tries a string before
// an array scans an array once.
func AsString(raw []byte) (string, bool) {
	v := bytes.Trim(raw, " \t\r\n") // JSON's whitespace only
	if string(v) == "null" {
		return "", true
	}
	return stringOf(v)
}
