package wire

import (
	"encoding/json"
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
// input: the same answer and the same string.
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
	})
}
