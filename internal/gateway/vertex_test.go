package gateway_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	aoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/toolgate/toolgate/internal/sim"
	"github.com/toolgate/toolgate/internal/testing/gatewaytest"
)

// vertexEnv runs the gateway in front of the simulator's Vertex mode,
// authenticated as a service account (GOOGLE_APPLICATION_CREDENTIALS)
// whose tokens the simulator issues, each for ttl: "claude-*" and
// "think-*" (thinking on) to Claude, "gemini-*" to Gemini, each on
// Vertex AI.
func vertexEnv(t *testing.T, ttl time.Duration) (*gatewaytest.Env, *sim.Sim) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	s := sim.New(sim.Options{GoogleKey: &key.PublicKey, TokenTTL: ttl})
	up := httptest.NewServer(s)
	t.Cleanup(up.Close)
	file := filepath.Join(t.TempDir(), "sa.json")
	if err := os.WriteFile(file, sim.ServiceAccountJSON(key, up.URL+"/token"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", file)
	e := gatewaytest.Start(t, up.URL, `
upstreams:
  - {name: vertex-claude, protocol: anthropic, url: "UPSTREAM_URL/v1/projects/p/locations/us-east5/publishers/anthropic", auth: google}
  - {name: vertex-gemini, protocol: gemini, url: "UPSTREAM_URL/v1/projects/p/locations/global/publishers/google", auth: google}
routes:
  - {name: think, model: "think-*", upstream: vertex-claude, reasoning: {format: thinking-budget, level: low}}
  - {model: "claude-*", upstream: vertex-claude}
  - {model: "gemini-*", upstream: vertex-gemini}
`)
	return e, s
}

// Claude and Gemini on Vertex AI through the gateway: the model in the
// path, Claude's version in its body, an OAuth token from the service
// account's credentials as the bearer; a chat client's three-step tool
// loop with thinking whose client drops the reasoning (the simulator
// checks the signatures), a Messages client and count_tokens, a Gemini
// tool call; tokens that expire at once are fetched again for each call,
// and no call fails for it.
func TestVertexAI(t *testing.T) {
	e, s := vertexEnv(t, 5*time.Second) // under the 10 s the token source renews ahead
	ctx := context.Background()
	history := gatewaytest.UserMsg("weather in Paris, then Rome?")
	for turn := 1; turn <= 3; turn++ {
		r := accumulate(t, e, openai.ChatCompletionNewParams{Model: "think-toolloop", Messages: history, Tools: weatherTool})
		if r.err != nil {
			t.Fatalf("turn %d: %v", turn, r.err)
		}
		if turn == 3 {
			if r.finish != "stop" {
				t.Fatalf("turn 3: finish %q", r.finish)
			}
			break
		}
		if r.finish != "tool_calls" || len(r.msg.ToolCalls) != 1 {
			t.Fatalf("turn %d: finish %q, %d calls", turn, r.finish, len(r.msg.ToolCalls))
		}
		history = append(history, r.msg.ToParam(), openai.ToolMessage("sunny", r.msg.ToolCalls[0].ID))
	}
	// (The simulator refuses a body with a model member or without
	// Vertex's anthropic_version, and a call without its token.)
	if !strings.HasPrefix(s.LastHeader().Get("Authorization"), "Bearer ya29.sim-") {
		t.Errorf("sent with %v", s.LastHeader())
	}
	ac := anthropic.NewClient(aoption.WithBaseURL("http://"+e.Addr+"/"), aoption.WithAPIKey("k"), aoption.WithMaxRetries(0))
	msg := anthropic.MessageNewParams{Model: "claude-text", MaxTokens: 64, Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}}
	if m, err := ac.Messages.New(ctx, msg); err != nil || len(m.Content) == 0 {
		t.Fatalf("a Messages client: %v", err)
	}
	if n, err := ac.Messages.CountTokens(ctx, anthropic.MessageCountTokensParams{Model: "claude-text", Messages: msg.Messages}); err != nil || n.InputTokens == 0 {
		t.Fatalf("count_tokens: %v", err)
	}
	g := accumulate(t, e, openai.ChatCompletionNewParams{Model: "gemini-tool", Messages: gatewaytest.UserMsg("weather?"), Tools: weatherTool})
	if g.err != nil || g.finish != "tool_calls" || len(g.msg.ToolCalls) != 1 {
		t.Fatalf("Gemini's tool call: %v %q", g.err, g.finish)
	}
	// Every call took a token of its own: each had expired (for the
	// token source) before the next.
	if n := s.TokensIssued(); n < 6 {
		t.Errorf("%d tokens issued for 6 calls", n)
	}
	vertexFailures(t, e)
}

// Through Vertex AI as through the providers' own APIs: a Responses
// client, parallel calls, a broken transcript repaired before the
// simulator (strict on pairing) sees it, a throttle answered 429 with its
// Retry-After, a stream cut mid-answer an error to the client.
func vertexFailures(t *testing.T, e *gatewaytest.Env) {
	ctx := context.Background()
	c := e.Client("k")
	if r, err := c.Responses.New(ctx, responses.ResponseNewParams{Model: "claude-text", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}}); err != nil || r.OutputText() == "" {
		t.Fatalf("a Responses client: %v", err)
	}
	for _, model := range []string{"claude-parallel", "gemini-parallel"} {
		p := accumulate(t, e, openai.ChatCompletionNewParams{Model: model, Messages: gatewaytest.UserMsg("weather?"), Tools: weatherTool})
		if p.err != nil || len(p.msg.ToolCalls) != 2 || p.msg.ToolCalls[0].ID == p.msg.ToolCalls[1].ID {
			t.Errorf("%s: %v %+v", model, p.err, p.msg.ToolCalls)
		}
	}
	broken := []openai.ChatCompletionMessageParamUnion{openai.UserMessage("go"), {OfAssistant: &openai.ChatCompletionAssistantMessageParam{
		ToolCalls: []openai.ChatCompletionMessageToolCallUnionParam{{OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{ID: "call_1", Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: "get_weather", Arguments: "{}"}}}}}},
		openai.UserMessage("and?")}
	for _, model := range []string{"claude-text", "gemini-text"} {
		if r, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: model, Messages: broken, Tools: weatherTool}); err != nil || len(r.Choices) != 1 {
			t.Errorf("%s, a broken transcript: %v", model, err)
		}
	}
	for _, model := range []string{"claude-error-429", "gemini-error-429"} {
		resp, body := e.Do(t, "POST", "/chat/completions", `{"model":"`+model+`","messages":[{"role":"user","content":"hi"}]}`, "Authorization", "Bearer k")
		if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
			t.Errorf("%s: %d %v %s", model, resp.StatusCode, resp.Header, body)
		}
	}
	for _, model := range []string{"claude-cut", "gemini-cut"} {
		if r := accumulate(t, e, openai.ChatCompletionNewParams{Model: model, Messages: gatewaytest.UserMsg("hi")}); r.err == nil {
			t.Errorf("%s: a cut stream ended cleanly", model)
		}
	}
}
