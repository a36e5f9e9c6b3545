package wire

import (
	"bytes"
	"encoding/json"
	"testing"
	"unicode/utf8"
)

// textCharsRef is TextChars through encoding/json's token stream: every
// string in value position counted, but the values of skipped keys
// (whole, whatever they hold), and those of TextIfText keys only in an
// object whose type is "text"; -1 for invalid JSON.
func textCharsRef(raw []byte, rule func(string) TextRule) int {
	if !json.Valid(raw) {
		return -1
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	type frame struct {
		object, wantKey    bool
		what               TextRule // the rule of the member this container is the value of
		counted, ifText    int
		typeText, lastType bool
		pending            TextRule // the rule of the member whose value comes next
	}
	stack := []*frame{{what: TextCount}}
	for {
		tok, err := dec.Token()
		if err != nil {
			return stack[0].counted
		}
		top := stack[len(stack)-1]
		if top.object && top.wantKey {
			if d, ok := tok.(json.Delim); ok && d == '}' {
				// closes below
			} else {
				k := tok.(string)
				top.wantKey, top.pending, top.lastType = false, rule(k), k == "type"
				continue
			}
		}
		// A value (or a closing bracket) in top.
		what := TextCount
		if top.object {
			what = top.pending
		}
		if d, ok := tok.(json.Delim); ok {
			switch d {
			case '{', '[':
				stack = append(stack, &frame{object: d == '{', wantKey: d == '{', what: what})
				continue
			}
			done := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			n := done.counted
			if done.typeText {
				n += done.ifText
			}
			parent := stack[len(stack)-1]
			switch done.what {
			case TextCount:
				parent.counted += n
			case TextIfText:
				parent.ifText += n
			}
			if parent.object {
				parent.wantKey = true
			}
			continue
		}
		if s, ok := tok.(string); ok {
			switch what {
			case TextCount:
				top.counted += utf8.RuneCountInString(s)
			case TextIfText:
				top.ifText += utf8.RuneCountInString(s)
			case TextSkip:
				if top.object && top.lastType && s == "text" {
					top.typeText = true
				}
			}
		}
		if top.object {
			top.wantKey = true
		}
	}
}

func skipIDs(k string) TextRule {
	switch k {
	case "id", "type":
		return TextSkip
	case "data":
		return TextIfText
	}
	return TextCount
}

// TextChars counts the characters of every string value but those of
// the members skipped, escapes decoded, keys not counted.
func TestTextChars(t *testing.T) {
	for raw, want := range map[string]int{
		`"héllo"`:                               5,
		`{"type":"text","text":"abc","id":"x"}`: 3,
		`[{"a":"\n\u00e9"},["xy",1,true,null],{"id":{"nested":"not counted"}}]`:                         4,
		`{"description":"four","parameters":{"properties":{"q":{"type":"string","description":"ab"}}}}`: 6,
		`{}`: 0,
		`[{"type":"text","data":"abc"},{"data":"QUJD","type":"base64"},{"data":"xy","type":"text"},{"data":{"a":"b"},"type":"text"}]`: 6,
		`12`: 0,
	} {
		if got := TextChars([]byte(raw), skipIDs); got != want || textCharsRef([]byte(raw), skipIDs) != want {
			t.Errorf("%s: %d (reference %d), want %d", raw, got, textCharsRef([]byte(raw), skipIDs), want)
		}
	}
}

// FuzzTextChars holds TextChars to the encoding/json reference on every
// valid JSON value.
func FuzzTextChars(f *testing.F) {
	for _, s := range []string{`"a\u00e9\n"`, `{"type":"text","text":"abc"}`, `[{"id":"x","content":[{"text":"y"}]}]`, `{"a":{"b":["c",{"d":"\ud83d\ude00"}]}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		want := textCharsRef(raw, skipIDs)
		if want < 0 {
			return
		}
		if got := TextChars(raw, skipIDs); got != want {
			t.Fatalf("%q: %d, reference %d", raw, got, want)
		}
	})
}

// FuzzMember holds Member to ParseObject and Get, and EachElement to
// Elements, on any input: the same value (or none) for each key the
// object has and one it has not, the same elements.
func FuzzMember(f *testing.F) {
	for _, s := range []string{`{"content":[1,2],"role":"user"}`, `{"a":1,"a":2}`, `{"c\u006fntent":"x"}`, `[{"a":1},2,"x"]`, `{"a":`, `[1,`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		o, err := ParseObject(raw)
		keys := []string{"content", "missing", "a"}
		if err == nil {
			for k := range o.Members() {
				keys = append(keys, k)
			}
		}
		for _, k := range keys {
			got, ok := Member(raw, k)
			var want []byte
			var wantOK bool
			if err == nil {
				want, wantOK = o.Get(k)
			}
			if ok != wantOK || !bytes.Equal(got, want) {
				t.Fatalf("%q, member %q: %q %v, ParseObject %q %v", raw, k, got, ok, want, wantOK)
			}
		}
		elems, ok := Elements(raw)
		var seen [][]byte
		eachOK := EachElement(raw, func(_ int, e []byte) bool { seen = append(seen, e); return true })
		if ok != eachOK || ok && len(seen) != len(elems) {
			t.Fatalf("%q: EachElement %v %d, Elements %v %d", raw, eachOK, len(seen), ok, len(elems))
		}
		for i := range elems {
			if !bytes.Equal(seen[i], elems[i]) {
				t.Fatalf("%q: element %d %q, Elements %q", raw, i, seen[i], elems[i])
			}
		}
	})
}
