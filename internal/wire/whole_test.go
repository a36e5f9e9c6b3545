package wire

import (
	"encoding/json"
	"strings"
	"testing"
)

// Whole answers get the dialect fixes streams get: a call without an id
// gets the same made-up id a stream of the same answer would (A07), and
// content blocks become the text and the reasoning (A31); strict leaves
// both as they came, the missing id then an incomplete call.
func TestWholeDialects(t *testing.T) {
	body := `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant",` +
		`"content":[{"type":"thinking","thinking":"Plan."},{"type":"text","text":"Calling."},{"type":"reference","reference_ids":[2]}],` +
		`"tool_calls":[{"id":"","type":"function","function":{"name":"f","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}`
	n := NewNormalizer(Options{Quirks: AllQuirks(), KeepText: true, SingleChoice: true})
	out, err := n.Whole([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Choices []struct {
			Message struct {
				Content   string `json:"content"`
				Reasoning string `json:"reasoning_content"`
				ToolCalls []struct {
					ID string `json:"id"`
				} `json:"tool_calls"`
			} `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%s: %v", out, err)
	}
	m := got.Choices[0].Message
	res := n.Result(nil)
	if m.Content != "Calling." || m.Reasoning != "Plan." || len(m.ToolCalls) != 1 || !strings.HasPrefix(m.ToolCalls[0].ID, "call_") {
		t.Errorf("message %+v from %s", m, out)
	}
	if res.CallsErr != nil || len(res.Calls) != 1 || res.Calls[0].ID != m.ToolCalls[0].ID || res.Text != "Calling." {
		t.Errorf("result %+v", res)
	}
	if f := res.Fixes; f[FixMissingID] != 1 || f[FixContentBlocks] != 1 || f[FixDroppedBlock] != 1 {
		t.Errorf("fixes %v", f)
	}
	strict := NewNormalizer(Options{SingleChoice: true})
	out, _ = strict.Whole([]byte(body))
	if !strings.Contains(string(out), `"type":"reference"`) || strict.Result(nil).CallsErr == nil {
		t.Errorf("strict: %s, %v", out, strict.Result(nil).CallsErr)
	}
}
