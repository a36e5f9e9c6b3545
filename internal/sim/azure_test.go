package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"

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
	// A Microsoft Entra ID token, as the SDK asks for it (its scope) and
	// sends it (the bearer).
	entra := openai.NewClient(azure.WithEndpoint(srv.URL, "2024-10-21"), azure.WithTokenCredential(secretCredential{srv.URL}), azure.WithUnsafeAllowHTTP(), option.WithMaxRetries(0))
	if c, err := entra.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "sim-text", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}}); err != nil || c.Choices[0].Message.Content == "" {
		t.Fatalf("an Entra ID token: %v", err)
	}
	resp, err := http.Post(srv.URL+"/openai/deployments/sim-text/chat/completions", "application/json", strings.NewReader(`{"messages":[{"role":"user","content":"hi"}]}`))
	if err != nil || resp.StatusCode != http.StatusNotFound {
		t.Errorf("no api-version: %v %v", err, resp)
	}
	resp.Body.Close()
}

// secretCredential is a service principal's secret as azidentity's
// ClientSecretCredential uses it: a client-credentials request to Entra
// ID's token endpoint (here the simulator's) for the scopes asked.
type secretCredential struct{ authority string }

func (c secretCredential) GetToken(ctx context.Context, o policy.TokenRequestOptions) (azcore.AccessToken, error) {
	form := url.Values{"client_id": {"app"}, "client_secret": {AzureSecret}, "grant_type": {"client_credentials"}, "scope": {strings.Join(o.Scopes, " ")}}
	req, _ := http.NewRequestWithContext(ctx, "POST", c.authority+"/tenant/oauth2/v2.0/token", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return azcore.AccessToken{}, err
	}
	defer resp.Body.Close()
	var t struct {
		AccessToken string `json:"access_token"`
		ExpiresIn   int    `json:"expires_in"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&t); err != nil || t.AccessToken == "" {
		return azcore.AccessToken{}, fmt.Errorf("no token: %v (%s)", err, resp.Status)
	}
	return azcore.AccessToken{Token: t.AccessToken, ExpiresOn: time.Now().Add(time.Duration(t.ExpiresIn) * time.Second)}, nil
}
