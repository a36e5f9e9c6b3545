package upstream

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/toolgate/toolgate/internal/wire"
)

// AzureScope is the scope of the Microsoft Entra ID tokens Azure OpenAI
// takes.
const AzureScope = "https://cognitiveservices.azure.com/.default"

// AzureTokens is a TokenSource of Microsoft Entra ID tokens for Azure
// OpenAI, from the first of these the environment configures, as Azure's
// own SDKs look for them:
//
//   - a service principal's secret: AZURE_TENANT_ID, AZURE_CLIENT_ID and
//     AZURE_CLIENT_SECRET;
//   - workload identity (AKS): AZURE_TENANT_ID, AZURE_CLIENT_ID and
//     AZURE_FEDERATED_TOKEN_FILE, the token the cluster projects into
//     the pod (read again at each fetch, as it is rotated);
//   - a managed identity: IDENTITY_ENDPOINT and IDENTITY_HEADER (App
//     Service, Container Apps), else the instance metadata service of a
//     VM or a node (AZURE_CLIENT_ID picks a user-assigned identity).
//
// AZURE_AUTHORITY_HOST changes the authority (default
// https://login.microsoftonline.com/). A token is kept and fetched again
// five minutes before it expires; each fetch is bounded.
func AzureTokens() TokenSource {
	return &cachedTokens{fetch: azureToken, early: 5 * time.Minute}
}

// cachedTokens keeps a token and fetches a new one, once for all callers,
// when it is within early of its expiry.
type cachedTokens struct {
	fetch func(ctx context.Context) (token string, expires time.Time, err error)
	early time.Duration

	mu      sync.Mutex
	token   string
	expires time.Time
}

func (c *cachedTokens) Token() (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.token != "" && time.Until(c.expires) > c.early {
		return c.token, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), tokenTimeout)
	defer cancel()
	token, expires, err := c.fetch(ctx)
	if err != nil {
		return "", fmt.Errorf("azure credentials: %w", err)
	}
	c.token, c.expires = token, expires
	return token, nil
}

// imds is the instance metadata service's token endpoint.
const imds = "http://169.254.169.254/metadata/identity/oauth2/token"

// azureToken fetches a token with the credentials the environment names.
func azureToken(ctx context.Context) (string, time.Time, error) {
	tenant, client := os.Getenv("AZURE_TENANT_ID"), os.Getenv("AZURE_CLIENT_ID")
	authority := strings.TrimSuffix(cmp.Or(os.Getenv("AZURE_AUTHORITY_HOST"), "https://login.microsoftonline.com"), "/")
	form := url.Values{"client_id": {client}, "scope": {AzureScope}, "grant_type": {"client_credentials"}}
	switch secret, file := os.Getenv("AZURE_CLIENT_SECRET"), os.Getenv("AZURE_FEDERATED_TOKEN_FILE"); {
	case tenant != "" && client != "" && secret != "":
		form.Set("client_secret", secret)
		return entraToken(ctx, authority+"/"+url.PathEscape(tenant)+"/oauth2/v2.0/token", form)
	case tenant != "" && client != "" && file != "":
		assertion, err := os.ReadFile(file)
		if err != nil {
			return "", time.Time{}, err
		}
		form.Set("client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:jwt-bearer")
		form.Set("client_assertion", strings.TrimSpace(string(assertion)))
		return entraToken(ctx, authority+"/"+url.PathEscape(tenant)+"/oauth2/v2.0/token", form)
	}
	return managedIdentityToken(ctx, client)
}

// entraToken posts a client-credentials request to Entra ID's token
// endpoint.
func entraToken(ctx context.Context, endpoint string, form url.Values) (string, time.Time, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return tokenResponse(req)
}

// managedIdentityToken asks the managed identity endpoint of the host for
// a token.
func managedIdentityToken(ctx context.Context, client string) (string, time.Time, error) {
	resource := strings.TrimSuffix(AzureScope, "/.default")
	q := url.Values{"resource": {resource}}
	if client != "" {
		q.Set("client_id", client)
	}
	if endpoint, header := os.Getenv("IDENTITY_ENDPOINT"), os.Getenv("IDENTITY_HEADER"); endpoint != "" && header != "" {
		q.Set("api-version", "2019-08-01")
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint+"?"+q.Encode(), nil)
		if err != nil {
			return "", time.Time{}, err
		}
		req.Header.Set("X-IDENTITY-HEADER", header)
		return tokenResponse(req)
	}
	q.Set("api-version", "2018-02-01")
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, imds+"?"+q.Encode(), nil)
	req.Header.Set("Metadata", "true")
	return tokenResponse(req)
}

// tokenResponse sends a token request and reads the token and its expiry
// (expires_in, or the managed identity endpoints' expires_on), as a
// number or a string of one.
func tokenResponse(req *http.Request) (string, time.Time, error) {
	resp, err := (&http.Client{Timeout: tokenTimeout}).Do(req)
	if err != nil {
		return "", time.Time{}, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var t struct {
		AccessToken string          `json:"access_token"`
		ExpiresIn   json.RawMessage `json:"expires_in"`
		ExpiresOn   json.RawMessage `json:"expires_on"`
		Error       string          `json:"error"`
		Description string          `json:"error_description"`
	}
	if json.Unmarshal(body, &t) != nil || resp.StatusCode != http.StatusOK || t.AccessToken == "" {
		msg := cmp.Or(t.Description, t.Error, resp.Status)
		return "", time.Time{}, errors.New("the token endpoint answered " + wire.Clip(msg))
	}
	now := time.Now()
	if in := number(t.ExpiresIn); in > 0 {
		return t.AccessToken, now.Add(time.Duration(in) * time.Second), nil
	}
	if on := number(t.ExpiresOn); on > 0 {
		return t.AccessToken, time.Unix(on, 0), nil
	}
	return t.AccessToken, now.Add(time.Hour), nil
}

// number reads a JSON number or a string of one; 0 for anything else.
func number(raw json.RawMessage) int64 {
	s := strings.Trim(string(raw), `"`)
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}
