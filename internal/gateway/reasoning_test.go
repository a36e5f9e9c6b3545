package gateway

import (
	"io"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/sim"
)

// A route's reasoning format reaches the upstream as its fields, chosen by
// the client's reasoning_effort where allowed; a thinking budget that does
// not fit the output limit is refused before sending (SPEC §4).
func TestReasoningThroughGateway(t *testing.T) {
	e, s := startSim(t, sim.Options{}, `
upstreams: [{name: sim, url: "UPSTREAM_URL/v1"}]
routes:
  - model: claude-like
    upstream: sim
    upstream_model: sim-text
    reasoning: {format: thinking-budget, level: low, client_effort: true, fields: {metadata: {via: toolgate}}}
`)
	resp := e.post(t, `{"model":"claude-like","max_tokens":16000,"reasoning_effort":"high","messages":[{"role":"user","content":"x"}]}`)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	sent := string(s.LastRequest())
	if resp.StatusCode != 200 || !strings.Contains(sent, `"thinking":{"type":"enabled","budget_tokens":8192}`) ||
		strings.Contains(sent, "reasoning_effort") || !strings.Contains(sent, `"metadata":{"via":"toolgate"}`) {
		t.Fatalf("status %d, upstream got %s", resp.StatusCode, sent)
	}
	before := s.Requests()
	resp = e.post(t, `{"model":"claude-like","max_tokens":1000,"messages":[{"role":"user","content":"x"}]}`)
	body, raw := readError(t, resp)
	if resp.StatusCode != 400 || !strings.Contains(body.Error.Message, "(1024 tokens)") || !strings.Contains(body.Error.Message, "max_tokens = 1000") ||
		s.Requests() != before {
		t.Fatalf("status %d: %s", resp.StatusCode, raw)
	}
	if a := e.waitAccess(t, 1)[0]; a["reasoning"] != "high" {
		t.Errorf("access %v", a)
	}
}
