package repair

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/toolgate/toolgate/internal/testing/wiretest"
	"github.com/toolgate/toolgate/internal/wire"
)

// show renders a transcript compactly: user, asst[a,b], tool(a), and
// seal(a:cut|reloaded) for a gateway-made seal.
func show(msgs []wire.Message) string {
	var parts []string
	for _, m := range msgs {
		switch {
		case m.Role == "tool" && m.Raw == nil:
			kind := "reloaded"
			if bytes.Equal(m.Content, cutOffContent) {
				kind = "cut"
			} else if !bytes.Equal(m.Content, reloadedContent) {
				kind = "?"
			}
			parts = append(parts, "seal("+m.ToolCallID+":"+kind+")")
		case m.Role == "tool":
			parts = append(parts, "tool("+m.ToolCallID+")")
		case m.Role == "assistant" && len(m.ToolCalls) > 0:
			var ids []string
			for _, c := range m.ToolCalls {
				ids = append(ids, c.ID)
			}
			parts = append(parts, "asst["+strings.Join(ids, ",")+"]")
		default:
			parts = append(parts, m.Role)
		}
	}
	return strings.Join(parts, " ")
}

func showReport(r Report) string {
	f := func(rs []Reply) string {
		var s []string
		for _, x := range rs {
			s = append(s, fmt.Sprintf("%d:%s", x.Index, x.CallID))
		}
		return strings.Join(s, ",")
	}
	return fmt.Sprintf("sealed[%s] dropped[%s] moved[%s]", f(r.Sealed), f(r.Dropped), f(r.Moved))
}

func call(id, args string) string {
	a, _ := json.Marshal(args)
	return fmt.Sprintf(`{"id":%q,"type":"function","function":{"name":"f","arguments":%s}}`, id, a)
}

func asst(calls ...string) string {
	return `{"role":"assistant","content":null,"tool_calls":[` + strings.Join(calls, ",") + `]}`
}

func tool(id string) string {
	return fmt.Sprintf(`{"role":"tool","tool_call_id":%q,"content":"ok"}`, id)
}

const user = `{"role":"user","content":"hi"}`

func list(ms ...string) string { return "[" + strings.Join(ms, ",") + "]" }

// Each clause of docs/spec.md §1, one case or more.
func TestRepair(t *testing.T) {
	for _, tc := range []struct {
		name, in, want, report string
	}{
		{"already paired: nothing to do",
			list(user, asst(call("a", "{}"), call("b", "{}")), tool("b"), tool("a"), user),
			"user asst[a,b] tool(b) tool(a) user", "sealed[] dropped[] moved[]"},
		{"§1.2 call_0 reused in two rounds pairs per request",
			list(user, asst(call("call_0", "{}")), tool("call_0"), user, asst(call("call_0", "{}")), tool("call_0")),
			"user asst[call_0] tool(call_0) user asst[call_0] tool(call_0)", "sealed[] dropped[] moved[]"},
		{"§1.2 call_0 reused: the later round's missing reply is sealed, not taken from round one",
			list(user, asst(call("call_0", "{}")), tool("call_0"), user, asst(call("call_0", "{}")), user),
			"user asst[call_0] tool(call_0) user asst[call_0] seal(call_0:reloaded) user", "sealed[4:call_0] dropped[] moved[]"},
		{"§1.2 closest earlier unanswered call owns the reply",
			list(user, asst(call("call_0", "{}")), user, asst(call("call_0", "{}")), tool("call_0"), tool("call_0")),
			"user asst[call_0] tool(call_0) user asst[call_0] tool(call_0)", "sealed[] dropped[] moved[5:call_0]"},
		{"§1.3 a reply after a later user message is moved back",
			list(user, asst(call("a", "{}")), user, tool("a")),
			"user asst[a] tool(a) user", "sealed[] dropped[] moved[3:a]"},
		{"§1.2 a second reply to one call is dropped",
			list(user, asst(call("a", "{}")), tool("a"), tool("a")),
			"user asst[a] tool(a)", "sealed[] dropped[3:a] moved[]"},
		{"§1.2 a reply with no tool_call_id is dropped",
			list(user, asst(call("a", "{}")), tool("a"), `{"role":"tool","content":"x"}`),
			"user asst[a] tool(a)", "sealed[] dropped[3:] moved[]"},
		{"§1.2 a reply with no earlier call is dropped (even if a later call has its id)",
			list(user, tool("a"), asst(call("a", "{}")), tool("a")),
			"user asst[a] tool(a)", "sealed[] dropped[1:a] moved[]"},
		{"§1.4 unparseable arguments: cut off",
			list(user, asst(call("a", `{"path":"a.md","content":"li`))),
			"user asst[a] seal(a:cut)", "sealed[1:a] dropped[] moved[]"},
		{"§1.4 parseable arguments: reloaded",
			list(user, asst(call("a", `{"x":1e999}`))),
			"user asst[a] seal(a:reloaded)", "sealed[1:a] dropped[] moved[]"},
		{"§1.4 empty-string arguments are no arguments: reloaded",
			list(user, asst(call("a", ""))),
			"user asst[a] seal(a:reloaded)", "sealed[1:a] dropped[] moved[]"},
		{"§1.3 two unanswered calls: seals in call order, before the owned replies",
			list(user, asst(call("a", "{}"), call("b", "{"), call("c", "{}")), tool("b"), user),
			"user asst[a,b,c] seal(a:reloaded) seal(c:reloaded) tool(b) user", "sealed[1:a,1:c] dropped[] moved[]"},
		{"§1.1 a call with an empty id is neither answered nor sealed",
			list(user, asst(call("", "{}"), call("a", "{}")), tool("a")),
			"user asst[,a] tool(a)", "sealed[] dropped[] moved[]"},
		{"§1.1 an id made twice in one message is answered once",
			list(user, asst(call("a", "{}"), call("a", "{}"))),
			"user asst[a,a] seal(a:reloaded)", "sealed[1:a] dropped[] moved[]"},
		{"§1.1 an id made twice, one reply: the second reply is dropped",
			list(user, asst(call("a", "{}"), call("a", "{}")), tool("a"), tool("a")),
			"user asst[a,a] tool(a)", "sealed[] dropped[3:a] moved[]"},
		{"§1.3 replies keep their original order",
			list(user, asst(call("a", "{}"), call("b", "{}")), user, tool("b"), tool("a")),
			"user asst[a,b] tool(b) tool(a) user", "sealed[] dropped[] moved[3:b,4:a]"},
		{"a reply in the run stays, a later one is moved",
			list(user, asst(call("a", "{}"), call("b", "{}")), tool("a"), user, tool("b")),
			"user asst[a,b] tool(a) tool(b) user", "sealed[] dropped[] moved[4:b]"},
		{"an interrupted turn: the last message is the call",
			list(`{"role":"system","content":"s"}`, user, asst(call("a", "{}"), call("b", `{"q":`))),
			"system user asst[a,b] seal(a:reloaded) seal(b:cut)", "sealed[2:a,2:b] dropped[] moved[]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := wiretest.Messages(t, tc.in)
			before := show(in)
			out, rep := Repair(in)
			if got := show(out); got != tc.want {
				t.Errorf("transcript\n got: %s\nwant: %s", got, tc.want)
			}
			if got := showReport(rep); got != tc.report {
				t.Errorf("report\n got: %s\nwant: %s", got, tc.report)
			}
			if show(in) != before {
				t.Error("the input was modified")
			}
			again, rep2 := Repair(out)
			if !rep2.Empty() || show(again) != show(out) {
				t.Errorf("not idempotent: %s / %s", showReport(rep2), show(again))
			}
		})
	}
}

// A seal's content is exactly the JSON {"success":false,"error":…} with the
// sentence, keys in that order, with U+2014 dashes (docs/spec.md §1.4).
func TestSealContent(t *testing.T) {
	out, _ := Repair(wiretest.Messages(t, list(user, asst(call("a", "{"), call("b", "{}")))))
	var got []string
	for _, m := range out[2:] {
		var s string
		if err := json.Unmarshal(m.Content, &s); err != nil {
			t.Fatal(err)
		}
		got = append(got, s)
		b, _ := json.Marshal(m)
		if !strings.HasPrefix(string(b), `{"role":"tool","content":`) || !strings.Contains(string(b), `"tool_call_id":"`+m.ToolCallID+`"`) {
			t.Errorf("seal encodes as %s", b)
		}
	}
	want := []string{
		`{"success":false,"error":"This tool call was never completed — the response was cut off before it finished."}`,
		`{"success":false,"error":"This tool call was never completed — the session was reloaded or the history was trimmed."}`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("seal contents (-want +got):\n%s", diff)
	}
	if !strings.Contains(SealCutOff, "\u2014") || !strings.Contains(SealReloaded, "\u2014") {
		t.Error("the seal sentences must use U+2014")
	}
}

// Messages the repair did not create are the input's own bytes, unknown
// fields included (docs/spec.md §1.5).
func TestUntouchedBytes(t *testing.T) {
	in := wiretest.Messages(t, `[{"role":"user","content":"hi","x_vendor":{"a": 1}},`+
		`{"role":"assistant","content":"","reasoning_content":"think","tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"},"extra_content":{"google":{"thought_signature":"s"}}}]},`+
		`{"role":"user","content":"later"},{"role":"tool","tool_call_id":"a","content":"ok","cache_control":{"type":"ephemeral"}}]`)
	out, rep := Repair(in)
	if len(rep.Moved) != 1 {
		t.Fatalf("report %s", showReport(rep))
	}
	for _, m := range out {
		found := false
		for _, o := range in {
			if bytes.Equal(m.Raw, o.Raw) {
				found = true
			}
		}
		if !found {
			t.Errorf("message %s is not one of the input's", m.Raw)
		}
	}
}

// A transcript that needs no repair costs no allocation in the repair step.
func TestNoRepairNoAlloc(t *testing.T) {
	in := wiretest.Messages(t, list(user, asst(call("a", "{}"), call("b", "{}")), tool("b"), tool("a"), user, asst(call("c", "{}")), tool("c")))
	allocs := testing.AllocsPerRun(100, func() {
		Repair(in)
	})
	if allocs != 0 {
		t.Errorf("Repair of a paired transcript allocated %v times", allocs)
	}
}

// The reject mode's message lists every problem.
func TestRejectError(t *testing.T) {
	_, rep := Repair(wiretest.Messages(t, list(user, asst(call("a", "{}"), call("b", "{}")), tool("b"), tool("z"), user, tool("b"))))
	err := &RejectError{Report: rep}
	for _, want := range []string{"the call a made in messages[1] has no reply", "messages[3] answers z", "messages[5] answers b"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err.Error(), want)
		}
	}
	if rep.Header() != "sealed=1; dropped=2; moved=0" {
		t.Errorf("header %q", rep.Header())
	}
}
