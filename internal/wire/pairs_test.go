package wire_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/testing/wiretest"
	"github.com/toolgate/toolgate/internal/wire"
)

// CheckToolPairs refuses what OpenAI refuses, with OpenAI's wording and
// param (docs/quirks.md C01–C03), and accepts a paired transcript.
func TestCheckToolPairs(t *testing.T) {
	a := func(ids ...string) string {
		var cs []string
		for _, id := range ids {
			cs = append(cs, `{"id":"`+id+`","type":"function","function":{"name":"f","arguments":"{}"}}`)
		}
		return `{"role":"assistant","tool_calls":[` + strings.Join(cs, ",") + `]}`
	}
	tool := func(id string) string { return `{"role":"tool","tool_call_id":"` + id + `","content":"r"}` }
	u := `{"role":"user","content":"x"}`
	for _, tc := range []struct {
		name, in, param, msg string
	}{
		{"paired", "[" + u + "," + a("x", "y") + "," + tool("y") + "," + tool("x") + "," + u + "]", "", ""},
		{"missing reply", "[" + u + "," + a("x", "y") + "," + tool("x") + "," + u + "]", "messages.[1].role",
			"An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: y"},
		{"orphan", "[" + u + "," + tool("x") + "]", "messages.[1].role",
			"Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'."},
		{"wrong id in run", "[" + u + "," + a("x") + "," + tool("z") + "]", "messages.[2].role", "must be a response to a preceeding message"},
		{"duplicate reply", "[" + u + "," + a("x", "y") + "," + tool("x") + "," + tool("x") + "]", "messages.[3].tool_call_id",
			"Duplicate value for 'tool_call_id' of 'x', in messages[2] and messages[3]."},
		{"empty id", "[" + u + "," + a("") + "]", "messages.[1].tool_calls.[0].id", "empty string"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := wire.CheckToolPairs(wiretest.Messages(t, tc.in))
			if tc.msg == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			pe, ok := err.(*wire.PairingError)
			if !ok || pe.Param != tc.param || !strings.Contains(pe.Msg, tc.msg) {
				t.Fatalf("err = %#v", err)
			}
		})
	}
}

// Object edits change one member and keep the others' bytes and order.
func TestObjectEdit(t *testing.T) {
	o, err := wire.ParseObject([]byte(` {"b": [1, 2], "a":"x", "b":3 } `))
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := o.Get("b"); string(v) != "3" {
		t.Errorf("Get takes the last duplicate: %s", v)
	}
	o.Set("a", []byte(`null`))
	o.Set("c", []byte(`{}`))
	o.Delete("b")
	if got := string(o.JSON()); got != `{"a":null,"c":{}}` {
		t.Errorf("got %s", got)
	}
	if _, err := wire.ParseObject([]byte(`{"a":1} x`)); err == nil {
		t.Error("trailing data accepted")
	}
}

// SetMember rewrites one member, at any depth, keeping every other byte,
// and adds a member that is missing.
func TestSetMember(t *testing.T) {
	for _, tc := range []struct {
		in, value string
		path      []string
		want      string
	}{
		{`{"id":"a", "x":1}`, `"b"`, []string{"id"}, `{"id":"b", "x":1}`},
		{`{"x":1 }`, `"b"`, []string{"id"}, `{"x":1 ,"id":"b"}`},
		{`{ }`, `"b"`, []string{"id"}, `{ "id":"b"}`},
		{`{"function":{"name":"f","arguments":{"a":1}},"id":"c"}`, `"{\"a\":1}"`, []string{"function", "arguments"}, `{"function":{"name":"f","arguments":"{\"a\":1}"},"id":"c"}`},
		{`{"function":{"name":"f"}}`, `"{}"`, []string{"function", "arguments"}, `{"function":{"name":"f","arguments":"{}"}}`},
	} {
		got, ok := wire.SetMember(json.RawMessage(tc.in), json.RawMessage(tc.value), tc.path...)
		if !ok || string(got) != tc.want {
			t.Errorf("SetMember(%s, %v) = %s %v, want %s", tc.in, tc.path, got, ok, tc.want)
		}
	}
	if _, ok := wire.SetMember(json.RawMessage(`{"function":3}`), json.RawMessage(`1`), "function", "arguments"); ok {
		t.Error("a path through a non-object was set")
	}
}
