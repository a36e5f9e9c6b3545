package gateway_test

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/sim"
	"github.com/toolgate/toolgate/internal/testing/gatewaytest"
)

// Client keys: configured as SHA-256 hashes; 401 without a valid key, 403
// for a model the key may not use, the key's budget applied with the
// route's (the stricter wins), and the key never forwarded upstream.
func TestClientKeys(t *testing.T) {
	hash := func(k string) string { h := sha256.Sum256([]byte(k)); return hex.EncodeToString(h[:]) }
	e, s := gatewaytest.StartSim(t, sim.Options{}, `
keys:
  - {name: team-a, sha256: `+hash("sk-team-a")+`, models: ["sim-*"], budget: {max_calls: 1}}
  - {name: team-b, sha256: `+hash("sk-team-b")+`}
upstreams: [{name: sim, url: "UPSTREAM_URL/v1"}]
routes: [{model: "*", upstream: sim, budget: {max_calls: 5}}]
`)
	post := func(model string, hdr ...string) (int, string) {
		resp := e.Post(t, `{"model":"`+model+`","user":"u","messages":[{"role":"user","content":"x"}]}`, hdr...)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode, string(b)
	}
	if code, body := post("sim-text"); code != 401 || !strings.Contains(body, "invalid_api_key") {
		t.Errorf("no key: %d %s", code, body)
	}
	if code, _ := post("sim-text", "Authorization", "Bearer sk-wrong"); code != 401 {
		t.Errorf("wrong key: %d", code)
	}
	if code, body := post("gpt-4o", "Authorization", "Bearer sk-team-a"); code != 403 || !strings.Contains(body, "model_not_allowed") {
		t.Errorf("model not allowed: %d %s", code, body)
	}
	if code, _ := post("sim-text", "Authorization", "Bearer sk-team-a"); code != 200 {
		t.Errorf("valid key: %d", code)
	}
	if h := s.LastHeader(); strings.Contains(h.Get("Authorization"), "sk-team-a") {
		t.Errorf("the client's key was forwarded: %v", h)
	}
	if code, _ := post("sim-text", "Authorization", "Bearer sk-team-a"); code != 429 {
		t.Errorf("the key's stricter max_calls (1) was not applied: %d", code)
	}
	if code, _ := post("gpt-4o", "X-Api-Key", "sk-team-b"); code != 200 {
		t.Errorf("x-api-key, every model: %d", code)
	}
	resp, err := e.HTTP.Get(e.URL + "/models")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Errorf("GET /v1/models without a key: %d", resp.StatusCode)
	}
	if gatewaytest.WithField(e.WaitAccess(t, 7), "key", "team-a") == nil {
		t.Error("the access log does not name the key")
	}
}

// A key's model list is decided before anything costly: a Messages or
// Responses request for a model the key may not use is refused 403
// before its body is translated (a body whose translation would be
// refused still gets the 403) or a stored response is read; count_tokens
// is admitted like /v1/messages — the model list, the request rate — and
// its access line names the key, the route and the bytes read. A key at
// its rate is refused before any translation, stored response or repair.
func TestAdmissionBeforeTranslation(t *testing.T) {
	e, s := gatewaytest.StartSim(t, sim.Options{}, `
upstreams:
  - {name: claude, protocol: anthropic, url: "UPSTREAM_URL/v1"}
  - {name: sim, url: "UPSTREAM_URL/v1"}
routes:
  - {name: claude, model: "claude-*", upstream: claude}
  - {name: other, model: "*", upstream: sim}
keys:
  - {name: narrow, sha256: `+gatewaytest.KeyHash("sk-narrow")+`, models: ["sim-*"], rate_limit: {requests_per_minute: 2}}
`)
	untranslatable := `{"model":"gpt-forbidden","max_tokens":10,"messages":[{"role":"user","content":[{"type":"bogus_block"}]}]}`
	resp, body := e.Do(t, "POST", "/messages", untranslatable, "x-api-key", "sk-narrow")
	if resp.StatusCode != 403 || !strings.Contains(body, "permission_error") {
		t.Errorf("messages: %d %s", resp.StatusCode, body)
	}
	resp, body = e.Do(t, "POST", "/responses", `{"model":"gpt-forbidden","previous_response_id":"resp_unknown","input":[{"type":"bogus_item"}]}`, "Authorization", "Bearer sk-narrow")
	if resp.StatusCode != 403 {
		t.Errorf("responses: %d %s", resp.StatusCode, body)
	}
	// A request of many tiny blocks (10.5 MB, 388,354 blocks) is refused
	// before any is translated, naming the bound.
	many := `{"model":"sim-text","max_tokens":10,"messages":[{"role":"user","content":[` + strings.TrimSuffix(strings.Repeat(`{"type":"text","text":"a"},`, 388354), ",") + `]}]}`
	resp, body = e.Do(t, "POST", "/messages", many, "x-api-key", "sk-narrow")
	if resp.StatusCode != 400 || !strings.Contains(body, "at most 1024") {
		t.Errorf("many blocks: %d %.300s", resp.StatusCode, body)
	}
	items := `{"model":"sim-text","input":[` + strings.TrimSuffix(strings.Repeat(`{"role":"user","content":"a"},`, 100000), ",") + `]}`
	resp, body = e.Do(t, "POST", "/responses", items, "Authorization", "Bearer sk-narrow")
	if resp.StatusCode != 400 || !strings.Contains(body, "server.max_messages") {
		t.Errorf("many items: %d %.300s", resp.StatusCode, body)
	}
	before := s.Requests()
	resp, body = e.Do(t, "POST", "/messages/count_tokens", `{"model":"claude-text","messages":[{"role":"user","content":"hi"}]}`, "x-api-key", "sk-narrow")
	if resp.StatusCode != 403 || s.Requests() != before {
		t.Errorf("count_tokens for a model the key may not use: %d %s, %d upstream requests", resp.StatusCode, body, s.Requests()-before)
	}
	for i, want := range []int{200, 200, 429} {
		resp, body := e.Do(t, "POST", "/messages/count_tokens", `{"model":"sim-text","messages":[{"role":"user","content":"hi"}]}`, "x-api-key", "sk-narrow")
		if resp.StatusCode != want {
			t.Errorf("count_tokens %d: %d %s, want %d", i, resp.StatusCode, body, want)
		}
	}
	// The key is at its request rate: a request is refused 429 before it
	// is translated (one whose translation would be refused), a stored
	// response read (one that names none) or its transcript repaired (one
	// that repair would leave empty).
	for _, c := range [][2]string{
		{"/messages", untranslatable},
		{"/responses", `{"model":"sim-text","previous_response_id":"resp_unknown","input":"hi"}`},
		{"/chat/completions", `{"model":"sim-text","messages":[{"role":"tool","tool_call_id":"call_1","content":"orphan"}]}`},
	} {
		body := strings.Replace(c[1], "gpt-forbidden", "sim-text", 1)
		if resp, b := e.Do(t, "POST", c[0], body, "x-api-key", "sk-narrow", "Authorization", "Bearer sk-narrow"); resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" {
			t.Errorf("%s at the key's rate: %d %s", c[0], resp.StatusCode, b)
		}
	}
	counted := 0
	for _, l := range e.WaitAccess(t, 11) {
		if l["path"] != "/v1/messages/count_tokens" {
			continue
		}
		counted++
		if l["key"] != "narrow" || l["route"] == nil || l["route"] == "" || l["bytes_in"] == int64(0) {
			t.Errorf("count_tokens' access line: %v", l)
		}
	}
	if counted != 4 {
		t.Errorf("%d count_tokens access lines", counted)
	}
}
