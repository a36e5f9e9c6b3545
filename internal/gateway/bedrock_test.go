package gateway_test

import (
	"context"
	"net/http"
	"net/http/httptest"
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

// bedrockEnv runs the gateway in front of the simulator's Converse mode,
// signed with SigV4 from the environment's credentials (the default
// chain): "think-*" with Claude's thinking on, "profile" to an inference
// profile whose id holds a colon, "key-*" with a Bedrock API key, the
// rest to the model named.
func bedrockEnv(t *testing.T) (*gatewaytest.Env, *sim.Sim) {
	awsEnv(t, map[string]string{"AWS_ACCESS_KEY_ID": sim.AWSAccessKey, "AWS_SECRET_ACCESS_KEY": sim.AWSSecretKey})
	s := sim.New(sim.Options{})
	up := httptest.NewServer(s)
	t.Cleanup(up.Close)
	e := gatewaytest.Start(t, up.URL, `
upstreams:
  - {name: bedrock, protocol: bedrock, url: "UPSTREAM_URL", auth: aws, region: us-east-1}
  - {name: bedrock-key, protocol: bedrock, url: "UPSTREAM_URL", api_key: `+sim.AWSBearerToken+`}
routes:
  - {name: think, model: "think-*", upstream: bedrock, reasoning: {format: thinking-budget, level: low}}
  - {name: profile, model: profile, upstream: bedrock, upstream_model: "us.anthropic.claude-tool-v1:0"}
  - {model: "key-*", upstream: bedrock-key}
  - {model: "*", upstream: bedrock}
`)
	return e, s
}

// Claude on Bedrock's Converse API through the gateway: a chat client's
// three-step tool loop with thinking whose client drops the reasoning
// (the simulator checks that each call turn starts with its signed
// reasoning block), an inference profile's id in the path, escaped as
// AWS's SDK escapes it and signed so, a Bedrock API key, a Messages
// client and a Responses client, parallel calls streamed and whole.
func TestBedrockConverse(t *testing.T) {
	e, s := bedrockEnv(t)
	ctx := context.Background()
	chatToolLoop(t, e, "think-toolloop", s.LastRequest)
	if a := s.LastHeader().Get("Authorization"); !strings.Contains(a, "/us-east-1/bedrock/aws4_request") {
		t.Errorf("signed as %q", a)
	}
	if !strings.Contains(string(s.LastRequest()), `"thinking":{"type":"enabled","budget_tokens":`) {
		t.Errorf("no thinking sent: %s", s.LastRequest())
	}
	for _, model := range []string{"profile", "key-tool"} {
		r := accumulate(t, e, openai.ChatCompletionNewParams{Model: model, Messages: gatewaytest.UserMsg("weather?"), Tools: weatherTool,
			StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}})
		if r.err != nil || r.finish != "tool_calls" || len(r.msg.ToolCalls) != 1 || r.usage == 0 {
			t.Fatalf("%s: %v %q %+v", model, r.err, r.finish, r.msg.ToolCalls)
		}
	}
	p := accumulate(t, e, openai.ChatCompletionNewParams{Model: "claude-parallel", Messages: gatewaytest.UserMsg("weather?"), Tools: weatherTool})
	if p.err != nil || len(p.msg.ToolCalls) != 2 || p.msg.ToolCalls[1].Function.Arguments != `{"city":"Rome"}` {
		t.Fatalf("parallel calls: %v %+v", p.err, p.msg.ToolCalls)
	}
	c := e.Client("k")
	w, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "claude-parallel", Messages: gatewaytest.UserMsg("weather?"), Tools: weatherTool})
	if err != nil || len(w.Choices[0].Message.ToolCalls) != 2 || w.Choices[0].FinishReason != "tool_calls" {
		t.Fatalf("a whole answer: %v", err)
	}
	ac := anthropic.NewClient(aoption.WithBaseURL("http://"+e.Addr+"/"), aoption.WithAPIKey("k"), aoption.WithMaxRetries(0))
	stream := ac.Messages.NewStreaming(ctx, anthropic.MessageNewParams{Model: "claude-tool", MaxTokens: 2048,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("weather?"))},
		Tools:    []anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{Name: "get_weather", InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{"city": map[string]any{"type": "string"}}}}}}})
	var m anthropic.Message
	for stream.Next() {
		if err := m.Accumulate(stream.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if stream.Err() != nil || m.StopReason != anthropic.StopReasonToolUse {
		t.Fatalf("a Messages client: %v %q", stream.Err(), m.StopReason)
	}
	bedrockMessagesThinking(t, ac, s.LastRequest)
	if r, err := c.Responses.New(ctx, responses.ResponseNewParams{Model: "claude-text", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}}); err != nil || !strings.HasPrefix(r.OutputText(), "Hello from Bedrock") {
		t.Fatalf("a Responses client: %v", err)
	}
	bedrockFailures(t, e)
}

// A Messages client (Claude Code's API) on a route with thinking gets
// Bedrock's reasoning as a thinking block with its signature, and its
// next turn, the blocks sent back as it got them, goes with its signed
// reasoning block, which the simulator checks.
func bedrockMessagesThinking(t *testing.T, ac anthropic.Client, sent func() []byte) {
	ctx := context.Background()
	tools := []anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{Name: "get_weather", InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{"city": map[string]any{"type": "string"}}}}}}
	msgs := []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("weather?"))}
	stream := ac.Messages.NewStreaming(ctx, anthropic.MessageNewParams{Model: "think-tool", MaxTokens: 4096, Messages: msgs, Tools: tools})
	var m anthropic.Message
	for stream.Next() {
		if err := m.Accumulate(stream.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if stream.Err() != nil || len(m.Content) != 2 || m.Content[0].Type != "thinking" || m.Content[0].Signature == "" {
		t.Fatalf("a Messages client's thinking: %v %+v", stream.Err(), m.Content)
	}
	msgs = append(msgs, m.ToParam(), anthropic.NewUserMessage(anthropic.NewToolResultBlock(m.Content[1].ID, "sunny", false)))
	next, err := ac.Messages.New(ctx, anthropic.MessageNewParams{Model: "think-tool", MaxTokens: 4096, Messages: msgs, Tools: tools})
	if err != nil || next.StopReason != anthropic.StopReasonEndTurn || !strings.Contains(string(sent()), `"reasoningContent":{"reasoningText":`) {
		t.Fatalf("the next turn, the thinking sent back: %v; sent %s", err, sent())
	}
}

// Bedrock's failures as the other upstreams' are: a broken transcript
// repaired before the simulator (strict on pairing) sees it, the sealed
// call a result with status error; Bedrock's exceptions mapped (429
// throttling, 400 validation with Bedrock's message, 403 access denied as
// the gateway's 502); an exception event in the stream, or a stream that
// ends before messageStop, an error to the client, never a clean finish.
func bedrockFailures(t *testing.T, e *gatewaytest.Env) {
	c := e.Client("k")
	broken := []openai.ChatCompletionMessageParamUnion{openai.UserMessage("go"), {OfAssistant: &openai.ChatCompletionAssistantMessageParam{
		ToolCalls: []openai.ChatCompletionMessageToolCallUnionParam{{OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{ID: "call_1", Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: "get_weather", Arguments: "{}"}}}}}},
		openai.UserMessage("and?"), openai.ToolMessage("orphan", "call_gone")}
	if r, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "claude-text", Messages: broken}); err != nil || len(r.Choices) != 1 {
		t.Fatalf("a broken transcript: %v", err)
	}
	for _, tc := range []struct {
		model, want string
		status      int
	}{
		{"claude-error-429", "", http.StatusTooManyRequests},
		{"claude-error-400", "The provided request is not valid.", http.StatusBadRequest},
		{"claude-error-403", "upstream_auth_failed", http.StatusBadGateway},
	} {
		resp, body := e.Do(t, "POST", "/chat/completions", `{"model":"`+tc.model+`","messages":[{"role":"user","content":"hi"}]}`, "Authorization", "Bearer k")
		if resp.StatusCode != tc.status || !strings.Contains(body, tc.want) {
			t.Errorf("%s: %d %s", tc.model, resp.StatusCode, body)
		}
	}
	for _, model := range []string{"claude-cut", "claude-exception"} {
		if r := accumulate(t, e, openai.ChatCompletionNewParams{Model: model, Messages: gatewaytest.UserMsg("hi")}); r.err == nil {
			t.Errorf("%s: the stream ended cleanly", model)
		}
	}
}

// Credentials from a container credentials endpoint (ECS task roles, EKS
// Pod Identity), which the AWS SDK's chain renews five minutes before
// they expire: issued for five minutes, they are fetched again for each
// call, and no call fails for it (the simulator refuses a session token
// it did not issue, or one that expired).
func TestBedrockCredentialsRenewed(t *testing.T) {
	s := sim.New(sim.Options{TokenTTL: 5 * time.Minute})
	up := httptest.NewServer(s)
	t.Cleanup(up.Close)
	awsEnv(t, map[string]string{"AWS_CONTAINER_CREDENTIALS_FULL_URI": up.URL + "/aws/credentials"})
	e := gatewaytest.Start(t, up.URL, `
upstreams:
  - {name: bedrock, protocol: bedrock, url: "UPSTREAM_URL", auth: aws, region: eu-west-1}
routes:
  - {model: "*", upstream: bedrock}
`)
	for i := range 3 {
		if r := accumulate(t, e, openai.ChatCompletionNewParams{Model: "claude-text", Messages: gatewaytest.UserMsg("hi")}); r.err != nil || r.finish != "stop" {
			t.Fatalf("call %d: %v", i, r.err)
		}
	}
	if !strings.HasPrefix(s.LastHeader().Get("X-Amz-Security-Token"), "sim-aws-session-") {
		t.Errorf("sent with %v", s.LastHeader())
	}
	if n := s.TokensIssued(); n < 3 {
		t.Errorf("%d credentials issued for 3 calls", n)
	}
}

// awsEnv gives the AWS SDK's default chain only the credentials set: no
// profile, no shared files, no instance metadata, no region.
func awsEnv(t *testing.T, set map[string]string) {
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_REGION",
		"AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_AUTHORIZATION_TOKEN"} {
		t.Setenv(k, set[k])
	}
	t.Setenv("AWS_CONFIG_FILE", "/nonexistent")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
}
