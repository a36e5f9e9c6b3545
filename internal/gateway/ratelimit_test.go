package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"

	"github.com/toolgate/toolgate/internal/sim"
	"github.com/toolgate/toolgate/internal/testing/gatewaytest"
)

// usageUpstream answers every chat request with a short completion whose
// usage totals 10 tokens (7 in, 3 out), and its own x-ratelimit header. A
// stream carries usage only when asked for it, as OpenAI's does.
func usageUpstream(t *testing.T) (*httptest.Server, *atomic.Int64) {
	return usageUpstreamWith(t, `{"prompt_tokens":7,"completion_tokens":3,"total_tokens":10}`)
}

// usageUpstreamWith is usageUpstream reporting usage (a JSON object).
func usageUpstreamWith(t *testing.T, usage string) (*httptest.Server, *atomic.Int64) {
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		var req struct {
			Stream        bool `json:"stream"`
			StreamOptions *struct {
				IncludeUsage bool `json:"include_usage"`
			} `json:"stream_options"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		w.Header().Set("X-Ratelimit-Limit-Requests", "10000")
		if !req.Stream {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":%s}`, usage)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"ok"},"finish_reason":null}]}`+"\n\n")
		fmt.Fprint(w, `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`+"\n\n")
		if req.StreamOptions != nil && req.StreamOptions.IncludeUsage {
			fmt.Fprintf(w, `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":%s}`+"\n\n", usage)
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	return srv, &calls
}

// A key's requests per minute: exactly the limit passes, with OpenAI's
// x-ratelimit-* headers counting down (and winning over the upstream's);
// one more is a 429 in OpenAI's shape with Retry-After, and nothing is
// sent. Another key is not affected.
func TestRateLimitRequests(t *testing.T) {
	up, calls := usageUpstream(t)
	e := gatewaytest.Start(t, up.URL, `
keys:
  - {name: team-a, sha256: `+gatewaytest.KeyHash("sk-a")+`, rate_limit: {requests_per_minute: 3}}
  - {name: team-b, sha256: `+gatewaytest.KeyHash("sk-b")+`}
upstreams: [{name: up, url: "UPSTREAM_URL/v1"}]
routes: [{model: "*", upstream: up}]
`)
	post := func(key string) *http.Response {
		resp := e.Post(t, `{"model":"m","messages":[{"role":"user","content":"x"}]}`, "Authorization", "Bearer "+key)
		return resp
	}
	for i := range 3 {
		resp := post("sk-a")
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		h := resp.Header
		if resp.StatusCode != 200 || h.Get("X-Ratelimit-Limit-Requests") != "3" || h.Get("X-Ratelimit-Remaining-Requests") != fmt.Sprint(2-i) {
			t.Fatalf("request %d: %d, headers %v", i+1, resp.StatusCode, h)
		}
		if d, err := time.ParseDuration(h.Get("X-Ratelimit-Reset-Requests")); err != nil || d <= 0 || d > time.Minute {
			t.Errorf("x-ratelimit-reset-requests %q", h.Get("X-Ratelimit-Reset-Requests"))
		}
	}
	before := calls.Load()
	resp := post("sk-a")
	body, raw := gatewaytest.ReadError(t, resp)
	if resp.StatusCode != 429 || body.Error.Type != "requests" || body.Error.Code == nil || *body.Error.Code != "rate_limit_exceeded" ||
		!strings.Contains(body.Error.Message, "Limit 3, Used 3") || resp.Header.Get("Retry-After") == "" ||
		resp.Header.Get("X-Ratelimit-Remaining-Requests") != "0" || calls.Load() != before {
		t.Fatalf("fourth request: %d %s, headers %v", resp.StatusCode, raw, resp.Header)
	}
	resp = post("sk-b")
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("X-Ratelimit-Limit-Requests") != "" {
		t.Errorf("a key without limits: %d, the upstream account's header %q passed on", resp.StatusCode, resp.Header.Get("X-Ratelimit-Limit-Requests"))
	}
	e.WaitAccess(t, 5)
	if n := e.Metric(t, "toolgate_budget_rejections_total", map[string]string{"key": "team-a", "reason": "requests_per_minute", "route": "*"}); n != 1 {
		t.Errorf("rejections{team-a, requests_per_minute} = %v", n)
	}
	if gatewaytest.WithField(e.Access(), "limited", "requests_per_minute") == nil {
		t.Error("no access line says limited=requests_per_minute")
	}
}

// A key's tokens per minute count the usage the upstream reports, streamed
// (the gateway asks for it) or not. A request is admitted while the
// minute's count is below the limit: with 10 tokens a request, a limit of
// 30 admits three requests (the count then reaches the limit exactly) and
// refuses the fourth; a limit of 31 admits the fourth and refuses the fifth.
func TestRateLimitTokens(t *testing.T) {
	up, _ := usageUpstream(t)
	e := gatewaytest.Start(t, up.URL, `
keys:
  - {name: exact, sha256: `+gatewaytest.KeyHash("sk-30")+`, rate_limit: {tokens_per_minute: 30}}
  - {name: over, sha256: `+gatewaytest.KeyHash("sk-31")+`, rate_limit: {tokens_per_minute: 31}}
upstreams: [{name: up, url: "UPSTREAM_URL/v1"}]
routes: [{model: "*", upstream: up}]
`)
	post := func(key string, stream bool) *http.Response {
		resp := e.Post(t, fmt.Sprintf(`{"model":"m","stream":%v,"messages":[{"role":"user","content":"x"}]}`, stream), "Authorization", "Bearer "+key)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if stream && strings.Contains(string(b), `"usage"`) {
			t.Errorf("usage the client did not ask for reached it: %s", b)
		}
		return resp
	}
	n := 0
	for _, tc := range []struct {
		key, remaining string
		admitted       int
	}{{"sk-30", "30", 3}, {"sk-31", "31", 4}} {
		for i := range tc.admitted {
			// Tokens are added once the response ends; wait for the access line.
			resp := post(tc.key, i%2 == 1)
			n++
			e.WaitAccess(t, n)
			if resp.StatusCode != 200 || resp.Header.Get("X-Ratelimit-Limit-Tokens") == "" {
				t.Fatalf("%s request %d: %d", tc.key, i+1, resp.StatusCode)
			}
		}
		resp := post(tc.key, false)
		n++
		if resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" || resp.Header.Get("X-Ratelimit-Remaining-Tokens") != "0" {
			t.Errorf("%s request %d: %d, headers %v", tc.key, tc.admitted+1, resp.StatusCode, resp.Header)
		}
	}
	e.WaitAccess(t, n)
	if got := e.Metric(t, "toolgate_tokens_total", map[string]string{"key": "exact", "direction": "input"}); got != 21 {
		t.Errorf("input tokens of key exact = %v, want 21", got)
	}
	if got := e.Metric(t, "toolgate_tokens_total", map[string]string{"key": "over", "direction": "output"}); got != 12 {
		t.Errorf("output tokens of key over = %v, want 12", got)
	}
	if got := e.Metric(t, "toolgate_budget_rejections_total", map[string]string{"reason": "tokens_per_minute"}); got != 2 {
		t.Errorf("tokens_per_minute rejections = %v, want 2", got)
	}
	if gatewaytest.WithField(e.Access(), "tokens_in", int64(7)) == nil {
		t.Error("no access line has tokens_in")
	}
}

// Usage in streams: the gateway asks every stream for usage; a client that
// did not ask gets no usage chunk; one that asked gets exactly one, last,
// with the upstream's largest counts (an upstream sending cumulative usage
// on every chunk, docs/quirks.md A25, is not summed by openai-go's accumulator).
// An upstream that refuses stream_options gets none.
func TestStreamUsage(t *testing.T) {
	e, s := gatewaytest.StartSim(t, sim.Options{}, `
upstreams:
  - {name: sim, url: "UPSTREAM_URL/v1"}
  - {name: plain, url: "UPSTREAM_URL/v1", no_stream_options: true}
routes:
  - {model: plain, upstream: plain, upstream_model: sim-text}
  - {model: "*", upstream: sim}
`)
	read := func(body string) string {
		resp := e.Post(t, body)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return string(b)
	}
	got := read(`{"model":"sim-text","stream":true,"messages":[{"role":"user","content":"x"}]}`)
	if !strings.Contains(string(s.LastRequest()), `"stream_options":{"include_usage":true}`) || strings.Contains(got, `"usage":{`) || !strings.HasSuffix(got, "[DONE]\n\n") {
		t.Errorf("client without include_usage: upstream got %s\nclient got %s", s.LastRequest(), got)
	}
	e.WaitAccess(t, 1)
	if in, out := e.Metric(t, "toolgate_tokens_total", map[string]string{"direction": "input", "key": "none"}),
		e.Metric(t, "toolgate_tokens_total", map[string]string{"direction": "output"}); in != 20 || out != 20 {
		t.Errorf("tokens counted in=%v out=%v, want 20 and 20", in, out)
	}

	for model, want := range map[string]int64{"sim-text": 40, "sim-q-cumulativeusage": 13} {
		stream := e.Client("k").Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
			Model: model, Messages: gatewaytest.UserMsg("x"), StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
			Tools: []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "get_weather"})},
		})
		acc := openai.ChatCompletionAccumulator{}
		usageChunks := 0
		for stream.Next() {
			c := stream.Current()
			acc.AddChunk(c)
			if c.Usage.TotalTokens > 0 {
				usageChunks++
				if len(c.Choices) != 0 {
					t.Errorf("%s: usage on a chunk with choices", model)
				}
			}
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		if usageChunks != 1 || acc.Usage.TotalTokens != want {
			t.Errorf("%s: %d usage chunks, accumulated total %d, want 1 and %d", model, usageChunks, acc.Usage.TotalTokens, want)
		}
	}
	if sent := string(s.LastRequest()); !strings.Contains(sent, `"include_usage":true`) {
		t.Errorf("the client's stream_options were not passed on: %s", sent)
	}

	read(`{"model":"plain","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"x"}]}`)
	if sent := string(s.LastRequest()); strings.Contains(sent, "stream_options") {
		t.Errorf("stream_options sent to an upstream that refuses them: %s", sent)
	}
}

// toolgate_key_requests_in_flight counts a key's requests while they run.
func TestKeyInFlight(t *testing.T) {
	up := gatewaytest.StartHeld(t)
	e := gatewaytest.Start(t, up.URL, `
keys: [{name: team-a, sha256: `+gatewaytest.KeyHash("sk-a")+`}]
upstreams: [{name: sim, url: "UPSTREAM_URL/v1"}]
routes: [{model: "*", upstream: sim}]
`)
	resp := e.Post(t, `{"model":"m","stream":true,"messages":[{"role":"user","content":"x"}]}`, "Authorization", "Bearer sk-a")
	line := make([]byte, 1)
	_, _ = resp.Body.Read(line) // the stream has started, and is held
	if n := e.Metric(t, "toolgate_key_requests_in_flight", map[string]string{"key": "team-a"}); n != 1 {
		t.Errorf("in flight during the stream: %v", n)
	}
	up.Release()
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	e.WaitAccess(t, 1)
	if n := e.Metric(t, "toolgate_key_requests_in_flight", map[string]string{"key": "team-a"}); n != 0 {
		t.Errorf("in flight after the stream: %v", n)
	}
}

// Events are never held while the upstream is quiet: a chunk reaches the
// client before the upstream sends the next one. The upstream sends its
// first text chunk, then waits for the client to have it before it sends
// the rest: a gateway that held the chunk would deadlock, and the upstream
// would give up waiting (which the test reports).
func TestStreamNotHeld(t *testing.T) {
	released, gaveUp := make(chan struct{}), make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, `data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":"first"},"finish_reason":null}]}`+"\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-released:
		case <-time.After(10 * time.Second): // a safety net, not a measurement
			close(gaveUp)
		}
		io.WriteString(w, `data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":" second"},"finish_reason":null}]}`+"\n\n"+
			`data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`+"\n\ndata: [DONE]\n\n")
	}))
	defer up.Close()
	e := gatewaytest.Start(t, up.URL, gatewaytest.SimConfig)
	resp := e.Post(t, `{"model":"m","stream":true,"messages":[{"role":"user","content":"x"}]}`)
	defer resp.Body.Close()
	buf := make([]byte, 4096)
	got := ""
	for !strings.Contains(got, `"content":"first"`) {
		n, err := resp.Body.Read(buf)
		if err != nil {
			t.Fatal(err)
		}
		got += string(buf[:n])
	}
	close(released)
	select {
	case <-gaveUp:
		t.Fatal("the first chunk reached the client only after the upstream stopped waiting for it: the gateway held it")
	default:
	}
	if strings.Contains(got, "second") || strings.Contains(got, "[DONE]") {
		t.Errorf("the first chunk came with later ones: %q", got)
	}
	rest, _ := io.ReadAll(resp.Body)
	if !strings.HasSuffix(string(rest), "data: [DONE]\n\n") {
		t.Errorf("the stream did not end: %q", rest)
	}
}
