package gateway_test

import (
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/sim"
	"github.com/toolgate/toolgate/internal/testing/gatewaytest"
)

// orgWideConfig has, for each client API's own protocol, a route that
// allows nothing past the request (the default) and one that allows
// every kind of organization-wide object and the hosted tools; a key
// that narrows the lists to nothing, and a priced one.
const orgWideConfig = `
pricing: {"*": {input: 1, output: 1}}
keys:
  - {name: k, sha256: KEYHASH}
  - {name: narrow, sha256: NARROWHASH, org_wide: [], hosted_tools: []}
  - {name: priced, sha256: PRICEDHASH, budget: {max_cost_usd: 100}}
upstreams:
  - {name: compat, url: "UPSTREAM_URL/v1"}
  - {name: claude, protocol: anthropic, url: "UPSTREAM_URL/v1"}
  - {name: oai, protocol: responses, url: "UPSTREAM_URL/v1"}
routes:
  - {name: chat, model: "sim-*", upstream: compat}
  - {name: chat-open, model: "open/sim-*", upstream: compat, upstream_model: sim-text, org_wide: [files, service_tier], hosted_tools: [web_search]}
  - {name: claude, model: "claude-*", upstream: claude}
  - {name: claude-open, model: "open/claude-*", upstream: claude, upstream_model: claude-text, org_wide: [files, containers, mcp_servers, service_tier], hosted_tools: [web_search]}
  - {name: oai, model: "oai/*", upstream: oai, upstream_model: sim-text}
  - {name: oai-open, model: "open/oai/*", upstream: oai, upstream_model: sim-text, org_wide: [files, items, vector_stores, mcp_servers, containers, service_tier], hosted_tools: [web_search, file_search, mcp, code_interpreter]}
`

// Organization-wide objects and billed tools are opt-in: a reference to
// an object the upstream keeps for its whole organization (an item, a
// file, vector stores, a container, an MCP server) and a billed service
// tier are refused 400 naming the member, on every client API and on a
// route of its own protocol, nothing sent — unless the route lists the
// kind (org_wide), and the key does not narrow it away. A hosted tool a
// route does not allow is left out, named in X-Toolgate-Dropped and
// counted, the request served without it; a route allows it by type
// (hosted_tools), a key narrows that, and a priced key gets none.
func TestOrgWideOptIn(t *testing.T) {
	cfg := strings.NewReplacer("KEYHASH", gatewaytest.KeyHash("k"), "NARROWHASH", gatewaytest.KeyHash("sk-narrow"),
		"PRICEDHASH", gatewaytest.KeyHash("sk-priced")).Replace(orgWideConfig)
	e, s := gatewaytest.StartSim(t, sim.Options{}, cfg)
	auth := func(key string) []string {
		return []string{"Authorization", "Bearer " + key, "x-api-key", key, "anthropic-version", "2023-06-01"}
	}
	for _, tc := range []struct {
		path, model, body, param string
	}{
		{"/chat/completions", "sim-text", `"messages":[{"role":"user","content":[{"type":"file","file":{"file_id":"file-1"}}]}]`, "messages[0].content[0].file.file_id"},
		{"/chat/completions", "sim-text", `"service_tier":"priority","messages":[{"role":"user","content":"hi"}]`, "service_tier"},
		{"/messages", "claude-text", `"max_tokens":16,"messages":[{"role":"user","content":[{"type":"document","source":{"type":"file","file_id":"file-1"}}]}]`, "messages.0.content.0"},
		{"/messages", "claude-text", `"max_tokens":16,"container":"cntr_1","messages":[{"role":"user","content":"hi"}]`, "container"},
		{"/messages", "claude-text", `"max_tokens":16,"mcp_servers":[{"type":"url","url":"https://mcp.example","name":"m"}],"messages":[{"role":"user","content":"hi"}]`, "mcp_servers"},
		{"/messages", "claude-text", `"max_tokens":16,"service_tier":"priority","messages":[{"role":"user","content":"hi"}]`, "service_tier"},
		{"/responses", "oai/x", `"input":[{"type":"item_reference","id":"msg_other_key"}]`, "input[0]"},
		{"/responses", "oai/x", `"input":[{"role":"user","content":[{"type":"input_file","file_id":"file-1"}]}]`, "input[0].content[0]"},
		{"/responses", "oai/x", `"input":"hi","service_tier":"priority"`, "service_tier"},
	} {
		body := `{"model":"` + tc.model + `",` + tc.body + `}`
		before := s.Requests()
		resp, b := e.Do(t, "POST", tc.path, body, auth("k")...)
		if resp.StatusCode != 400 || !strings.Contains(b, `"param":"`+tc.param+`"`) && !strings.Contains(b, tc.param+":") || !strings.Contains(b, "routes[].org_wide") || s.Requests() != before {
			t.Errorf("%s %s: %d %s, %d upstream requests", tc.path, tc.body, resp.StatusCode, b, s.Requests()-before)
		}
		// Allowed on the open route: sent on (whatever the upstream makes
		// of it).
		open := strings.Replace(body, `"model":"`, `"model":"open/`, 1)
		if resp, b := e.Do(t, "POST", tc.path, open, auth("k")...); strings.Contains(b, "routes[].org_wide") || s.Requests() != before+1 {
			t.Errorf("%s %s on a route that allows it: %d %s", tc.path, tc.body, resp.StatusCode, b)
		}
		// A key whose own list is empty does not reach it there either.
		if resp, b := e.Do(t, "POST", tc.path, open, auth("sk-narrow")...); resp.StatusCode != 400 || !strings.Contains(b, "routes[].org_wide") {
			t.Errorf("%s %s with a key that narrows it away: %d %s", tc.path, tc.body, resp.StatusCode, b)
		}
	}

	// Hosted tools: left out unless the route allows them, on a route of
	// the client's own protocol too.
	for _, tc := range []struct {
		path, model, body, dropped, declared string
	}{
		{"/chat/completions", "sim-text", `"web_search_options":{},"messages":[{"role":"user","content":"hi"}]`, "tool:web_search_options", `"web_search_options"`},
		{"/messages", "claude-text", `"max_tokens":16,"tools":[{"type":"web_search_20250305","name":"web_search","max_uses":1000}],"messages":[{"role":"user","content":"hi"}]`, "tool:web_search_20250305", `"web_search_20250305"`},
		{"/responses", "oai/x", `"input":"hi","tools":[{"type":"web_search"},{"type":"function","name":"f","parameters":{"type":"object"}}]`, "tool:web_search", `{"type":"web_search"}`},
	} {
		body := `{"model":"` + tc.model + `",` + tc.body + `}`
		open := strings.Replace(body, `"model":"`, `"model":"open/`, 1)
		for _, c := range []struct {
			key, body string
			allowed   bool
		}{{"k", body, false}, {"k", open, true}, {"sk-narrow", open, false}, {"sk-priced", open, false}} {
			resp, b := e.Do(t, "POST", tc.path, c.body, auth(c.key)...)
			sent := string(s.LastRequest())
			dropped := resp.Header.Get("X-Toolgate-Dropped")
			if resp.StatusCode != 200 || strings.Contains(sent, tc.declared) != c.allowed || (dropped == tc.dropped) == c.allowed {
				t.Errorf("%s, key %s, %s: %d %q %s; sent %s", tc.path, c.key, c.body, resp.StatusCode, dropped, b, sent)
			}
		}
	}
	for route, n := range map[string]float64{"chat": 1, "claude": 1, "oai": 1, "chat-open": 2, "claude-open": 2, "oai-open": 2} {
		if got := e.Metric(t, "toolgate_repairs_total", map[string]string{"route": route, "action": "dropped_tool"}); got != n {
			t.Errorf("dropped_tool on %s: %v, want %v", route, got, n)
		}
	}
}

// A member the gateway reads or writes, spelled in another case or as a
// Unicode fold of it, is refused 400 (duplicate_key) on every client API
// and the passthrough, alone or beside the canonical one, nothing sent:
// an upstream that matches member names without regard to case (Go's
// encoding/json, Ollama) would read it beside the limit the gateway
// clamped or the model it checked.
func TestCaseVariantsRefused(t *testing.T) {
	e, s := gatewaytest.StartSim(t, sim.Options{}, `
upstreams:
  - {name: compat, url: "UPSTREAM_URL/v1"}
  - {name: claude, protocol: anthropic, url: "UPSTREAM_URL/v1"}
routes:
  - {model: "claude-*", upstream: claude}
  - {model: "*", upstream: compat}
`)
	for _, tc := range [][2]string{
		{"/chat/completions", `{"model":"sim-text","MAX_TOKENS":100000,"messages":[{"role":"user","content":"hi"}]}`},
		{"/chat/completions", `{"model":"sim-text","max_output_token\u017f":100000,"messages":[{"role":"user","content":"hi"}]}`},
		{"/chat/completions", `{"model":"sim-text","messages":[{"role":"user","content":"hi","Content":"other"}]}`},
		{"/responses", `{"model":"sim-text","Max_Output_Tokens":100000,"input":"hi"}`},
		{"/messages", `{"model":"claude-text","max_tokens":16,"Max_Tokens":100000,"messages":[{"role":"user","content":"hi"}]}`},
		{"/messages", `{"model":"claude-text","max_tokens":16,"messages":[{"role":"user","Content":"hi"}]}`},
		{"/responses", `{"model":"sim-text","input":[{"role":"user","content":"hi","Content":"other"}]}`},
		{"/responses", `{"model":"sim-text","input":[{"type":"function_call","call_id":"c","name":"f","Arguments":"{}"}]}`},
		{"/completions", `{"model":"sim-text","MAX_TOKENS":100000,"prompt":"hi"}`},
	} {
		before := s.Requests()
		resp, b := e.Do(t, "POST", tc[0], tc[1], "Authorization", "Bearer k", "x-api-key", "k", "anthropic-version", "2023-06-01")
		if resp.StatusCode != 400 || !strings.Contains(b, "in another case") && !strings.Contains(b, "differ only in case") || s.Requests() != before {
			t.Errorf("%s %s: %d %s, %d upstream requests", tc[0], tc[1], resp.StatusCode, b, s.Requests()-before)
		}
	}
	// A vendor's own camelCase member is no variant of one the gateway
	// knows: it goes on.
	if resp, b := e.Do(t, "POST", "/chat/completions", `{"model":"sim-text","topK":5,"messages":[{"role":"user","content":"hi"}]}`, "Authorization", "Bearer k"); resp.StatusCode != 200 {
		t.Errorf("a camelCase member of a vendor's: %d %s", resp.StatusCode, b)
	}
}
