package repair

import (
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/testing/wiretest"
	"github.com/toolgate/toolgate/internal/wire"
)

func raws(msgs []wire.Message) string {
	var s []string
	for _, m := range msgs {
		s = append(s, string(m.Raw))
	}
	return strings.Join(s, "\n")
}

// Each normalization rewrites only the member it fixes; everything else in
// the message keeps its bytes, and the step reports its count.
func TestNormalizations(t *testing.T) {
	for _, tc := range []struct {
		name  string
		steps ToolCallSteps
		in    string
		want  string
		fixes ToolCallFixes
	}{
		{"arguments object to string", ToolCallSteps{StringifyArguments: true},
			`[{"role":"assistant","x":1,"tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":{"k": [1,2]}},"extra":true}]}]`,
			`{"role":"assistant","x":1,"tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{\"k\": [1,2]}"},"extra":true}]}`,
			ToolCallFixes{StringifiedArguments: 1}},
		{"string arguments untouched", ToolCallSteps{StringifyArguments: true},
			`[{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}}]}]`,
			`{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}}]}`,
			ToolCallFixes{}},
		{"missing and empty ids synthesized", ToolCallSteps{SynthesizeIDs: true},
			`[{"role":"assistant","tool_calls":[{"type":"function","function":{"name":"f","arguments":"{}"}},{"id":"","function":{"name":"g"}},{"id":"ok","function":{"name":"h"}}]}]`,
			`{"role":"assistant","tool_calls":[{"type":"function","function":{"name":"f","arguments":"{}"},"id":"call_tg37131bf3f77e3a8f"},{"id":"call_tg7c7884ded96bddc9","function":{"name":"g"}},{"id":"ok","function":{"name":"h"}}]}`,
			ToolCallFixes{SynthesizedIDs: 2}},
		{"exact duplicate call removed, different call renamed", ToolCallSteps{DedupeCallIDs: true},
			`[{"role":"assistant","tool_calls":[{"id":"a","function":{"name":"f","arguments":"{}"}},{"id":"a","function":{"name":"f","arguments":"{}"}},{"id":"a","function":{"name":"g","arguments":"{}"}},{"id":"a_2","function":{"name":"h"}}]}]`,
			`{"role":"assistant","tool_calls":[{"id":"a","function":{"name":"f","arguments":"{}"}},{"id":"a_3","function":{"name":"g","arguments":"{}"}},{"id":"a_2","function":{"name":"h"}}]}`,
			ToolCallFixes{DedupedCallIDs: 2}},
		{"content empty to null", ToolCallSteps{ToolCallContent: ContentNull},
			`[{"role":"assistant","content":"","tool_calls":[{"id":"a","function":{"name":"f"}}]},{"role":"assistant","content":""}]`,
			`{"role":"assistant","content":null,"tool_calls":[{"id":"a","function":{"name":"f"}}]}` + "\n" + `{"role":"assistant","content":""}`,
			ToolCallFixes{ToolCallContent: 1}},
		{"content null or absent to empty", ToolCallSteps{ToolCallContent: ContentEmpty},
			`[{"role":"assistant","content":null,"tool_calls":[{"id":"a","function":{"name":"f"}}]},{"role":"assistant","tool_calls":[{"id":"b","function":{"name":"f"}}]}]`,
			`{"role":"assistant","content":"","tool_calls":[{"id":"a","function":{"name":"f"}}]}` + "\n" + `{"role":"assistant","tool_calls":[{"id":"b","function":{"name":"f"}}],"content":""}`,
			ToolCallFixes{ToolCallContent: 2}},
		{"keep changes nothing", ToolCallSteps{ToolCallContent: ContentKeep},
			`[{"role":"assistant","content":"","tool_calls":[{"id":"a","function":{"name":"f"}}]}]`,
			`{"role":"assistant","content":"","tool_calls":[{"id":"a","function":{"name":"f"}}]}`,
			ToolCallFixes{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := wiretest.Messages(t, tc.in)
			before := raws(in)
			out, fixes := FixToolCalls(in, tc.steps)
			if got := raws(out); got != tc.want {
				t.Errorf("\n got: %s\nwant: %s", got, tc.want)
			}
			if fixes != tc.fixes {
				t.Errorf("fixes %+v, want %+v", fixes, tc.fixes)
			}
			if raws(in) != before {
				t.Error("the input was modified")
			}
			// Typed view and bytes agree: re-decoding the output gives the same calls.
			again := wiretest.Messages(t, "["+strings.ReplaceAll(raws(out), "\n", ",")+"]")
			if show(again) != show(out) {
				t.Errorf("typed view %s, bytes say %s", show(out), show(again))
			}
			if _, f2 := FixToolCalls(out, tc.steps); f2.Any() {
				t.Errorf("not idempotent: %+v", f2)
			}
		})
	}
}

// With id synthesis on, a call with no id is sealed by Repair; with it off,
// the seed's behaviour stands and the call is ignored (docs/spec.md §1).
func TestSynthesizedIDIsSealed(t *testing.T) {
	in := wiretest.Messages(t, `[{"role":"user","content":"x"},{"role":"assistant","tool_calls":[{"id":"","type":"function","function":{"name":"f","arguments":"{\"a\":"}}]},{"role":"user","content":"y"}]`)
	_, rep := Repair(in)
	if !rep.Empty() {
		t.Fatalf("without synthesis: %s", showReport(rep))
	}
	norm, fixes := FixToolCalls(in, ToolCallSteps{SynthesizeIDs: true})
	out, rep := Repair(norm)
	if fixes.SynthesizedIDs != 1 || len(rep.Sealed) != 1 || !strings.HasPrefix(rep.Sealed[0].CallID, "call_tg") {
		t.Fatalf("fixes %+v report %s", fixes, showReport(rep))
	}
	if got := show(out); !strings.Contains(got, ":cut)") {
		t.Errorf("%s", got)
	}
	if err := wire.CheckToolPairs(out); err != nil {
		t.Errorf("still refused: %v", err)
	}
	// Deterministic: the same transcript gets the same id every time.
	norm2, _ := FixToolCalls(wiretest.Messages(t, `[{"role":"user","content":"x"},{"role":"assistant","tool_calls":[{"id":"","type":"function","function":{"name":"f","arguments":"{\"a\":"}}]},{"role":"user","content":"y"}]`), ToolCallSteps{SynthesizeIDs: true})
	if norm2[1].ToolCalls[0].ID != norm[1].ToolCalls[0].ID {
		t.Error("synthesized ids differ between identical transcripts")
	}
}

func TestFixesHeader(t *testing.T) {
	if h := (ToolCallFixes{SynthesizedIDs: 1, StringifiedArguments: 2}).Header(); h != "arguments_to_string=2; synthesized_ids=1" {
		t.Errorf("%q", h)
	}
}

// Ids over the limit are rewritten the same way in the call and in its
// reply, fit the limit, collide with no id in use, and leave every other
// byte; a second pass changes nothing.
func TestShortenIDs(t *testing.T) {
	long := "fc_" + strings.Repeat("a", 50) // a Responses id: 53 characters
	long2 := "toolu_" + strings.Repeat("b", 40)
	msgs := wiretest.Messages(t, `[{"role":"user","content":"x"},`+
		`{"role":"assistant","content":null,"tool_calls":[{"id":"`+long+`","type":"function","function":{"name":"f","arguments":"{}"}},{"id":"short","type":"function","function":{"name":"g","arguments":"{}"}}]},`+
		`{"role":"tool","tool_call_id":"`+long+`","content":"r1","cache_control":{"type":"ephemeral"}},{"role":"tool","tool_call_id":"short","content":"r2"},`+
		`{"role":"assistant","content":null,"tool_calls":[{"id":"`+long2+`","type":"function","function":{"name":"f","arguments":"{}"}}]},`+
		`{"role":"tool","tool_call_id":"`+long2+`","content":"r3"}]`)
	for _, max := range []int{40, 9} {
		out, n := ShortenIDs(msgs, max)
		if n != 2 {
			t.Fatalf("max %d: %d ids rewritten", max, n)
		}
		a, b := out[1].ToolCalls[0].ID, out[4].ToolCalls[0].ID
		if len(a) > max || len(b) > max || a == b || out[2].ToolCallID != a || out[5].ToolCallID != b || out[1].ToolCalls[1].ID != "short" {
			t.Errorf("max %d: ids %q %q, replies %q %q", max, a, b, out[2].ToolCallID, out[5].ToolCallID)
		}
		if string(out[2].Raw) != `{"role":"tool","tool_call_id":"`+a+`","content":"r1","cache_control":{"type":"ephemeral"}}` ||
			!strings.Contains(string(out[1].Raw), `"id":"`+a+`"`) || strings.Contains(string(out[1].Raw), long) {
			t.Errorf("max %d: rewritten as %s and %s", max, out[1].Raw, out[2].Raw)
		}
		if err := wire.CheckToolPairs(out); err != nil {
			t.Errorf("max %d: %v", max, err)
		}
		if again, n := ShortenIDs(out, max); n != 0 || len(again) != len(out) {
			t.Errorf("max %d: a second pass rewrote %d", max, n)
		}
		if strings.Contains(string(msgs[1].Raw), a) {
			t.Error("the input was modified")
		}
	}
}
