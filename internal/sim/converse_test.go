package sim

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/document"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
)

// The Converse mode speaks the Converse API as aws-sdk-go-v2's
// bedrockruntime client (AWS's own) sends and reads it, signed with
// SigV4: a tool call with Claude's signed reasoning, the next turn with
// the SDK's own output message sent back (its signature checked), the
// same turn without its reasoning refused in Bedrock's words, a streamed
// answer with parallel calls, and an exception event the SDK reports as
// its typed ThrottlingException.
func TestConverseModeSDK(t *testing.T) {
	srv := httptest.NewServer(New(Options{}))
	t.Cleanup(srv.Close)
	c := bedrockruntime.New(bedrockruntime.Options{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL), RetryMaxAttempts: 1,
		HTTPClient: &http.Client{Transport: bodyKept{http.DefaultTransport}},
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: AWSAccessKey, SecretAccessKey: AWSSecretKey}, nil
		})})
	ctx := context.Background()
	tools := &types.ToolConfiguration{Tools: []types.Tool{&types.ToolMemberToolSpec{Value: types.ToolSpecification{Name: aws.String("get_weather"),
		InputSchema: &types.ToolInputSchemaMemberJson{Value: document.NewLazyDocument(map[string]any{"type": "object"})}}}}}
	thinking := document.NewLazyDocument(map[string]any{"thinking": map[string]any{"type": "enabled", "budget_tokens": 1024}})
	user := types.Message{Role: types.ConversationRoleUser, Content: []types.ContentBlock{&types.ContentBlockMemberText{Value: "Weather in Paris?"}}}
	model := "us.anthropic.claude-tool-v1:0"
	out, err := c.Converse(ctx, &bedrockruntime.ConverseInput{ModelId: aws.String(model), Messages: []types.Message{user}, ToolConfig: tools, AdditionalModelRequestFields: thinking})
	if err != nil {
		t.Fatal(err)
	}
	msg := out.Output.(*types.ConverseOutputMemberMessage).Value
	if out.StopReason != types.StopReasonToolUse || len(msg.Content) != 2 {
		t.Fatalf("the answer: %s, %d blocks", out.StopReason, len(msg.Content))
	}
	if _, ok := msg.Content[0].(*types.ContentBlockMemberReasoningContent); !ok {
		t.Fatalf("the answer does not start with its reasoning: %T", msg.Content[0])
	}
	use := msg.Content[1].(*types.ContentBlockMemberToolUse).Value
	result := types.Message{Role: types.ConversationRoleUser, Content: []types.ContentBlock{&types.ContentBlockMemberToolResult{Value: types.ToolResultBlock{
		ToolUseId: use.ToolUseId, Content: []types.ToolResultContentBlock{&types.ToolResultContentBlockMemberText{Value: "sunny"}}}}}}
	next, err := c.Converse(ctx, &bedrockruntime.ConverseInput{ModelId: aws.String(model), Messages: []types.Message{user, msg, result}, ToolConfig: tools, AdditionalModelRequestFields: thinking})
	if err != nil || next.StopReason != types.StopReasonEndTurn {
		t.Fatalf("the turn after the call, its reasoning sent back: %v", err)
	}
	dropped := types.Message{Role: types.ConversationRoleAssistant, Content: msg.Content[1:]}
	_, err = c.Converse(ctx, &bedrockruntime.ConverseInput{ModelId: aws.String(model), Messages: []types.Message{user, dropped, result}, ToolConfig: tools, AdditionalModelRequestFields: thinking})
	var invalid *types.ValidationException
	if !errors.As(err, &invalid) || !strings.Contains(invalid.ErrorMessage(), "Expected `thinking` or `redacted_thinking`, but found `tool_use`") {
		t.Fatalf("the turn without its reasoning: %v", err)
	}

	stream, err := c.ConverseStream(ctx, &bedrockruntime.ConverseStreamInput{ModelId: aws.String("claude-parallel"), Messages: []types.Message{user}, ToolConfig: tools})
	if err != nil {
		t.Fatal(err)
	}
	calls, inputs, stop, usage := 0, map[int32]string{}, types.StopReason(""), false
	for ev := range stream.GetStream().Events() {
		switch e := ev.(type) {
		case *types.ConverseStreamOutputMemberContentBlockStart:
			calls++
		case *types.ConverseStreamOutputMemberContentBlockDelta:
			if d, ok := e.Value.Delta.(*types.ContentBlockDeltaMemberToolUse); ok {
				inputs[*e.Value.ContentBlockIndex] += *d.Value.Input
			}
		case *types.ConverseStreamOutputMemberMessageStop:
			stop = e.Value.StopReason
		case *types.ConverseStreamOutputMemberMetadata:
			usage = e.Value.Usage != nil && *e.Value.Usage.TotalTokens > 0
		}
	}
	if err := stream.GetStream().Err(); err != nil || calls != 2 || inputs[1] != `{"city":"Rome"}` || stop != types.StopReasonToolUse || !usage {
		t.Fatalf("the streamed calls: %v, %d calls, %q, %s, usage %v", err, calls, inputs, stop, usage)
	}

	stream, err = c.ConverseStream(ctx, &bedrockruntime.ConverseStreamInput{ModelId: aws.String("claude-exception"), Messages: []types.Message{user}})
	if err != nil {
		t.Fatal(err)
	}
	for range stream.GetStream().Events() {
	}
	var throttled *types.ThrottlingException
	if err := stream.GetStream().Err(); !errors.As(err, &throttled) {
		t.Fatalf("the exception event: %v", err)
	}

	forged := bedrockruntime.New(bedrockruntime.Options{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL), RetryMaxAttempts: 1,
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: AWSAccessKey, SecretAccessKey: AWSSecretKey, SessionToken: "forged"}, nil
		})})
	if _, err := forged.Converse(ctx, &bedrockruntime.ConverseInput{ModelId: aws.String("claude-text"), Messages: []types.Message{user}}); err == nil || !strings.Contains(err.Error(), "expired") {
		t.Errorf("a session token the simulator did not issue: %v", err)
	}
	resp, err := http.Post(srv.URL+"/model/claude-text/converse", "application/json", strings.NewReader(`{"messages":[{"role":"user","content":[{"text":"hi"}]}]}`))
	if err != nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("an unsigned request: %v %v", err, resp)
	}
	resp.Body.Close()
}

// bodyKept sends a copy of each request's body. The SDK closes the body
// it gave once the answer's headers arrive, while net/http may still be
// reading it to see that it ended; that read then fails, and net/http
// closes the connection a streamed answer is still being read from ("use
// of closed network connection" mid-stream, about one run in a hundred
// under the race detector; aws-sdk-go-v2 issue 2737).
type bodyKept struct{ next http.RoundTripper }

func (t bodyKept) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return t.next.RoundTrip(r)
	}
	b, err := io.ReadAll(r.Body)
	_ = r.Body.Close()
	if err != nil {
		return nil, err
	}
	c := r.Clone(r.Context())
	c.Body = io.NopCloser(bytes.NewReader(b))
	return t.next.RoundTrip(c)
}
