package gateway_test

import (
	"io"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/sim"
	"github.com/toolgate/toolgate/internal/testing/gatewaytest"
	"github.com/toolgate/toolgate/internal/testing/testredis"
)

// docs/configuration.md's worked budgets-and-keys config, run as written
// against the simulator (in place of OpenAI) and a real Redis: each claim
// the document makes about it holds.
func TestWorkedExample(t *testing.T) {
	doc, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	section := string(doc)[strings.Index(string(doc), "## A worked example: budgets and keys"):]
	start := strings.Index(section, "```yaml\n") + len("```yaml\n")
	yaml := section[start : start+strings.Index(section[start:], "```")]
	srv := testredis.Start(t)
	s := sim.New(sim.Options{})
	up := httptest.NewServer(s)
	t.Cleanup(up.Close)
	// As written, but for where the upstream and Redis are, and a Redis
	// timeout no busy machine reaches (fail_open would admit uncounted).
	yaml = strings.NewReplacer("https://api.openai.com/v1", up.URL+"/v1", "${REDIS_URL}", srv.URL(), "${OPENAI_API_KEY}", "upstream-secret",
		"on_error: fail_open}", "on_error: fail_open, timeout: 10s}").Replace(yaml)
	if !strings.Contains(yaml, "timeout: 10s") {
		t.Fatal("the worked example's state line changed: give the test its timeout again")
	}
	e := gatewaytest.Start(t, "", yaml)

	call := func(model, key, session string) (int, string) {
		resp := e.Post(t, `{"model":"`+model+`","messages":[{"role":"user","content":"x"}]}`,
			"Authorization", "Bearer "+key, "X-Session-Id", session)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode, string(b)
	}
	if code, body := call("gpt-4o", "sk-team-a-example", "s1"); code != 403 {
		t.Errorf("team-a, gpt-4o: %d %s", code, body)
	}
	for i := range 6 {
		if code, body := call("gpt-4o-mini", "sk-team-a-example", "s1"); code != 200 {
			t.Fatalf("team-a call %d: %d %s", i+1, code, body)
		}
	}
	if sent := string(s.LastRequest()); !strings.Contains(sent, `"max_completion_tokens":512`) {
		t.Errorf("team-a's output limit: %s", sent)
	}
	if code, body := call("gpt-4o-mini", "sk-team-a-example", "s1"); code != 429 || !strings.Contains(body, "max_calls_exceeded") {
		t.Errorf("team-a call 7: %d %s", code, body)
	}
	for i := range 8 {
		if code, body := call("gpt-4o", "sk-ops-example", "s1"); code != 200 {
			t.Fatalf("ops call %d: %d %s", i+1, code, body)
		}
	}
	if sent := string(s.LastRequest()); !strings.Contains(sent, `"max_completion_tokens":1024`) {
		t.Errorf("ops's output limit: %s", sent)
	}
	if code, _ := call("gpt-4o", "sk-ops-example", "s1"); code != 429 {
		t.Errorf("ops call 9: %d", code)
	}
}
