package gateway_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/testing/gatewaytest"
)

// The same upstream failure gets the same retry, failover and cooldown on
// every endpoint: chat, Responses and Messages requests and the rest of
// /v1. A route has a failing deployment (weight 1, tried first) and a
// healthy one (weight 0, tried when no other is healthy), one retry. For
// each failure the table says whether the failing deployment is tried
// again (retry), whether the healthy one then answers (failover), and
// whether a second request skips the failing one (cooldown).
func TestFailoverSameOnEveryEndpoint(t *testing.T) {
	endpoints := []struct{ name, path, body string }{
		{"chat", "/chat/completions", `{"model":"m","messages":[{"role":"user","content":"x"}]}`},
		{"responses", "/responses", `{"model":"m","input":"x","store":false}`},
		{"messages", "/messages", `{"model":"m","max_tokens":64,"messages":[{"role":"user","content":"x"}]}`},
		{"passthrough", "/embeddings", `{"model":"m","input":"x"}`},
	}
	type want struct{ retry, failover, cooldown bool }
	cases := []struct {
		name   string
		status int    // the failing deployment's status (0: see dead, slow)
		dead   bool   // nothing listening
		slow   bool   // no headers within header_timeout
		header string // its Retry-After
		want   want
	}{
		{name: "connect", dead: true, want: want{retry: true, failover: true, cooldown: true}},
		{name: "timeout", slow: true, want: want{failover: true}},
		{name: "429", status: 429, header: "1", want: want{retry: true, failover: true, cooldown: true}},
		{name: "500", status: 500, want: want{retry: true, failover: true, cooldown: true}},
		{name: "503", status: 503, want: want{retry: true, failover: true, cooldown: true}},
		{name: "401", status: 401, want: want{failover: true}},
		{name: "403", status: 403, want: want{failover: true}},
		{name: "400", status: 400},
		{name: "404", status: 404},
	}
	good := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/v1/embeddings" {
			io.WriteString(w, `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.1]}],"model":"m","usage":{"prompt_tokens":1,"total_tokens":1}}`)
			return
		}
		io.WriteString(w, `{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`)
	}))
	t.Cleanup(good.Close)
	clock := &waits{}
	for _, c := range cases {
		for _, ep := range endpoints {
			var calls atomic.Int64
			bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				calls.Add(1)
				if c.slow {
					select {
					case <-r.Context().Done():
					case <-time.After(time.Second):
					}
					return
				}
				if c.header != "" {
					w.Header().Set("Retry-After", c.header)
				}
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(c.status)
				io.WriteString(w, `{"error":{"message":"no","type":"server_error"}}`)
			}))
			badURL := bad.URL
			if c.dead {
				ln, _ := net.Listen("tcp", "127.0.0.1:0")
				badURL = "http://" + ln.Addr().String()
				ln.Close()
			}
			e := gatewaytest.Start(t, "", fmt.Sprintf(`
upstreams:
  - {name: bad, url: "%s/v1", header_timeout: 200ms}
  - {name: good, url: "%s/v1"}
routes:
  - {model: "*", retries: 1, retry_backoff: 1ms, cooldown: 1m, upstreams: [{name: bad, weight: 1}, {name: good, weight: 0}]}
`, badURL, good.URL), clock.options())
			resp, body := e.Do(t, "POST", ep.path, ep.body)
			got := want{retry: calls.Load() == 2, failover: resp.StatusCode == 200}
			if c.dead {
				a := e.WaitAccess(t, 1)[0]
				got.retry = a["attempt_outcomes"] == "connect,connect,ok" || a["attempt_outcomes"] == "connect,connect"
			}
			before := calls.Load()
			r2, _ := e.Do(t, "POST", ep.path, ep.body)
			got.cooldown = calls.Load() == before && !c.dead || c.dead && r2.StatusCode == 200 && got.failover && cooled(t, e)
			if got != c.want {
				t.Errorf("%s on %s: retry %v failover %v cooldown %v, want %+v (%d %s)", c.name, ep.name, got.retry, got.failover, got.cooldown, c.want, resp.StatusCode, body)
			}
			bad.CloseClientConnections()
			bad.Close()
			clock.take()
		}
	}
}

// cooled reports whether the second request's access line shows one
// attempt only: the failing deployment was skipped.
func cooled(t *testing.T, e *gatewaytest.Env) bool {
	a := e.WaitAccess(t, 2)[1]
	return a["attempt_outcomes"] == nil || a["attempt_outcomes"] == "ok"
}
