package gateway_test

import (
	"fmt"
	"io"
	"maps"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/sim"
	"github.com/toolgate/toolgate/internal/testing/gatewaytest"
	"github.com/toolgate/toolgate/internal/testing/testredis"
)

// Every documented combination of a key's budget and limits, a route's
// budget and a state store resolves to a usable gateway that serves the
// request: one request each, streamed or not (deterministically: each
// key and route pair both ways), answered 200 and whole (a key's budget on
// a route without one used to reach a nil and panic).
func TestConfigCombinations(t *testing.T) {
	redis := testredis.Start(t)
	s := sim.New(sim.Options{})
	up := httptest.NewServer(s)
	defer up.Close()
	keys := map[string]string{
		"open gateway":            "",
		"key":                     `{name: k, sha256: ` + gatewaytest.KeyHash("sk-combo") + `}`,
		"key budget input":        `{name: k, sha256: ` + gatewaytest.KeyHash("sk-combo") + `, budget: {max_input_chars: 1000}}`,
		"key budget preset":       `{name: k, sha256: ` + gatewaytest.KeyHash("sk-combo") + `, budget: {preset: small}}`,
		"key budget unlimited":    `{name: k, sha256: ` + gatewaytest.KeyHash("sk-combo") + `, budget: {max_calls: unlimited, max_input_chars: unlimited, max_output_chars: unlimited, max_output_tokens: unlimited, call_timeout_ms: unlimited}}`,
		"key budget zero":         `{name: k, sha256: ` + gatewaytest.KeyHash("sk-combo") + `, budget: {max_output_chars: 0}}`,
		"key rate limits":         `{name: k, sha256: ` + gatewaytest.KeyHash("sk-combo") + `, rate_limit: {requests_per_minute: 100, tokens_per_minute: 100000}}`,
		"key budget, limits, all": `{name: k, sha256: ` + gatewaytest.KeyHash("sk-combo") + `, models: ["sim-*"], budget: {preset: large, max_calls: 3}, rate_limit: {requests_per_minute: 100}}`,
		"key spend":               `{name: k, sha256: ` + gatewaytest.KeyHash("sk-combo") + `, budget: {max_cost_usd: 1, cost_window: month}}`,
	}
	routes := map[string]string{
		"no budget":     ``,
		"preset":        `, budget: {preset: small}`,
		"trim":          `, budget: {max_input_chars: 5000, on_input_over: trim}`,
		"refuse":        `, budget: {max_input_chars: 5000, on_input_over: refuse}`,
		"max calls":     `, budget: {max_calls: 1}`,
		"exact values":  `, budget: {max_output_chars: 10, max_output_tokens: 0, call_timeout_ms: 5000}`,
		"reasoning":     `, reasoning: {format: thinking-budget, level: low, budgets: {low: 256}}, budget: {max_output_tokens: 4096}`,
		"reject repair": `, repair: reject, policy: default, validate_arguments: reject, tool_calls: buffer`,
		"deployments":   `, upstreams: [{name: sim, weight: 2}, {name: sim2, weight: 0}], cooldown: 1s`,
	}
	states := map[string]string{
		"memory":            ``,
		"redis fail_open":   `state: {store: redis, redis_url: "` + redis.URL() + `", timeout: 10s}`,
		"redis fail_closed": `state: {store: redis, redis_url: "` + redis.URL() + `", timeout: 10s, on_error: fail_closed}`,
	}
	// Sorted, so that every run makes the same requests: each key and
	// route pair is streamed on some states and not on others.
	for ki, kn := range slices.Sorted(maps.Keys(keys)) {
		for ri, rn := range slices.Sorted(maps.Keys(routes)) {
			for si, sn := range slices.Sorted(maps.Keys(states)) {
				key, route, state := keys[kn], routes[rn], states[sn]
				stream := (ki+ri+si)%2 == 0
				name := fmt.Sprintf("%s/%s/%s/stream=%v", kn, rn, sn, stream)
				t.Run(name, func(t *testing.T) {
					upstream := "upstream: sim"
					if strings.Contains(route, "upstreams:") {
						upstream = "name: pool"
					}
					yaml := state + "\nupstreams: [{name: sim, url: \"" + up.URL + "/v1\"}, {name: sim2, url: \"" + up.URL + "/v1\"}]\nroutes: [{model: \"*\", " + upstream + route + "}]\n"
					if key != "" {
						yaml += "keys: [" + key + "]\n"
					}
					if strings.Contains(key, "max_cost_usd") {
						yaml += "pricing: {\"sim-*\": {input: 1, output: 2}}\n"
					}
					e := gatewaytest.Start(t, up.URL, yaml)
					// A session of its own: the Redis states share one server.
					resp := e.Post(t, fmt.Sprintf(`{"model":"sim-text","stream":%v,"user":%q,"messages":[{"role":"user","content":"%s"}]}`,
						stream, name, strings.Repeat("x", 100)), "Authorization", "Bearer sk-combo")
					b, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					// Every combination serves the request whole: a streamed
					// answer ends with [DONE], a whole one is a completion.
					complete := strings.HasSuffix(string(b), "data: [DONE]\n\n")
					if !stream {
						complete = strings.Contains(string(b), `"object":"chat.completion"`)
					}
					if resp.StatusCode != 200 || !complete {
						t.Errorf("%d %.300s", resp.StatusCode, b)
					}
					e.WaitAccess(t, 1)
					if n := e.Metric(t, "toolgate_panics_total", nil); n > 0 {
						t.Errorf("%v panics", n)
					}
				})
			}
		}
	}
}
