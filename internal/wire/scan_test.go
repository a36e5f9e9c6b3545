package wire

import (
	"encoding/json"
	"strings"
	"testing"
)

// ArrayLen counts a JSON array's elements without decoding them: nested
// arrays and objects, commas and brackets inside strings (escaped quotes
// too) are not elements; what is not a valid array has none.
func TestArrayLen(t *testing.T) {
	for raw, want := range map[string]int{
		`[]`: 0, ` [ ] `: 0, `"text"`: 0, `null`: 0, `[1]`: 1, `[{"a":[1,2,3]},{"b":{"c":","}}]`: 2,
		`["a,b","c\",d]"]`: 2, `[1,`: 0, `[{"type":"text","text":"x"},{"type":"text","text":"y"},{"type":"text","text":"z"}]`: 3,
	} {
		if got := ArrayLen([]byte(raw)); got != want {
			t.Errorf("%s: %d, want %d", raw, got, want)
		}
	}
}

// FuzzAsString: AsString is json.Unmarshal into a string, whatever the
// input: the same answer and the same string; AppendText appends that
// string.
func FuzzAsString(f *testing.F) {
	for _, s := range []string{`"a"`, ` "b\n\u00e9" `, `null`, `[{"type":"text"}]`, `5`, ``, `"a" x`, `nul`, `"\ud800"`, `{"a":1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		s, ok := AsString(b)
		var want string
		err := json.Unmarshal(b, &want)
		if ok != (err == nil) || ok && s != want {
			t.Fatalf("AsString(%q) = %q %v; json.Unmarshal: %q %v", b, s, ok, want, err)
		}
		if got, ok := AppendText([]byte("x"), b); ok != (err == nil) || string(got) != "x"+s {
			t.Fatalf("AppendText(%q) = %q %v; AsString: %q %v", b, got, ok, s, ok)
		}
	})
}

// AppendString writes what json.Marshal writes for any string, and
// AppendToken a JSON string that means what the token meant.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{`a`, "b\n\u00e9<&>\u2028\u2029", "\xff\xfe", "\x00\x1f\\\"", `"\u00e9\/"`, `"\ud800"`, "\"\xff\"", `null`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		want, _ := json.Marshal(string(b))
		if got := AppendString([]byte("x"), b); string(got) != "x"+string(want) {
			t.Fatalf("AppendString(%q) = %s, want x%s", b, got, want)
		}
		if got := AppendString(nil, string(b)); string(got) != string(want) {
			t.Fatalf("AppendString(%q) = %s, want %s", b, got, want)
		}
		var s, back string
		if len(b) == 0 || b[0] != '"' || json.Unmarshal(b, &s) != nil {
			return
		}
		tok := AppendToken(nil, b)
		if err := json.Unmarshal(tok, &back); err != nil || back != s {
			t.Fatalf("AppendToken(%q) = %s (%q, %v), want %q", b, tok, back, err, s)
		}
	})
}

// EachMember sees the members ParseObject sees, in order.
func FuzzEachMember(f *testing.F) {
	for _, s := range []string{`{"a":1,"b":[2,{"c":3}]}`, ` {"\u0061":"x"} `, `{}`, `{"a":1,}`, `[1]`, `{"a":1} x`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		o, err := ParseObject(b)
		var keys []string
		var vals []string
		ok := EachMember(b, func(k string, v []byte) bool {
			keys, vals = append(keys, k), append(vals, string(v))
			return true
		})
		if ok != (err == nil) {
			t.Fatalf("EachMember(%q) = %v; ParseObject: %v", b, ok, err)
		}
		if !ok {
			return
		}
		n := 0
		for k, v := range o.Members() {
			if n >= len(keys) || keys[n] != k || vals[n] != string(v) {
				t.Fatalf("EachMember(%q): member %d is %q, ParseObject's %q", b, n, keys, k)
			}
			n++
		}
		if n != len(keys) {
			t.Fatalf("EachMember(%q): %d members, ParseObject %d", b, len(keys), n)
		}
	})
}

// StringIs, StringPrefix and KnownString agree with a decoded string.
func FuzzStringIs(f *testing.F) {
	for _, s := range [][2]string{{`"abc"`, "abc"}, {`"a\u0062c"`, "abcd"}, {`null`, ""}, {`5`, "5"}, {"\"\xff\"", "\ufffd"}, {`"ab"`, "abc"}, {`"\u00e9"`, "é!"}} {
		f.Add([]byte(s[0]), s[1])
	}
	f.Fuzz(func(t *testing.T, v []byte, want string) {
		var s *string
		// Values as the scanner gives them: no whitespace around.
		ok := json.Unmarshal(v, &s) == nil && (len(v) > 1 && v[0] == '"' && v[len(v)-1] == '"' || string(v) == "null")
		text := ""
		if s != nil {
			text = *s
		}
		if got := StringIs(v, want); got != (ok && text == want) {
			t.Fatalf("StringIs(%q, %q) = %v; decoded %q %v", v, want, got, text, ok)
		}
		if got, kok := KnownString(v, []string{"text", want}); kok != ok || ok && got != text {
			t.Fatalf("KnownString(%q) = %q %v; decoded %q %v", v, got, kok, text, ok)
		}
		n, got := StringPrefix(v, want)
		if got != (ok && strings.HasPrefix(want, text)) || got && n != len(text) {
			t.Fatalf("StringPrefix(%q, %q) = %d %v; decoded %q %v", v, want, n, got, text, ok)
		}
	})
}
