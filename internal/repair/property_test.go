package repair

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/toolgate/toolgate/internal/testing/wiretest"
	"github.com/toolgate/toolgate/internal/wire"
)

var (
	idPool   = []string{"call_0", "call_1", "call_2", "toolu_x"}
	argsPool = []string{"{}", "", `{"a":`, `{"x":1e999}`, `[1]`}
)

// genTranscript draws a transcript as JSON: users, assistants with and
// without calls (ids reused across rounds), and tool replies placed
// anywhere, some answering nothing. withBadIDs adds empty and duplicate
// call ids.
func genTranscript(t *rapid.T, withBadIDs bool) string {
	n := rapid.IntRange(1, 14).Draw(t, "n")
	var ms []string
	for i := range n {
		switch rapid.IntRange(0, 3).Draw(t, fmt.Sprintf("kind%d", i)) {
		case 0:
			ms = append(ms, fmt.Sprintf(`{"role":"user","content":"u%d","x":[%d]}`, i, i))
		case 1:
			k := rapid.IntRange(0, 3).Draw(t, fmt.Sprintf("calls%d", i))
			var calls []string
			used := map[string]bool{}
			for j := range k {
				id := rapid.SampledFrom(idPool).Draw(t, fmt.Sprintf("id%d.%d", i, j))
				if withBadIDs && rapid.IntRange(0, 4).Draw(t, fmt.Sprintf("bad%d.%d", i, j)) == 0 {
					id = ""
				}
				if !withBadIDs && used[id] {
					continue
				}
				used[id] = true
				a, _ := json.Marshal(rapid.SampledFrom(argsPool).Draw(t, fmt.Sprintf("args%d.%d", i, j)))
				calls = append(calls, fmt.Sprintf(`{"id":%q,"type":"function","function":{"name":"f%d","arguments":%s}}`, id, j, a))
			}
			if len(calls) == 0 {
				ms = append(ms, fmt.Sprintf(`{"role":"assistant","content":"a%d"}`, i))
			} else {
				ms = append(ms, `{"role":"assistant","content":null,"tool_calls":[`+strings.Join(calls, ",")+`]}`)
			}
		default:
			id := rapid.SampledFrom(append([]string{""}, idPool...)).Draw(t, fmt.Sprintf("reply%d", i))
			ms = append(ms, fmt.Sprintf(`{"role":"tool","tool_call_id":%q,"content":"r%d"}`, id, i))
		}
	}
	return "[" + strings.Join(ms, ",") + "]"
}

func nonTool(msgs []wire.Message) [][]byte {
	var out [][]byte
	for _, m := range msgs {
		if m.Role != "tool" {
			out = append(out, m.Raw)
		}
	}
	return out
}

// Properties of Repair over generated transcripts (docs/spec.md §1.5): the output
// is accepted by OpenAI's rules, repair is idempotent, no non-tool message is
// lost or reordered, every input tool message is either kept byte-for-byte or
// reported dropped, and every message the repair did not create is the
// input's own bytes.
func TestRepairProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		in := wiretest.Messages(t, genTranscript(t, false))
		out, rep := Repair(in)
		if err := wire.CheckToolPairs(out); err != nil {
			t.Fatalf("repaired transcript refused: %v\n%s", err, show(out))
		}
		again, rep2 := Repair(out)
		if !rep2.Empty() || show(again) != show(out) {
			t.Fatalf("not idempotent: %s", showReport(rep2))
		}
		a, b := nonTool(in), nonTool(out)
		if len(a) != len(b) {
			t.Fatalf("non-tool messages lost: %d → %d", len(a), len(b))
		}
		for i := range a {
			if !bytes.Equal(a[i], b[i]) {
				t.Fatalf("non-tool message %d changed or reordered", i)
			}
		}
		kept := 0
		for _, m := range out {
			if m.Raw == nil {
				continue
			}
			if m.Role == "tool" {
				kept++
			}
			found := false
			for _, o := range in {
				if bytes.Equal(o.Raw, m.Raw) {
					found = true
				}
			}
			if !found {
				t.Fatalf("message not from the input: %s", m.Raw)
			}
		}
		tools := 0
		for _, m := range in {
			if m.Role == "tool" {
				tools++
			}
		}
		if kept+len(rep.Dropped) != tools {
			t.Fatalf("%d tool messages in, %d kept + %d dropped", tools, kept, len(rep.Dropped))
		}
		if sealed := len(out) - len(in) + len(rep.Dropped); sealed != len(rep.Sealed) {
			t.Fatalf("%d seals in the output, %d reported", sealed, len(rep.Sealed))
		}
	})
}

// With every normalization on, even empty and duplicate call ids end in a
// transcript OpenAI accepts, and the whole pipeline is idempotent.
func TestNormalizeThenRepairProperties(t *testing.T) {
	steps := ToolCallSteps{StringifyArguments: true, SynthesizeIDs: true, DedupeCallIDs: true, ToolCallContent: ContentNull}
	rapid.Check(t, func(t *rapid.T) {
		in := wiretest.Messages(t, genTranscript(t, true))
		norm, _ := FixToolCalls(in, steps)
		out, _ := Repair(norm)
		if err := wire.CheckToolPairs(out); err != nil {
			t.Fatalf("refused: %v\n%s", err, show(out))
		}
		norm2, fixes := FixToolCalls(out, steps)
		out2, rep := Repair(norm2)
		if fixes.Any() || !rep.Empty() || show(out2) != show(out) {
			t.Fatalf("not idempotent: %+v %s", fixes, showReport(rep))
		}
	})
}

// FuzzRepair drives the JSON entry point: any request body either fails to
// decode or goes through normalization and repair without panicking, the
// result re-encodes and re-decodes, and repairing it again changes nothing.
func FuzzRepair(f *testing.F) {
	for _, s := range []string{
		list(user, asst(call("a", "{}")), user, tool("a"), tool("a")),
		list(user, asst(call("", `{"a":`), call("b", "{}"), call("b", "[]")), tool("zz")),
		`[{"role":"assistant","tool_calls":[{"id":"a","function":{"name":"f","arguments":{"x":1}}}]},{"role":"tool"}]`,
	} {
		f.Add([]byte(`{"model":"m","messages":` + s + `}`))
	}
	steps := ToolCallSteps{StringifyArguments: true, SynthesizeIDs: true, DedupeCallIDs: true, ToolCallContent: ContentEmpty}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := wire.DecodeRequest(body)
		if err != nil {
			return
		}
		norm, _ := FixToolCalls(req.Messages, steps)
		out, _ := Repair(norm)
		if len(out) == 0 {
			return // only orphan replies: the gateway refuses such a request (400)
		}
		req.SetMessages(out)
		enc, err := req.Encode("m")
		if err != nil {
			t.Fatal(err)
		}
		again, err := wire.DecodeRequest(enc)
		if err != nil {
			t.Fatalf("the repaired request does not decode: %v\n%s", err, enc)
		}
		norm2, fixes := FixToolCalls(again.Messages, steps)
		if _, rep := Repair(norm2); fixes.Any() || !rep.Empty() {
			t.Fatalf("second pass changed something: %+v %s\n%s", fixes, showReport(rep), enc)
		}
	})
}
