package gateway_test

import (
	"context"
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

// azureConfig routes "az-*" to a deployment URL of the simulator's Azure
// mode (the deployment is the model each request is sent for), "azv1-*"
// to its v1 API through chat completions and "azr-*" through the
// Responses API, and "nover-*" to a deployment URL without an
// api-version.
const azureConfig = `
upstreams:
  - {name: azure, url: "UPSTREAM_URL/openai/deployments/{model}", api_version: "2024-10-21", api_key: "` + sim.AzureKey + `", auth_header: api-key}
  - {name: azure-v1, url: "UPSTREAM_URL/openai/v1", api_key: "` + sim.AzureKey + `", auth_header: api-key}
  - {name: azure-responses, protocol: responses, url: "UPSTREAM_URL/openai/v1", api_key: "` + sim.AzureKey + `", auth_header: api-key}
  - {name: azure-nover, url: "UPSTREAM_URL/openai/deployments/{model}", api_key: "` + sim.AzureKey + `", auth_header: api-key}
routes:
  - {model: "az-*", upstream: azure}
  - {model: "gpt-4o", upstream: azure, upstream_model: "sim-text-strict", passthrough: true}
  - {model: "azv1-*", upstream: azure-v1}
  - {model: "azr-*", upstream: azure-responses}
  - {model: "nover-*", upstream: azure-nover}
  - {model: "dots", upstream: azure, upstream_model: ".."}
`

// Azure OpenAI's deployment URLs and its v1 API, through the gateway: a
// deployment named by the model each request is sent for, with the
// api-version and the api-key the resource requires, for chat,
// Responses and Messages clients; a transcript repaired before a strict
// deployment sees it; a passthrough call (embeddings) to the deployment.
func TestAzureOpenAI(t *testing.T) {
	e, s := gatewaytest.StartSim(t, sim.Options{}, azureConfig)
	ctx := context.Background()
	c := e.Client("k")
	// A streamed tool call from a deployment (the client's model names it).
	stream := c.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{Model: "az-sim-tool", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("weather?")},
		Tools: []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{Name: "get_weather"})}})
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if stream.Err() != nil || len(acc.Choices) != 1 || len(acc.Choices[0].Message.ToolCalls) != 1 {
		t.Fatalf("a deployment's streamed tool call: %v %+v", stream.Err(), acc.Choices)
	}
	if got := s.LastHeader().Get("Api-Key"); got != sim.AzureKey {
		t.Errorf("api-key sent: %q", got)
	}
	// The route's upstream model is the deployment; a call nothing
	// answered is sealed before the strict deployment sees it.
	broken := []openai.ChatCompletionMessageParamUnion{openai.UserMessage("go"), {OfAssistant: &openai.ChatCompletionAssistantMessageParam{
		ToolCalls: []openai.ChatCompletionMessageToolCallUnionParam{{OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{ID: "call_1", Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: "get_weather", Arguments: "{}"}}}}}},
		openai.UserMessage("and?")}
	if r, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "gpt-4o", Messages: broken}); err != nil || len(r.Choices) != 1 {
		t.Fatalf("a broken transcript to a strict deployment: %v\n%s", err, s.LastRequest())
	}
	if !strings.Contains(string(s.LastRequest()), `"tool_call_id":"call_1"`) {
		t.Errorf("the call was not sealed: %s", s.LastRequest())
	}
	// A Responses client and a Messages client, to a deployment.
	if r, err := c.Responses.New(ctx, responses.ResponseNewParams{Model: "az-sim-text", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}}); err != nil || r.OutputText() == "" {
		t.Fatalf("a Responses client to a deployment: %v", err)
	}
	ac := anthropic.NewClient(aoption.WithBaseURL("http://"+e.Addr+"/"), aoption.WithAPIKey("k"), aoption.WithMaxRetries(0))
	if m, err := ac.Messages.New(ctx, anthropic.MessageNewParams{Model: "az-sim-text", MaxTokens: 64, Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}}); err != nil || len(m.Content) == 0 {
		t.Fatalf("a Messages client to a deployment: %v", err)
	}
	// The v1 API: chat completions, and the Responses API itself.
	if r, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "azv1-sim-text", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}}); err != nil || r.Choices[0].Message.Content == "" {
		t.Fatalf("the v1 API's chat: %v", err)
	}
	if r, err := c.Responses.New(ctx, responses.ResponseNewParams{Model: "azr-sim-text", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}}); err != nil || r.OutputText() == "" {
		t.Fatalf("the v1 API's Responses: %v", err)
	}
	// The rest of /v1 goes to the deployment too, the client's own
	// api-version replaced by the configured one.
	if resp, body := e.Do(t, "POST", "/embeddings?api-version=bogus", `{"model":"gpt-4o","input":"hi"}`, "Authorization", "Bearer k"); resp.StatusCode != http.StatusOK {
		t.Errorf("embeddings to a deployment: %d %s", resp.StatusCode, body)
	}
	// Parallel calls, a throttle (429 with its Retry-After) and a stream
	// cut mid-answer, from a deployment.
	par := accumulate(t, e, openai.ChatCompletionNewParams{Model: "az-sim-parallel", Messages: gatewaytest.UserMsg("weather?"), Tools: weatherTool})
	if par.err != nil || len(par.msg.ToolCalls) < 2 || par.msg.ToolCalls[0].ID == par.msg.ToolCalls[1].ID {
		t.Errorf("parallel calls: %v, %d calls", par.err, len(par.msg.ToolCalls))
	}
	if resp, body := e.Do(t, "POST", "/chat/completions", `{"model":"az-sim-error-429","messages":[{"role":"user","content":"hi"}]}`, "Authorization", "Bearer k"); resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("a throttle: %d %s", resp.StatusCode, body)
	}
	if r := accumulate(t, e, openai.ChatCompletionNewParams{Model: "az-sim-cut", Messages: gatewaytest.UserMsg("hi")}); r.err == nil {
		t.Error("a cut stream ended cleanly")
	}
	// A model that is no path segment names no deployment: refused, nothing sent.
	before := s.Requests()
	if resp, body := e.Do(t, "POST", "/chat/completions", `{"model":"dots","messages":[{"role":"user","content":"hi"}]}`, "Authorization", "Bearer k"); resp.StatusCode != http.StatusBadRequest ||
		!strings.Contains(body, `"invalid_value"`) || s.Requests() != before {
		t.Errorf("a dot segment as the deployment: %d %s", resp.StatusCode, body)
	}
	// Without the api-version Azure knows no such resource: the client
	// is told so, naming the upstream.
	resp, body := e.Do(t, "POST", "/chat/completions", `{"model":"nover-sim-text","messages":[{"role":"user","content":"hi"}]}`, "Authorization", "Bearer k")
	if resp.StatusCode < 400 || !strings.Contains(body, "Resource not found") {
		t.Errorf("no api-version: %d %s", resp.StatusCode, body)
	}
}

// auth: azure — a Microsoft Entra ID token as the bearer, from a
// workload identity (the federated token file AKS projects) and from a
// managed identity (App Service's endpoint); tokens that expire at once
// are fetched again for each call, and no call fails for it; a token good
// for an hour is kept.
func TestAzureEntraID(t *testing.T) {
	const config = `
upstreams:
  - {name: azure, url: "UPSTREAM_URL/openai/deployments/{model}", api_version: "2024-10-21", auth: azure}
routes:
  - {model: "*", upstream: azure}
`
	for identity, ttl := range map[string]time.Duration{"workload": 2 * time.Second, "managed": 2 * time.Second, "kept": time.Hour} {
		t.Run(identity, func(t *testing.T) {
			s := sim.New(sim.Options{AzureAssertion: "federated-token", TokenTTL: ttl})
			up := httptest.NewServer(s)
			t.Cleanup(up.Close)
			for _, k := range []string{"AZURE_CLIENT_SECRET", "AZURE_FEDERATED_TOKEN_FILE", "IDENTITY_ENDPOINT", "IDENTITY_HEADER"} {
				t.Setenv(k, "")
			}
			t.Setenv("AZURE_TENANT_ID", "tenant")
			t.Setenv("AZURE_CLIENT_ID", "app")
			t.Setenv("AZURE_AUTHORITY_HOST", up.URL)
			if identity != "managed" {
				file := filepath.Join(t.TempDir(), "token")
				if err := os.WriteFile(file, []byte("federated-token\n"), 0o600); err != nil {
					t.Fatal(err)
				}
				t.Setenv("AZURE_FEDERATED_TOKEN_FILE", file)
			} else {
				t.Setenv("IDENTITY_ENDPOINT", up.URL+"/msi/token")
				t.Setenv("IDENTITY_HEADER", sim.AzureIdentityHeader)
			}
			e := gatewaytest.Start(t, up.URL, config)
			for range 2 {
				if r, err := e.Client("k").Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "sim-text", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}}); err != nil || len(r.Choices) != 1 {
					t.Fatalf("with an Entra ID token: %v", err)
				}
			}
			// A token that expires within five minutes is fetched again;
			// one good for an hour is kept.
			want := map[bool]int{true: 1, false: 2}[ttl == time.Hour]
			if got := s.LastHeader().Get("Authorization"); !strings.HasPrefix(got, "Bearer eyJ0.sim-entra-") || s.TokensIssued() != want {
				t.Errorf("sent %q, %d tokens issued for 2 calls, want %d", got, s.TokensIssued(), want)
			}
		})
	}
}

// auth: aws — Amazon Bedrock's OpenAI-compatible chat completions, every
// request signed with AWS Signature Version 4 from the default
// credentials chain (here the environment's); the simulator signs what
// it received again and compares. Credentials it does not know are
// Bedrock's 403, which the client gets as the gateway's 502.
func TestBedrockSigned(t *testing.T) {
	awsEnv(t, map[string]string{"AWS_ACCESS_KEY_ID": sim.AWSAccessKey, "AWS_SECRET_ACCESS_KEY": sim.AWSSecretKey})
	e, s := gatewaytest.StartSim(t, sim.Options{}, `
upstreams:
  - {name: bedrock, url: "UPSTREAM_URL/openai/v1", auth: aws, region: us-west-2}
routes:
  - {model: "*", upstream: bedrock}
`)
	r := accumulate(t, e, openai.ChatCompletionNewParams{Model: "sim-tool", Messages: gatewaytest.UserMsg("weather?"), Tools: weatherTool})
	if r.err != nil || len(r.msg.ToolCalls) != 1 {
		t.Fatalf("a signed stream: %v %+v", r.err, r.msg.ToolCalls)
	}
	if a := s.LastHeader().Get("Authorization"); !strings.Contains(a, "/us-west-2/bedrock/aws4_request") {
		t.Errorf("signed as %q", a)
	}
	t.Setenv("AWS_SECRET_ACCESS_KEY", "wrong")
	e2, _ := gatewaytest.StartSim(t, sim.Options{}, `
upstreams:
  - {name: bedrock, url: "UPSTREAM_URL/openai/v1", auth: aws, region: us-west-2}
routes:
  - {model: "*", upstream: bedrock}
`)
	if resp, body := e2.Do(t, "POST", "/chat/completions", `{"model":"sim-text","messages":[{"role":"user","content":"hi"}]}`, "Authorization", "Bearer k"); resp.StatusCode != http.StatusBadGateway || !strings.Contains(body, "upstream_auth_failed") {
		t.Errorf("a wrong secret: %d %s", resp.StatusCode, body)
	}
}
