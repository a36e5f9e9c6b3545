package upstream

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"

	"github.com/toolgate/toolgate/internal/enum"
)

// Auth is how an upstream is authenticated: its key (Target.APIKey, the
// default), or a cloud's short-lived credentials.
type Auth uint8

// The ways an upstream is authenticated.
const (
	AuthKey    Auth = iota // the configured key, in its header
	AuthGoogle             // Google Application Default Credentials: an OAuth token as the bearer (Vertex AI)
	AuthAzure              // Microsoft Entra ID: a token as the bearer (Azure OpenAI; AzureTokens)
	AuthAWS                // AWS Signature Version 4 with the default credentials chain (Amazon Bedrock; AWSSigner)
)

var authNames = []string{"key", "google", "azure", "aws"}

func (a Auth) String() string { return authNames[a] }

// Names are the names Parse takes.
func (Auth) Names() []string { return slices.Clone(authNames) }

// Parse reads a configured way: key, google, azure or aws.
func (Auth) Parse(s string) (Auth, error) { return enum.Parse[Auth](authNames, s) }

// TokenSource gives the bearer token a call is sent with, fetched and
// refreshed before it expires by its owner; safe for concurrent use.
type TokenSource interface {
	Token() (string, error)
}

// GoogleScope is the OAuth scope Vertex AI's calls need.
const GoogleScope = "https://www.googleapis.com/auth/cloud-platform"

// tokenTimeout bounds each request for a token (to Google's token
// endpoint, or the metadata server): a call waits for it at most so long.
const tokenTimeout = 30 * time.Second

// GoogleTokens is a TokenSource of Google Application Default Credentials
// (a service account's key file named by GOOGLE_APPLICATION_CREDENTIALS,
// workload identity, gcloud's user credentials, the metadata server of
// GKE, Cloud Run or Compute Engine), found at the first call: the token is
// kept and fetched again shortly before it expires. Credentials that are
// not found are looked for again at a later call, not before retryFind.
func GoogleTokens() TokenSource { return &googleTokens{} }

type googleTokens struct {
	src found[oauth2.TokenSource]
}

// retryFind is how long a failure to find credentials stands before they
// are looked for again.
const retryFind = 10 * time.Second

// found is credentials looked for once, at the first call that needs
// them, and again, after retryFind, when they were not found.
type found[T any] struct {
	mu     sync.Mutex
	v      T
	ok     bool
	err    error
	failed time.Time
}

// get returns what find found, finding it when nothing was yet.
func (f *found[T]) get(find func() (T, error)) (T, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ok {
		return f.v, nil
	}
	if f.err != nil && time.Since(f.failed) < retryFind {
		return f.v, f.err
	}
	v, err := find()
	if err != nil {
		f.err, f.failed = err, time.Now()
		return v, err
	}
	f.v, f.ok, f.err = v, true, nil
	return v, nil
}

func (g *googleTokens) Token() (string, error) {
	src, err := g.src.get(func() (oauth2.TokenSource, error) {
		// Every request for a token is bounded: the token source keeps
		// this context and its client for the refreshes.
		ctx := context.WithValue(context.Background(), oauth2.HTTPClient, &http.Client{Timeout: tokenTimeout})
		creds, err := google.FindDefaultCredentials(ctx, GoogleScope)
		if err != nil {
			return nil, fmt.Errorf("google credentials: %w", err)
		}
		return creds.TokenSource, nil
	})
	if err != nil {
		return "", err
	}
	t, err := src.Token() // cached, and refreshed shortly before it expires
	if err != nil {
		return "", fmt.Errorf("google credentials: %w", err)
	}
	return t.AccessToken, nil
}
