package gateway_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/gateway"
	"github.com/toolgate/toolgate/internal/gateway/gatewaytest"
	"github.com/toolgate/toolgate/internal/testredis"
)

// spendUpstream answers every chat request (streamed or not) with usage of
// 1,000 prompt tokens (400 of them cached) and 100 completion tokens: at
// $2 input, $0.50 cached input and $8 output per million tokens, $0.0022.
func spendUpstream(t *testing.T) (*httptest.Server, *atomic.Int64) {
	return usageUpstreamWith(t, `{"prompt_tokens":1000,"completion_tokens":100,"total_tokens":1100,"prompt_tokens_details":{"cached_tokens":400}}`)
}

func spendConfig(state, limit string) string {
	return state + `
pricing:
  "gpt-4o": {input: 2, cached_input: 0.5, output: 8}
  "gpt-*": {input: 100, output: 100}
keys:
  - {name: team, sha256: ` + gatewaytest.KeyHash("sk-team") + `, budget: {max_cost_usd: ` + limit + `}}
  - {name: other, sha256: ` + gatewaytest.KeyHash("sk-other") + `}
upstreams: [{name: up, url: "UPSTREAM_URL"}]
routes: [{model: "*", upstream: up}]
`
}

func spendCall(t *testing.T, e *gatewaytest.Env, key string, stream bool) (*http.Response, string) {
	t.Helper()
	return e.Do(t, "POST", "/chat/completions", fmt.Sprintf(`{"model":"gpt-4o","stream":%v,"messages":[{"role":"user","content":"x"}]}`, stream), "Authorization", "Bearer "+key)
}

// A key's spend: each response is priced from its usage (cached prompt
// tokens at the cached price), counted in toolgate_cost_usd_total and the
// access line; the key is refused with 429 insufficient_quota once its
// spend has reached max_cost_usd (three responses of $0.0022 reach
// $0.0066 exactly), with the remaining spend in x-ratelimit-remaining-cost;
// a limit one nano-dollar higher admits a fourth. Streamed and whole
// responses count alike; another key is not limited.
func TestSpendLimit(t *testing.T) {
	up, calls := spendUpstream(t)
	for _, tc := range []struct {
		limit    string
		admitted int
	}{{"0.0066", 3}, {"0.006600001", 4}} {
		t.Run(tc.limit, func(t *testing.T) {
			e := gatewaytest.Start(t, up.URL, spendConfig("", tc.limit))
			remaining := []string{}
			for i := range tc.admitted {
				resp, body := spendCall(t, e, "sk-team", i%2 == 1)
				if resp.StatusCode != 200 {
					t.Fatalf("request %d: %d %s", i+1, resp.StatusCode, body)
				}
				remaining = append(remaining, resp.Header.Get("X-Ratelimit-Remaining-Cost"))
			}
			if remaining[0] != "0.006600" || remaining[1] != "0.004400" || remaining[2] != "0.002200" {
				t.Errorf("x-ratelimit-remaining-cost: %v", remaining)
			}
			before := calls.Load()
			resp, body := spendCall(t, e, "sk-team", false)
			if resp.StatusCode != 429 || !strings.Contains(body, `"type":"insufficient_quota"`) || !strings.Contains(body, `"code":"insufficient_quota"`) ||
				resp.Header.Get("X-Ratelimit-Remaining-Cost") != "0.000000" || resp.Header.Get("Retry-After") == "" || calls.Load() != before {
				t.Fatalf("over the spend: %d %s %v", resp.StatusCode, body, resp.Header)
			}
			if resp, body := spendCall(t, e, "sk-other", false); resp.StatusCode != 200 {
				t.Fatalf("another key: %d %s", resp.StatusCode, body)
			}
			cost := e.Metric(t, "toolgate_cost_usd_total", map[string]string{"key": "team", "model": "gpt-4o"})
			if d := cost - 0.0022*float64(tc.admitted); d > 1e-9 || d < -1e-9 {
				t.Errorf("toolgate_cost_usd_total for team: %v", cost)
			}
			if n := e.Metric(t, "toolgate_budget_rejections_total", map[string]string{"key": "team", "reason": "max_cost_usd"}); n != 1 {
				t.Errorf("rejections: %v", n)
			}
			lines := e.WaitAccess(t, tc.admitted+2)
			if c, _ := lines[0]["cost_usd"].(float64); c < 0.0021999 || c > 0.0022001 || fmt.Sprint(lines[0]["tokens_cached"]) != "400" {
				t.Errorf("access line: %v", lines[0])
			}
		})
	}
}

// Two replicas on one Redis share a key's spend: the third response of
// $0.0022 on either reaches $0.0066 and both refuse the next; the day
// counter expires at the end of the UTC day, and a new day starts at zero.
func TestSpendSharedAcrossReplicas(t *testing.T) {
	srv := testredis.Start(t)
	up, _ := spendUpstream(t)
	var now atomic.Pointer[time.Time]
	day := time.Date(2026, 12, 1, 23, 0, 0, 0, time.UTC)
	now.Store(&day)
	opts := gatewaytest.Options{Gateway: func(o *gateway.Options) { o.Now = func() time.Time { return *now.Load() } }}
	cfg := spendConfig(`state: {store: redis, redis_url: "`+srv.URL()+`"}`, "0.0066")
	a, b := gatewaytest.Start(t, up.URL, cfg, opts), gatewaytest.Start(t, up.URL, cfg, opts)
	for i, e := range []*gatewaytest.Env{a, b, a} {
		if resp, body := spendCall(t, e, "sk-team", i == 1); resp.StatusCode != 200 {
			t.Fatalf("request %d: %d %s", i+1, resp.StatusCode, body)
		}
	}
	for _, e := range []*gatewaytest.Env{b, a} {
		resp, body := spendCall(t, e, "sk-team", false)
		if resp.StatusCode != 429 || !strings.Contains(body, "insufficient_quota") {
			t.Fatalf("over the shared spend: %d %s", resp.StatusCode, body)
		}
		if ra := resp.Header.Get("Retry-After"); ra != "3600" {
			t.Errorf("Retry-After %q: the day ends in an hour", ra)
		}
	}
	next := day.Add(2 * time.Hour)
	now.Store(&next)
	if resp, body := spendCall(t, b, "sk-team", false); resp.StatusCode != 200 || resp.Header.Get("X-Ratelimit-Remaining-Cost") != "0.006600" {
		t.Fatalf("a new day: %d %s %v", resp.StatusCode, body, resp.Header)
	}
}
