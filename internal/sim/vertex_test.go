package sim

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
	"github.com/anthropics/anthropic-sdk-go/vertex"
	"golang.org/x/oauth2/google"
)

// The Vertex mode speaks Vertex AI's wire for Claude as anthropic-sdk-go's
// vertex package (the SDK's own Vertex client) sends it, with a service
// account's credentials whose tokens its token endpoint issues: a
// message, a streamed one, count_tokens; a call without a valid token is
// Google's 401.
func TestVertexModeSDK(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	s := New(Options{GoogleKey: &key.PublicKey})
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	ctx := context.Background()
	creds, err := google.CredentialsFromJSONWithType(ctx, ServiceAccountJSON(key, srv.URL+"/token"), google.ServiceAccount, "https://www.googleapis.com/auth/cloud-platform")
	if err != nil {
		t.Fatal(err)
	}
	c := anthropic.NewClient(vertex.WithCredentials(ctx, "us-east5", "sim-project", creds), option.WithBaseURL(srv.URL+"/"), option.WithMaxRetries(0))
	m, err := c.Messages.New(ctx, anthropic.MessageNewParams{Model: "claude-text", MaxTokens: 64, Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}})
	if err != nil || len(m.Content) == 0 {
		t.Fatalf("a message: %v", err)
	}
	stream := c.Messages.NewStreaming(ctx, anthropic.MessageNewParams{Model: "claude-text", MaxTokens: 64, Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}})
	var acc anthropic.Message
	for stream.Next() {
		if err := acc.Accumulate(stream.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if stream.Err() != nil || len(acc.Content) == 0 {
		t.Fatalf("a streamed message: %v", stream.Err())
	}
	if n, err := c.Messages.CountTokens(ctx, anthropic.MessageCountTokensParams{Model: "claude-text", Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}}); err != nil || n.InputTokens == 0 {
		t.Fatalf("count_tokens: %v", err)
	}
	if s.TokensIssued() == 0 {
		t.Error("no token issued")
	}
	for _, bearer := range []string{"", "Bearer ya29.forged"} {
		req, _ := http.NewRequest("POST", srv.URL+"/v1/projects/p/locations/us-east5/publishers/anthropic/models/claude-text:rawPredict",
			strings.NewReader(`{"anthropic_version":"vertex-2023-10-16","max_tokens":8,"messages":[{"role":"user","content":"hi"}]}`))
		req.Header.Set("Authorization", bearer)
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("Claude with the bearer %q: %v %v", bearer, err, resp)
		}
		resp.Body.Close()
	}
	resp, err := http.Post(srv.URL+"/v1/projects/p/locations/global/publishers/google/models/sim-text:generateContent", "application/json", strings.NewReader(`{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`))
	if err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("Gemini without a token: %v %v", err, resp)
	}
	resp.Body.Close()
}
