package gateway_test

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/console"
	"github.com/toolgate/toolgate/internal/gateway"
	"github.com/toolgate/toolgate/internal/sim"
	"github.com/toolgate/toolgate/internal/testing/gatewaytest"
	"github.com/toolgate/toolgate/internal/testing/wait"
)

// The console's inspector gets what repair did to a request by message
// and call id, and an outline of the transcript around it: the messages
// within two of those repair named, with their positions, never every
// message (a transcript of 2,000 messages is a few lines) and never
// content.
func TestConsoleOutline(t *testing.T) {
	e, entries := consoleEnv(t, gatewaytest.SimConfig)
	var msgs []string
	for i := range 1000 {
		msgs = append(msgs, fmt.Sprintf(`{"role":"user","content":"secret text %d"}`, i), `{"role":"assistant","content":"ok"}`)
	}
	msgs[1001] = `{"role":"assistant","tool_calls":[{"id":"call_lost","type":"function","function":{"name":"f","arguments":"{}"}}]}`
	resp, body := e.Do(t, "POST", "/chat/completions", `{"model":"sim-text","messages":[`+strings.Join(msgs, ",")+`]}`)
	if resp.StatusCode != 200 || resp.Header.Get(gateway.RepairHeader) != "sealed=1; dropped=0; moved=0" {
		t.Fatalf("%d %v %s", resp.StatusCode, resp.Header, body)
	}
	rep := entries(t).Repair
	if len(rep.Actions) != 1 || rep.Actions[0] != (console.Action{Action: "sealed", Index: 1001, CallID: "call_lost"}) {
		t.Errorf("the actions: %+v", rep.Actions)
	}
	if len(rep.Before) != 5 || rep.Before[0].Index != 999 || rep.Before[2].IDs[0] != "call_lost" || len(rep.After) != 6 || rep.After[3].Role != "tool" {
		t.Errorf("the outline: before %+v, after %+v", rep.Before, rep.After)
	}
	b, _ := json.Marshal(rep)
	if strings.Contains(string(b), "secret text") {
		t.Error("the console kept content")
	}
}

// With console.inspect: content the outline's messages keep their text,
// clipped, with what looks like a key redacted.
func TestConsoleContent(t *testing.T) {
	e, entries := consoleEnv(t, gatewaytest.SimConfig+"console: {inspect: content}\n")
	long := strings.Repeat("word ", 200)
	resp, body := e.Do(t, "POST", "/chat/completions", `{"model":"sim-text","messages":[{"role":"user","content":"use sk-proj-abcdefgh12345678 and Bearer eyJhbGciOi.x.y, AKIAIOSFODNN7EXAMPLE"},`+
		`{"role":"assistant","tool_calls":[{"id":"call_lost","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"user","content":"`+long+`"}]}`)
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	before := entries(t).Repair.Before
	if len(before) != 3 || before[0].Text != "use [redacted] and [redacted] [redacted]" || len([]rune(before[2].Text)) != 301 {
		t.Errorf("the texts kept: %+v", before)
	}
}

// consoleEnv is a gateway with config yaml in front of the simulator,
// with a console, and what reads the one request it kept.
func consoleEnv(t *testing.T, yaml string) (*gatewaytest.Env, func(*testing.T) console.Entry) {
	up := httptest.NewServer(sim.New(sim.Options{}))
	t.Cleanup(up.Close)
	con := console.New(console.Options{Recent: 10})
	t.Cleanup(con.Close)
	e := gatewaytest.Start(t, up.URL, yaml, gatewaytest.Options{Gateway: func(o *gateway.Options) { o.Console = con }})
	return e, func(t *testing.T) console.Entry {
		admin := httptest.NewServer(con.Handler(func() console.Source { return e.Gateway }, e.Reg))
		defer admin.Close()
		var entries []console.Entry
		// The record is kept once the client has its answer, a moment later.
		wait.For(t, "the console to keep the request", func() bool {
			r, err := e.HTTP.Get(admin.URL + "/ui/api/requests")
			if err != nil {
				t.Fatal(err)
			}
			defer r.Body.Close()
			return json.NewDecoder(r.Body).Decode(&entries) == nil && len(entries) > 0
		})
		if len(entries) != 1 || entries[0].Repair == nil {
			t.Fatalf("%+v", entries)
		}
		return entries[0]
	}
}

// What the console keeps of one request is bounded however much repair
// did: 500 orphan replies keep the first 100 actions (the rest counted)
// and at most 200 messages of outline.
func TestConsoleOutlineBound(t *testing.T) {
	e, entry := consoleEnv(t, gatewaytest.SimConfig)
	msgs := []string{`{"role":"user","content":"go"}`}
	for i := range 500 {
		msgs = append(msgs, fmt.Sprintf(`{"role":"tool","tool_call_id":"call_orphan_%d","content":"late"}`, i))
	}
	msgs = append(msgs, `{"role":"user","content":"and?"}`)
	if resp, body := e.Do(t, "POST", "/chat/completions", `{"model":"sim-text","messages":[`+strings.Join(msgs, ",")+`]}`); resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	rep := entry(t).Repair
	if len(rep.Actions) != 100 || rep.Omitted != 400 || len(rep.Before) != 200 || len(rep.After) > 200 {
		t.Errorf("%d actions, %d omitted, outline %d before, %d after", len(rep.Actions), rep.Omitted, len(rep.Before), len(rep.After))
	}
}
