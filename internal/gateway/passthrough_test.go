package gateway_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"

	"github.com/toolgate/toolgate/internal/sim"
	"github.com/toolgate/toolgate/internal/testing/gatewaytest"
)

const passthroughConfig = `
keys:
  - {name: team, sha256: "KEYHASH", rate_limit: {tokens_per_minute: 30}}
  - {name: narrow, sha256: "NARROWHASH", models: ["text-*"]}
upstreams:
  - {name: sim, url: "UPSTREAM_URL/v1"}
  - {name: claude, protocol: anthropic, url: "UPSTREAM_URL/v1"}
routes:
  - {name: claude, model: "claude-*", upstream: claude}
  - {name: files, model: "files", upstream: sim, paths: ["/v1/files*"]}
  - {name: default, model: "*", upstream: sim, retries: 2, retry_backoff: 1ms}
`

func passthroughEnv(t *testing.T) (*gatewaytest.Env, *sim.Sim) {
	cfg := strings.NewReplacer("KEYHASH", gatewaytest.KeyHash("k"), "NARROWHASH", gatewaytest.KeyHash("narrow")).Replace(passthroughConfig)
	return gatewaytest.StartSim(t, sim.Options{}, cfg)
}

// Embeddings through openai-go with a client key: forwarded as they are,
// the upstream's credentials instead of the client's, the usage counted
// in the key's tokens per minute (three calls of 11 tokens pass the limit of 30,
// and the next is refused), the access line and metrics as for chat.
func TestPassthroughEmbeddings(t *testing.T) {
	e, s := passthroughEnv(t)
	c := e.Client("k")
	for i := range 3 {
		emb, err := c.Embeddings.New(context.Background(), openai.EmbeddingNewParams{Model: "text-embedding-3-small",
			Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: []string{"the quick brown fox", "jumps over the lazy dog"}}})
		if err != nil || len(emb.Data) != 2 || len(emb.Data[0].Embedding) != 8 || emb.Usage.TotalTokens != 11 {
			t.Fatalf("call %d: %v %+v", i+1, err, emb)
		}
	}
	if s.LastHeader().Get("Authorization") == "Bearer k" {
		t.Error("the client's key reached the upstream")
	}
	_, err := c.Embeddings.New(context.Background(), openai.EmbeddingNewParams{Model: "text-embedding-3-small",
		Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("again")}})
	if apiErr, ok := errors.AsType[*openai.Error](err); !ok || apiErr.StatusCode != 429 {
		t.Fatalf("over the token limit: %v", err)
	}
	if n := e.Metric(t, "toolgate_tokens_total", map[string]string{"key": "team", "direction": "input"}); n != 33 {
		t.Errorf("input tokens counted %v, want 33", n)
	}
	line := gatewaytest.WithField(e.WaitAccess(t, 4), "path", "/v1/embeddings")
	if line == nil || line["route"] != "default" || line["key"] != "team" {
		t.Errorf("access line %v", line)
	}
}

// The rest of /v1 as it is: completions streamed byte for byte,
// moderations, a path a route serves without a model (GET /v1/files);
// a key's model list holds; an upstream 5xx is retried before the first
// byte, then passed on as it came; a path no route forwards is a 404; an
// anthropic route forwards nothing.
func TestPassthroughPaths(t *testing.T) {
	e, s := passthroughEnv(t)
	do := func(key, method, path, body string) (int, string) {
		resp, b := e.Do(t, method, path, body, "Authorization", "Bearer "+key)
		return resp.StatusCode, b
	}
	status, body := do("k", "POST", "/v1/completions", `{"model":"gpt-3.5-turbo-instruct","prompt":"hi","stream":true}`)
	if status != 200 || !strings.HasPrefix(body, "data: {") || !strings.HasSuffix(body, "data: [DONE]\n\n") || strings.Count(body, `"text":`) != 4 {
		t.Fatalf("completions: %d %s", status, body)
	}
	if status, body = do("k", "POST", "/v1/moderations", `{"model":"omni-moderation-latest","input":"hi"}`); status != 200 || !strings.Contains(body, `"flagged":false`) {
		t.Errorf("moderations: %d %s", status, body)
	}
	if status, body = do("k", "GET", "/v1/files", ""); status != 200 || body != `{"data":[],"object":"list"}` {
		t.Errorf("files: %d %s", status, body)
	}
	if status, body = do("narrow", "POST", "/v1/embeddings", `{"model":"other-embedding","input":"x"}`); status != 403 {
		t.Errorf("a model outside the key's list: %d %s", status, body)
	}
	before := s.Requests()
	if status, body = do("k", "POST", "/v1/embeddings", `{"model":"sim-error-503","input":"x"}`); status != 503 || !strings.Contains(body, "The simulator was asked to fail") || s.Requests()-before != 3 {
		t.Errorf("an upstream 503: %d %s after %d attempts", status, body, s.Requests()-before)
	}
	if status, body = do("k", "POST", "/v1/audio/speech", `{"model":"tts-1","input":"x"}`); status != 404 || !strings.Contains(body, "routes[].passthrough") {
		t.Errorf("a path no route forwards: %d %s", status, body)
	}
	if status, body = do("k", "POST", "/v1/embeddings", `{"model":"claude-embed","input":"x"}`); status != 404 || !strings.Contains(body, "does not serve") {
		t.Errorf("an anthropic route: %d %s", status, body)
	}
	if status, _ = do("k", "GET", "/v1/chat/completions", ""); status != 405 {
		t.Errorf("a wrong method on the gateway's own path: %d", status)
	}
}

// A forwarded request's retries honour the upstream's Retry-After as
// chat's do: within retry_max_wait it waits and retries, beyond it the
// 429 is passed on at once.
func TestPassthroughRetryAfter(t *testing.T) {
	for _, tc := range []struct {
		retryAfter string
		calls      int64
		status     int
	}{{"1", 2, 200}, {"30", 1, 429}} {
		up, calls := flaky(t, 1, 429, tc.retryAfter)
		var w waits
		e := gatewaytest.Start(t, up.URL, `
upstreams: [{name: up, url: "UPSTREAM_URL"}]
routes: [{model: "*", upstream: up, retries: 1, retry_max_wait: 5s}]
`, w.options())
		resp, body := e.Do(t, "POST", "/embeddings", `{"model":"text-embedding-3-small","input":"x"}`)
		if resp.StatusCode != tc.status || calls.Load() != tc.calls {
			t.Errorf("Retry-After %s: %d after %d upstream calls (want %d after %d): %s", tc.retryAfter, resp.StatusCode, calls.Load(), tc.status, tc.calls, body)
		}
	}
}
