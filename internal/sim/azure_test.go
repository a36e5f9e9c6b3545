package sim

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/azure"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
)

// The Azure mode speaks Azure OpenAI's wire, as openai-go's azure package
// (the SDK's own Azure client) sends it: a deployment's chat completions,
// streamed and whole, with a tool call; the v1 API's chat and Responses;
// Azure's 401 for a wrong key and its 404 without an api-version.
func TestAzureModeSDK(t *testing.T) {
	srv := httptest.NewServer(New(Options{}))
	t.Cleanup(srv.Close)
	ctx := context.Background()
	deployments := openai.NewClient(azure.WithEndpoint(srv.URL, "2024-10-21"), azure.WithAPIKey(AzureKey), azure.WithUnsafeAllowHTTP(), option.WithMaxRetries(0))
	// The deployment decides the model: the body's is another.
	c, err := deployments.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "sim-tool", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("weather?")},
		Tools: []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{Name: "get_weather"})}})
	if err != nil || len(c.Choices) != 1 || len(c.Choices[0].Message.ToolCalls) != 1 {
		t.Fatalf("a deployment's tool call: %v %+v", err, c)
	}
	stream := deployments.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{Model: "sim-text", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
	var text strings.Builder
	for stream.Next() {
		if ch := stream.Current(); len(ch.Choices) > 0 {
			text.WriteString(ch.Choices[0].Delta.Content)
		}
	}
	if stream.Err() != nil || text.Len() == 0 {
		t.Fatalf("a deployment's stream: %v %q", stream.Err(), text.String())
	}
	v1 := openai.NewClient(option.WithBaseURL(srv.URL+"/openai/v1/"), option.WithHeader("api-key", AzureKey), option.WithMaxRetries(0))
	if c, err := v1.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "sim-text", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}}); err != nil || c.Choices[0].Message.Content == "" {
		t.Fatalf("the v1 API's chat: %v", err)
	}
	if r, err := v1.Responses.New(ctx, responses.ResponseNewParams{Model: "sim-text", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}}); err != nil || r.OutputText() == "" {
		t.Fatalf("the v1 API's Responses: %v", err)
	}
	wrong := openai.NewClient(azure.WithEndpoint(srv.URL, "2024-10-21"), azure.WithAPIKey("wrong"), azure.WithUnsafeAllowHTTP(), option.WithMaxRetries(0))
	_, err = wrong.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "sim-text", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
	var ae *openai.Error
	if !errors.As(err, &ae) || ae.StatusCode != http.StatusUnauthorized || !strings.Contains(ae.Message, "Access denied") {
		t.Errorf("a wrong key: %v", err)
	}
	resp, err := http.Post(srv.URL+"/openai/deployments/sim-text/chat/completions", "application/json", strings.NewReader(`{"messages":[{"role":"user","content":"hi"}]}`))
	if err != nil || resp.StatusCode != http.StatusNotFound {
		t.Errorf("no api-version: %v %v", err, resp)
	}
	resp.Body.Close()
}
