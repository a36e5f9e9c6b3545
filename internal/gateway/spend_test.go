package gateway_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/gateway"
	"github.com/toolgate/toolgate/internal/testing/gatewaytest"
	"github.com/toolgate/toolgate/internal/testing/testredis"
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
	return e.Do(t, "POST", "/chat/completions", fmt.Sprintf(`{"model":"gpt-4o","stream":%v,"max_tokens":100,"messages":[{"role":"user","content":"x"}]}`, stream), "Authorization", "Bearer "+key)
}

// dollarsHeader reads an x-ratelimit-*-cost header.
func dollarsHeader(t *testing.T, h http.Header, name string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(h.Get(name), 64)
	if err != nil {
		t.Fatalf("%s: %q", name, h.Get(name))
	}
	return v
}

// A key's spend: each response is priced from its usage (cached prompt
// tokens at the cached price), counted in toolgate_cost_usd_total and the
// access line. A request is admitted only when its worst case (every byte
// sent as an input token, its max_tokens of 100 as output: under $0.0011)
// fits in what is left, reserved at admission and settled to the real
// cost: three responses of $0.0022 reach $0.0066, and a fourth is
// admitted only with room for its worst case. x-ratelimit-remaining-cost
// is what is left once the request's reservation is counted. Streamed and
// whole responses count alike; another key is not limited.
func TestSpendLimit(t *testing.T) {
	up, calls := spendUpstream(t)
	for _, tc := range []struct {
		limit    string
		admitted int
	}{{"0.0066", 3}, {"0.0077", 4}} {
		t.Run(tc.limit, func(t *testing.T) {
			e := gatewaytest.Start(t, up.URL, spendConfig("", tc.limit))
			limit, _ := strconv.ParseFloat(tc.limit, 64)
			for i := range tc.admitted {
				resp, body := spendCall(t, e, "sk-team", i%2 == 1)
				if resp.StatusCode != 200 {
					t.Fatalf("request %d: %d %s", i+1, resp.StatusCode, body)
				}
				left := limit - 0.0022*float64(i) // settled before this one
				if r := dollarsHeader(t, resp.Header, "X-Ratelimit-Remaining-Cost"); r > left-0.0008 || r < left-0.0011 {
					t.Errorf("request %d: x-ratelimit-remaining-cost %v, want %v less its reservation", i+1, r, left)
				}
			}
			before := calls.Load()
			resp, body := spendCall(t, e, "sk-team", false)
			if resp.StatusCode != 429 || !strings.Contains(body, `"type":"insufficient_quota"`) || !strings.Contains(body, `"code":"insufficient_quota"`) ||
				resp.Header.Get("Retry-After") == "" || calls.Load() != before {
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

// 50 requests at once against a $0.10 cap, each of 16 KB costing $0.04
// (16,000 prompt tokens and 1,000 completion tokens, at $2 and $8 per
// million) and at worst about $0.0404 (every byte an input token, its
// output limit of 1,024 tokens, the key's medium budget): the
// reservations let at most two in, so the key spends at most its cap
// (checking without reserving let all 50 in, $2.00), in memory and in
// Redis; once they settled, the unused part of each reservation is back
// (the counter holds what the responses cost).
func TestSpendReserved(t *testing.T) {
	up, _ := usageUpstreamWith(t, `{"prompt_tokens":16000,"completion_tokens":1000,"total_tokens":17000}`)
	big := `{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"` + strings.Repeat("x", 16000) + `"}]}`
	for _, state := range []string{"memory", "redis"} {
		t.Run(state, func(t *testing.T) {
			cfg := ""
			if state == "redis" {
				cfg = `state: {store: redis, redis_url: "` + testredis.Start(t).URL() + `", timeout: 10s}`
			}
			e := gatewaytest.Start(t, up.URL, spendConfig(cfg, "0.10"))
			var admitted, refused atomic.Int64
			var wg sync.WaitGroup
			for range 50 {
				wg.Go(func() {
					resp, body := e.Do(t, "POST", "/chat/completions", big, "Authorization", "Bearer sk-team")
					switch {
					case resp.StatusCode == 200:
						admitted.Add(1)
					case resp.StatusCode == 429 && strings.Contains(body, "insufficient_quota"):
						refused.Add(1)
					default:
						t.Errorf("%d %s", resp.StatusCode, body)
					}
				})
			}
			wg.Wait()
			spent := e.Metric(t, "toolgate_cost_usd_total", map[string]string{"key": "team"})
			worst := 0.0405
			if spent > 0.10+1e-9 || admitted.Load() < 1 || admitted.Load()+refused.Load() != 50 {
				t.Errorf("spent $%.4f (cap $0.10, a request's worst case $%.4f): %d admitted, %d refused", spent, worst, admitted.Load(), refused.Load())
			}
			// Settled: what is left is the cap less the real costs, less
			// this small request's own reservation.
			resp, body := e.Do(t, "POST", "/chat/completions", `{"model":"gpt-4o","max_tokens":100,"messages":[{"role":"user","content":"x"}]}`, "Authorization", "Bearer sk-team")
			if resp.StatusCode != 200 {
				t.Fatalf("a small request after the rush: %d %s", resp.StatusCode, body)
			}
			left := 0.10 - spent
			if r := dollarsHeader(t, resp.Header, "X-Ratelimit-Remaining-Cost"); r > left-0.0008 || r < left-0.0011 {
				t.Errorf("x-ratelimit-remaining-cost %v after settling, want $%.4f less the request's reservation", r, left)
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
	cfg := spendConfig(`state: {store: redis, redis_url: "`+srv.URL()+`", timeout: 10s}`, "0.0066")
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
	resp, body := spendCall(t, b, "sk-team", false)
	if r := dollarsHeader(t, resp.Header, "X-Ratelimit-Remaining-Cost"); resp.StatusCode != 200 || r > 0.0066-0.0008 || r < 0.0066-0.0011 {
		t.Fatalf("a new day: %d %s %v", resp.StatusCode, body, resp.Header)
	}
}

// longUpstream answers a whole request in each upstream protocol (chat
// completions, legacy completions, Messages, Responses, Gemini) with 100
// prompt tokens and as many output tokens as the request's own output
// limit allows, 20,000 when it states none: what a model asked for a long
// answer writes.
func longUpstream(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			MaxTokens           int64 `json:"max_tokens"`
			MaxCompletionTokens int64 `json:"max_completion_tokens"`
			MaxOutputTokens     int64 `json:"max_output_tokens"`
			GenerationConfig    struct {
				MaxOutputTokens int64 `json:"maxOutputTokens"`
			} `json:"generationConfig"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		out := int64(20000)
		for _, n := range []int64{req.MaxTokens, req.MaxCompletionTokens, req.MaxOutputTokens, req.GenerationConfig.MaxOutputTokens} {
			if n > 0 && n < out {
				out = n
			}
		}
		w.Header().Set("Content-Type", "application/json")
		switch p := r.URL.Path; {
		case strings.HasSuffix(p, "/chat/completions"):
			fmt.Fprintf(w, `{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":100,"completion_tokens":%d,"total_tokens":%d}}`, out, out+100)
		case strings.HasSuffix(p, "/completions"):
			fmt.Fprintf(w, `{"id":"c1","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":"ok","finish_reason":"stop"}],"usage":{"prompt_tokens":100,"completion_tokens":%d,"total_tokens":%d}}`, out, out+100)
		case strings.HasSuffix(p, "/messages"):
			fmt.Fprintf(w, `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":100,"output_tokens":%d}}`, out)
		case strings.HasSuffix(p, "/responses"):
			fmt.Fprintf(w, `{"id":"resp_1","object":"response","created_at":1,"status":"completed","model":"m","output":[{"type":"message","id":"msg_1","role":"assistant","status":"completed","content":[{"type":"output_text","text":"ok","annotations":[]}]}],"usage":{"input_tokens":100,"output_tokens":%d,"total_tokens":%d}}`, out, out+100)
		case strings.HasSuffix(p, ":generateContent"):
			fmt.Fprintf(w, `{"candidates":[{"content":{"role":"model","parts":[{"text":"ok"}]},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":100,"candidatesTokenCount":%d,"totalTokenCount":%d}}`, out, out+100)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// Spend is bounded by the cap plus one request on every endpoint a
// priced key reaches: 50 requests at once on a $0.10 cap, each asking
// for a long answer (20,000 output tokens, $0.16 at $8 per million, when
// nothing bounds it). Chat and Responses requests that state no output
// limit go with the one their reservation counts (4,096 tokens), so at
// most three of about $0.033 are let in (before, each reserved that and
// sent no limit: three spent $0.48); a Messages request states its own.
// A passthrough completion is reserved for its max_tokens, and one that
// states none (or not as an integer) is refused 400 naming max_tokens,
// nothing sent; an embedding writes no output and needs none.
func TestSpendBoundedEveryEndpoint(t *testing.T) {
	up := longUpstream(t)
	cfg := `
pricing: {"m-*": {input: 2, output: 8}}
keys: [{name: team, sha256: ` + gatewaytest.KeyHash("sk-team") + `, budget: {max_cost_usd: 0.10, max_output_tokens: unlimited}}]
upstreams:
  - {name: openai, url: "UPSTREAM_URL/v1"}
  - {name: anthropic, protocol: anthropic, url: "UPSTREAM_URL/v1"}
  - {name: gemini, protocol: gemini, url: "UPSTREAM_URL/v1beta"}
  - {name: responses, protocol: responses, url: "UPSTREAM_URL/v1"}
routes:
  - {model: "m-openai", upstream: openai, budget: {max_output_tokens: unlimited}}
  - {model: "m-anthropic", upstream: anthropic, budget: {max_output_tokens: unlimited}}
  - {model: "m-gemini", upstream: gemini, budget: {max_output_tokens: unlimited}}
  - {model: "m-responses", upstream: responses, budget: {max_output_tokens: unlimited}}
`
	const cap, worst = 0.10, 0.0335 // a request's worst case: 4,096 output tokens and its body
	for _, tc := range []struct {
		name, path, body string
		refused          bool // 400, nothing sent
	}{
		{"chat", "/chat/completions", `{"model":"MODEL","messages":[{"role":"user","content":"write at length"}]}`, false},
		{"responses", "/responses", `{"model":"MODEL","input":"write at length"}`, false},
		{"messages", "/messages", `{"model":"MODEL","max_tokens":4096,"messages":[{"role":"user","content":"write at length"}]}`, false},
	} {
		for _, upstream := range []string{"openai", "anthropic", "gemini", "responses"} {
			t.Run(tc.name+"/"+upstream, func(t *testing.T) {
				spendRush(t, gatewaytest.Start(t, up.URL, cfg), tc.path, strings.ReplaceAll(tc.body, "MODEL", "m-"+upstream), cap+worst, false)
			})
		}
	}
	for _, tc := range []struct {
		name, path, body string
		refused          bool
	}{
		{"completions", "/completions", `{"model":"m-openai","max_tokens":4096,"prompt":"write at length"}`, false},
		{"completions without max_tokens", "/completions", `{"model":"m-openai","prompt":"write at length"}`, true},
		{"completions with max_tokens 4e3", "/completions", `{"model":"m-openai","max_tokens":4e3,"prompt":"write at length"}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spendRush(t, gatewaytest.Start(t, up.URL, cfg), tc.path, tc.body, cap+worst, tc.refused)
		})
	}
}

// spendRush sends 50 requests at once with the priced key and checks
// what they spent: at most most, and nothing when each is to be refused
// 400 naming max_tokens.
func spendRush(t *testing.T, e *gatewaytest.Env, path, body string, most float64, refused bool) {
	t.Helper()
	var admitted, over atomic.Int64
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			resp, b := e.Do(t, "POST", path, body, "Authorization", "Bearer sk-team", "x-api-key", "sk-team", "anthropic-version", "2023-06-01")
			switch {
			case refused && resp.StatusCode == 400 && strings.Contains(b, `"param":"max_tokens"`) && strings.Contains(b, "max_cost_usd"):
			case !refused && resp.StatusCode == 200:
				admitted.Add(1)
			case !refused && resp.StatusCode == 429:
				over.Add(1)
			default:
				t.Errorf("%d %s", resp.StatusCode, b)
			}
		})
	}
	wg.Wait()
	spent := e.Metric(t, "toolgate_cost_usd_total", map[string]string{"key": "team"})
	t.Logf("%d admitted, %d over the cap: spent $%.4f", admitted.Load(), over.Load(), spent)
	if spent > most+1e-9 || (!refused && admitted.Load() < 1) || (refused && spent != 0) {
		t.Errorf("spent $%.4f on a $0.10 cap (at most $%.4f): %d admitted, %d over the cap", spent, most, admitted.Load(), over.Load())
	}
}
