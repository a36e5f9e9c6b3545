package wire

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// feed runs deltas' tool_calls arrays through a collector and renders the
// canonical fragments sent, then the finished calls or the error.
func feed(q Quirks, deltas ...string) (string, string) {
	c := NewCollector(q)
	var sent []string
	for _, d := range deltas {
		frags, err := c.Add(json.RawMessage(d))
		if err != nil {
			return strings.Join(sent, " "), "error: " + err.Error()
		}
		for _, f := range frags {
			b, _ := json.Marshal(f)
			sent = append(sent, string(b))
		}
	}
	calls, err := c.Finish()
	if err != nil {
		return strings.Join(sent, " "), "error: " + err.Error()
	}
	var done []string
	for _, call := range calls {
		done = append(done, call.ID+":"+call.Name+"("+call.Arguments+")")
	}
	return strings.Join(sent, " "), strings.Join(done, " ")
}

// The collector aggregates by index, sends canonical fragments (id, type
// and name once, on the first), and reports protocol errors (docs/spec.md §2).
func TestCollector(t *testing.T) {
	all := Quirks{MissingIndex: true, IndexReuse: true, RepeatedName: true, ArgumentsObject: true}
	for _, tc := range []struct {
		name   string
		q      Quirks
		deltas []string
		sent   string
		calls  string
	}{
		{"canonical stream", Quirks{}, []string{
			`[{"index":0,"id":"c1","type":"function","function":{"name":"get","arguments":""}}]`,
			`[{"index":0,"function":{"arguments":"{\"a\""}}]`, `[{"index":0,"function":{"arguments":":1}"}}]`},
			`{"index":0,"id":"c1","type":"function","function":{"name":"get","arguments":""}} {"index":0,"function":{"arguments":"{\"a\""}} {"index":0,"function":{"arguments":":1}"}}`,
			`c1:get({"a":1})`},
		{"sparse indexes renumbered (A03)", Quirks{}, []string{
			`[{"index":1,"id":"t","type":"function","function":{"name":"read","arguments":"{}"}}]`},
			`{"index":0,"id":"t","type":"function","function":{"name":"read","arguments":"{}"}}`, `t:read({})`},
		{"id repeated on every fragment is sent once (A05)", Quirks{}, []string{
			`[{"index":0,"id":"x","type":"function","function":{"name":"f","arguments":"{"}}]`,
			`[{"index":0,"id":"x","type":"function","function":{"arguments":"}"}}]`},
			`{"index":0,"id":"x","type":"function","function":{"name":"f","arguments":"{"}} {"index":0,"function":{"arguments":"}"}}`, `x:f({})`},
		{"name late: fragments held until it arrives (A11)", Quirks{}, []string{
			`[{"index":0,"id":"c7","function":{"name":null,"arguments":"{\"x\""}}]`,
			`[{"index":0,"function":{"name":"bash","arguments":":1}"}}]`},
			`{"index":0,"id":"c7","type":"function","function":{"name":"bash","arguments":"{\"x\":1}"}}`, `c7:bash({"x":1})`},
		{"strict: id conflict at one index (A02)", Quirks{}, []string{
			`[{"index":0,"id":"a","function":{"name":"w","arguments":"{}"}}]`, `[{"index":0,"id":"b","function":{"name":"w","arguments":"{}"}}]`},
			`{"index":0,"id":"a","type":"function","function":{"name":"w","arguments":"{}"}}`, `error: wire: tool-call protocol error at index 0: id "b" conflicts with id "a" already seen at this index`},
		{"index reuse normalized (A02)", all, []string{
			`[{"index":0,"id":"a","function":{"name":"w","arguments":"{}"}}]`, `[{"index":0,"id":"b","function":{"name":"w","arguments":"{}"}}]`},
			`{"index":0,"id":"a","type":"function","function":{"name":"w","arguments":"{}"}} {"index":1,"id":"b","type":"function","function":{"name":"w","arguments":"{}"}}`, `a:w({}) b:w({})`},
		{"one id at two indexes is an error", all, []string{
			`[{"index":0,"id":"a","function":{"name":"w"}}]`, `[{"index":1,"id":"a","function":{"name":"w"}}]`},
			`{"index":0,"id":"a","type":"function","function":{"name":"w","arguments":""}}`, `error: wire: tool-call protocol error at index 1: id "a" is already used by the call at index 0`},
		{"strict: missing index (A01)", Quirks{}, []string{`[{"id":"a","function":{"name":"f","arguments":"{}"}}]`},
			``, `error: wire: tool-call protocol error: a tool-call fragment has no index`},
		{"missing index normalized (A01)", all, []string{
			`[{"id":"a","function":{"name":"f","arguments":"{"}}]`, `[{"function":{"arguments":"}"}}]`, `[{"id":"b","function":{"name":"g","arguments":"{}"}}]`},
			`{"index":0,"id":"a","type":"function","function":{"name":"f","arguments":"{"}} {"index":0,"function":{"arguments":"}"}} {"index":1,"id":"b","type":"function","function":{"name":"g","arguments":"{}"}}`, `a:f({}) b:g({})`},
		{"strict: name repeated (A10)", Quirks{}, []string{
			`[{"index":0,"id":"a","function":{"name":"read_file","arguments":"{\"pa"}}]`, `[{"index":0,"function":{"name":"read_file","arguments":"th\":1}"}}]`},
			`{"index":0,"id":"a","type":"function","function":{"name":"read_file","arguments":"{\"pa"}}`, `error: wire: tool-call protocol error at index 0: function.name "read_file" sent again after the call started`},
		{"name repeated normalized (A10)", all, []string{
			`[{"index":0,"id":"a","function":{"name":"read_file","arguments":"{\"pa"}}]`, `[{"index":0,"function":{"name":"read_file","arguments":"th\":1}"}}]`},
			`{"index":0,"id":"a","type":"function","function":{"name":"read_file","arguments":"{\"pa"}} {"index":0,"function":{"arguments":"th\":1}"}}`, `a:read_file({"path":1})`},
		{"strict: arguments object (A12)", Quirks{}, []string{`[{"index":0,"id":"a","function":{"name":"f","arguments":{"a":1}}}]`},
			``, `error: wire: tool-call protocol error at index 0: function.arguments must be a string, got an object`},
		{"arguments object normalized (A12)", all, []string{`[{"index":0,"id":"a","function":{"name":"f","arguments":{"a":1}}}]`},
			`{"index":0,"id":"a","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}`, `a:f({"a":1})`},
		{"a call without id is incomplete, and is not masked by a complete one (A07)", Quirks{}, []string{
			`[{"index":0,"id":"a","function":{"name":"f","arguments":"{}"}},{"index":1,"id":"","function":{"name":"g","arguments":"{}"}}]`},
			`{"index":0,"id":"a","type":"function","function":{"name":"f","arguments":"{}"}}`, `error: wire: tool-call protocol error at index 1: the call was left without id`},
		{"negative index (A04)", all, []string{`[{"index":-1,"id":null,"function":{"name":null,"arguments":"{"}}]`},
			``, `error: wire: tool-call protocol error: index must be a non-negative integer, got -1`},
		{"fragment not an object", all, []string{`[1]`}, ``, `error: wire: tool-call protocol error: a tool-call fragment must be an object`},
		{"unknown members pass through, on the first fragment if held (A33)", Quirks{}, []string{
			`[{"index":0,"id":"a","extra_content":{"google":{"thought_signature":"sig"}},"function":{"name":null,"arguments":"{"}}]`,
			`[{"index":0,"function":{"name":"f","arguments":"}"}}]`, `[{"index":0,"x":1}]`},
			`{"index":0,"id":"a","type":"function","function":{"name":"f","arguments":"{}"},"extra_content":{"google":{"thought_signature":"sig"}}} {"index":0,"function":{"arguments":""},"x":1}`, `a:f({})`},
		{"id not a string", all, []string{`[{"index":0,"id":5}]`}, ``, `error: wire: tool-call protocol error: id must be a string, got a number`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sent, calls := feed(tc.q, tc.deltas...)
			if sent != tc.sent {
				t.Errorf("sent\n got: %s\nwant: %s", sent, tc.sent)
			}
			if calls != tc.calls {
				t.Errorf("calls\n got: %s\nwant: %s", calls, tc.calls)
			}
		})
	}
}

// FuzzCollector: arbitrary tool_calls arrays never panic; every fragment
// sent is canonical; a call whose first fragment went out has an id and a
// name; and the calls Finish returns match what was sent.
func FuzzCollector(f *testing.F) {
	for _, s := range []string{
		`[{"index":0,"id":"a","type":"function","function":{"name":"f","arguments":"{"}}]`,
		`[{"function":{"arguments":{"x":1}}},{"index":3,"id":"b"}]`, `[{"index":"0"}]`, `null`, `[[]]`,
	} {
		f.Add([]byte(s), []byte(`[{"index":0,"function":{"arguments":"}"}}]`))
	}
	f.Fuzz(func(t *testing.T, a, b []byte) {
		c := NewCollector(Quirks{MissingIndex: true, IndexReuse: true, RepeatedName: true, ArgumentsObject: true})
		args := map[int]string{}
		for _, d := range [][]byte{a, b} {
			frags, err := c.Add(d)
			if err != nil {
				var pe *ProtocolError
				if !errors.As(err, &pe) {
					t.Fatalf("error of type %T: %v", err, err)
				}
				return
			}
			for _, fr := range frags {
				if _, started := args[fr.Index]; !started && (fr.ID == "" || fr.Name == "") {
					t.Fatalf("first fragment of call %d lacks id or name: %+v", fr.Index, fr)
				}
				args[fr.Index] += fr.Arguments
				if !Valid(must(json.Marshal(fr))) {
					t.Fatal("fragment does not encode as JSON")
				}
			}
		}
		calls, err := c.Finish()
		if err != nil {
			return
		}
		for i, call := range calls {
			if args[i] != call.Arguments {
				t.Fatalf("call %d: sent %q, collected %q", i, args[i], call.Arguments)
			}
		}
	})
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// Hostile input cannot grow the collector without bound: endless
// fragments of one call and endless calls are protocol errors.
func TestCollectorBounds(t *testing.T) {
	c := NewCollector(Quirks{})
	_, err := c.Add(json.RawMessage(`[{"index":0,"id":"a","function":{"name":"f"}}]`))
	frag := `[{"index":0,"function":{"arguments":"` + strings.Repeat("x", 1<<20) + `"}}]`
	for i := 0; i < 10 && err == nil; i++ {
		_, err = c.Add(json.RawMessage(frag))
	}
	if err == nil || !strings.Contains(err.Error(), "exceed") {
		t.Errorf("endless fragments: err = %v", err)
	}
	c = NewCollector(Quirks{})
	for i := 0; i <= MaxCalls && err == nil; i++ {
		_, err = c.Add(json.RawMessage(`[{"index":` + fmt.Sprint(i) + `,"id":"c` + fmt.Sprint(i) + `","function":{"name":"f"}}]`))
	}
	if err == nil {
		t.Error("endless calls accepted")
	}
}

// The names a quirks list takes, together, switch on every normalization
// there is (AllQuirks), and each alone switches one on.
func TestQuirkNames(t *testing.T) {
	q, err := ParseQuirks(QuirkNames())
	if err != nil || q != AllQuirks() {
		t.Errorf("every name switches on %+v, %v; not every normalization", q, err)
	}
	for _, n := range QuirkNames() {
		if one, err := ParseQuirks([]string{n}); err != nil || one == (Quirks{}) {
			t.Errorf("%s switches nothing on (%v)", n, err)
		}
	}
	if _, err := ParseQuirks([]string{"all", "usage"}); err == nil {
		t.Error("all in a list was accepted")
	}
}

// A continuation fragment that says exactly what its canonical form says
// (its canonical index in the same digits, its arguments as a string,
// nothing else) goes out as it came, whatever the order of its members or
// its spaces; any other is rewritten to the canonical form.
func TestFragmentAsItCame(t *testing.T) {
	const (
		head  = `{"id":"c","choices":[{"index":0,"delta":{"tool_calls":[`
		tail  = `]},"finish_reason":null}]}`
		first = `{"index":0,"id":"a","type":"function","function":{"name":"f","arguments":""}}`
		// index 3 is the second call: canonical index 1
		second = `{"index":3,"id":"b","type":"function","function":{"name":"g","arguments":""}}`
	)
	for _, tc := range []struct{ name, in, out string }{
		{"canonical", `{"index":0,"function":{"arguments":"x"}}`, ""},
		{"keys sorted", `{"function":{"arguments":"x"},"index":0}`, ""},
		{"spaced", `{ "function" : { "arguments" : "x\"" } , "index" : 0 }`, ""},
		{"another index", `{"function":{"arguments":"x"},"index":3}`, `{"index":1,"function":{"arguments":"x"}}`},
		{"index of other digits", `{"function":{"arguments":"x"},"index":-0}`, `{"index":0,"function":{"arguments":"x"}}`},
		{"type repeated", `{"function":{"arguments":"x"},"index":0,"type":"function"}`, `{"index":0,"function":{"arguments":"x"}}`},
		{"name null", `{"function":{"arguments":"x","name":null},"index":0}`, `{"index":0,"function":{"arguments":"x"}}`},
		{"arguments an object (A12)", `{"function":{"arguments":{"a":1}},"index":0}`, `{"index":0,"function":{"arguments":"{\"a\":1}"}}`},
		{"another member", `{"extra_content":{"k":1},"function":{"arguments":"x"},"index":0}`, `{"index":0,"function":{"arguments":"x"},"extra_content":{"k":1}}`},
	} {
		n := NewNormalizer(Options{Quirks: AllQuirks(), KeepText: true, SingleChoice: true})
		for _, c := range []string{first, second} {
			if _, _, err := n.Chunk([]byte(head + c + tail)); err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
		}
		want := tc.out
		if want == "" {
			want = tc.in
		}
		out, send, err := n.Chunk([]byte(head + tc.in + tail))
		if err != nil || !send || string(out) != head+want+tail {
			t.Errorf("%s: sent %s (%v, %v), want %s", tc.name, out, send, err, head+want+tail)
		}
	}
}
