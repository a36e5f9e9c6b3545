package gateway_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/toolgate/toolgate/internal/config"
	"github.com/toolgate/toolgate/internal/gateway"
	"github.com/toolgate/toolgate/internal/observe"
	"github.com/toolgate/toolgate/internal/sim"
	"github.com/toolgate/toolgate/internal/testing/gatewaytest"
	"github.com/toolgate/toolgate/internal/testing/observetest"
)

// FuzzRequest sends arbitrary bodies (with an arbitrary choice of key,
// Content-Type and Content-Encoding) through the whole handler, with keys,
// budgets and rate limits configured, in front of the simulator: no
// answer is a 500, nothing panics, and every 4xx is an OpenAI error body.
func FuzzRequest(f *testing.F) {
	for _, s := range []string{
		`{"model":"sim-text","messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"sim-tool","stream":true,"messages":[{"role":"user","content":"hi"}],"tools":[` + sim.WeatherTool + `],"tool_choice":"required"}`,
		`{"model":"sim-text","model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"sim-text","messages":[{"role":"assistant","tool_calls":[{"id":"c","function":{"name":"f","arguments":{"a":1}}},{"id":"c"},{"id":""}]},{"role":"tool","tool_call_id":"c"},{"role":"tool"}]}`,
		`{"model":"sim-q-sameindex","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"x"}],"reasoning_effort":"high","n":2,"response_format":{"type":"json_schema","json_schema":{"schema":{"type":"object"}}}}`,
		`{"model":"sim-text","messages":[{"role":"user","content":"` + strings.Repeat("x", 3000) + `"}],"max_tokens":5,"user":"u"}`,
		`{"model":"sim-cut","stream":true,"messages":[{"role":"user","content":"x"}]}`,
		`{"model":"x","messages":[]}`, `[]`, ``, `{"model":"sim-text","messages":[{"role":"user"}],"tools":[{"function":{"name":"a","parameters":{"$ref":"http://x"}}}]}`,
	} {
		f.Add([]byte(s), uint8(0))
		f.Add([]byte(s), uint8(7))
	}
	s := sim.New(sim.Options{})
	up := httptest.NewServer(s)
	defer up.Close()
	cfg, err := config.Parse([]byte(`
server: {max_body_bytes: 100000}
keys:
  - {name: a, sha256: `+gatewaytest.KeyHash("sk-fuzz-a")+`, models: ["sim-*"], budget: {max_input_chars: 2000}, rate_limit: {requests_per_minute: 1000000, tokens_per_minute: 100000000}}
  - {name: b, sha256: `+gatewaytest.KeyHash("sk-fuzz-b")+`}
upstreams: [{name: sim, url: "`+up.URL+`/v1"}]
routes:
  - {name: trim, model: "sim-text", upstream: sim, budget: {max_input_chars: 1000, on_input_over: trim, max_calls: 1000000}, reasoning: {format: reasoning-effort, client_effort: true}}
  - {name: strict, model: "sim-tool", upstream: sim, repair: reject, validate_arguments: reject, policy: default}
  - {name: all, model: "*", upstream: sim, budget: {preset: large, max_calls: 1000000}}
`), func(string) string { return "" })
	if err != nil {
		f.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	metrics := observe.NewMetrics(reg)
	g, err := gateway.New(gateway.Options{Config: cfg, Logger: zap.NewNop(), Metrics: metrics})
	if err != nil {
		f.Fatal(err)
	}
	defer g.Close()
	f.Fuzz(func(t *testing.T, body []byte, sel uint8) {
		req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", bytes.NewReader(body))
		if key := []string{"sk-fuzz-a", "sk-fuzz-b", "", "sk-wrong"}[sel%4]; key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		if sel&4 != 0 {
			req.Header.Set("Content-Type", "application/json")
		}
		if sel&8 != 0 {
			req.Header.Set("Content-Encoding", "gzip")
		}
		w := httptest.NewRecorder()
		g.ServeHTTP(w, req)
		if w.Code >= 500 && w.Code != http.StatusBadGateway && w.Code != http.StatusServiceUnavailable && w.Code != http.StatusGatewayTimeout {
			t.Fatalf("status %d for %q: %s", w.Code, body, w.Body.Bytes())
		}
		if observetest.Value(t, observetest.Registry{Gatherer: reg, Metrics: metrics}, "toolgate_panics_total", nil) > 0 {
			t.Fatalf("panic for %q", body)
		}
		if w.Code >= 400 && w.Code < 500 {
			// The shape, all four members; code may be null in an
			// upstream's own 4xx, which is passed on as it was.
			var eb struct {
				Error map[string]json.RawMessage `json:"error"`
			}
			ok := json.Unmarshal(w.Body.Bytes(), &eb) == nil
			for _, k := range []string{"message", "type", "param", "code"} {
				_, has := eb.Error[k]
				ok = ok && has
			}
			if !ok || string(eb.Error["message"]) == `""` {
				t.Fatalf("a %d without an OpenAI error body for %q: %s", w.Code, body, w.Body.Bytes())
			}
		}
	})
}
