package sim

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Azure OpenAI, as its REST reference documents it
// (learn.microsoft.com/azure/ai-foundry/openai/reference): a resource's
// deployment URLs, /openai/deployments/{deployment}/chat/completions (and
// /embeddings) with an api-version query parameter, and the v1 API,
// /openai/v1/chat/completions and /openai/v1/responses, the model in the
// body; either takes the resource's key in the api-key header, or a
// Microsoft Entra ID token as the bearer, which Entra's token endpoint
// (POST /{tenant}/oauth2/v2.0/token: a service principal's secret,
// AzureSecret, or a workload identity's federated token,
// Options.AzureAssertion) or a managed identity endpoint (GET /msi/token,
// App Service's: the X-IDENTITY-HEADER AzureIdentityHeader) issues here. A
// deployment URL without its
// api-version is no resource ("Resource not found", 404); a wrong key is
// Azure's 401. A deployment serves the model it was made for, whatever
// the body's model member says: the deployment's name is that model here.

// AzureKey is the key the simulated Azure resource takes in api-key;
// AzureSecret a service principal's secret its Entra ID takes, and
// AzureIdentityHeader the secret header of its managed identity endpoint.
const (
	AzureKey            = "sim-azure-key"
	AzureSecret         = "sim-azure-secret"
	AzureIdentityHeader = "sim-identity-header"
)

// azureVersion is an api-version as Azure names them: a date, perhaps a
// preview's.
var azureVersion = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}(-preview)?$`)

// azureRoutes adds the Azure mode's paths to the mux.
func (s *Sim) azureRoutes() {
	s.mux.HandleFunc("POST /{tenant}/oauth2/v2.0/token", s.entraToken)
	s.mux.HandleFunc("GET /msi/token", s.managedIdentityToken)
	s.mux.HandleFunc("POST /openai/deployments/{deployment}/chat/completions", s.azureDeployment(s.chat))
	s.mux.HandleFunc("POST /openai/deployments/{deployment}/embeddings", s.azureDeployment(s.embeddings))
	s.mux.HandleFunc("POST /openai/v1/chat/completions", s.azureV1(s.chat))
	s.mux.HandleFunc("POST /openai/v1/responses", s.azureV1(s.responses))
}

// azureDeployment serves a deployment URL with next: the api-version and
// the key checked, the body's model made the deployment's.
func (s *Sim) azureDeployment(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !azureVersion.MatchString(r.URL.Query().Get("api-version")) {
			azureError(w, http.StatusNotFound, "404", "Resource not found")
			return
		}
		if !s.azureAuthorized(r) {
			azureError(w, http.StatusUnauthorized, "401", "Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource.")
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 64<<20))
		var m map[string]json.RawMessage
		if err != nil || json.Unmarshal(body, &m) != nil {
			writeError(w, http.StatusBadRequest, "invalid_request_error", "We could not parse the JSON body of your request.")
			return
		}
		m["model"], _ = json.Marshal(r.PathValue("deployment"))
		body, _ = json.Marshal(m)
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		next(w, r)
	}
}

// azureV1 serves a path of the v1 API with next, the key checked (an
// api-version is optional there).
func (s *Sim) azureV1(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if bedrockSigned(r) {
			s.bedrockOpenAI(w, r, next) // the same path on Amazon Bedrock
			return
		}
		if !s.azureAuthorized(r) {
			azureError(w, http.StatusUnauthorized, "401", "Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource.")
			return
		}
		next(w, r)
	}
}

// azureAuthorized: the resource's key in api-key, or a token Entra ID
// issued (unexpired) as the bearer.
func (s *Sim) azureAuthorized(r *http.Request) bool {
	if k := r.Header.Get("Api-Key"); k != "" {
		return k == AzureKey
	}
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	s.mu.Lock()
	until, issued := s.tokens[token]
	s.mu.Unlock()
	return ok && strings.HasPrefix(token, azureTokenPrefix) && issued && time.Now().Before(until)
}

// azureTokenPrefix starts the Entra ID tokens the simulator issues.
const azureTokenPrefix = "eyJ0.sim-entra-"

// entraToken is Entra ID's token endpoint: a token for Azure OpenAI's
// scope to a service principal's secret or a workload identity's
// federated token (client credentials).
func (s *Sim) entraToken(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil || r.PostForm.Get("grant_type") != "client_credentials" {
		oauthError(w, "unsupported_grant_type", "AADSTS70003: The app requested an unsupported grant type.")
		return
	}
	f := r.PostForm
	switch {
	case f.Get("scope") != "https://cognitiveservices.azure.com/.default":
		oauthError(w, "invalid_scope", "AADSTS70011: The provided value for the input parameter 'scope' is not valid.")
	case f.Get("client_secret") == AzureSecret,
		s.opts.AzureAssertion != "" && f.Get("client_assertion") == s.opts.AzureAssertion &&
			f.Get("client_assertion_type") == "urn:ietf:params:oauth:client-assertion-type:jwt-bearer":
		token, ttl := s.issue(azureTokenPrefix)
		b, _ := json.Marshal(map[string]any{"token_type": "Bearer", "expires_in": int(ttl / time.Second), "access_token": token})
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(b)
	default:
		oauthError(w, "invalid_client", "AADSTS7000215: Invalid client secret provided.")
	}
}

// managedIdentityToken is App Service's managed identity endpoint: its
// expiry as expires_on, a string of seconds since the epoch.
func (s *Sim) managedIdentityToken(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("X-IDENTITY-HEADER") != AzureIdentityHeader || r.URL.Query().Get("resource") != "https://cognitiveservices.azure.com" {
		oauthError(w, "invalid_request", "The identity header or the resource is wrong.")
		return
	}
	token, ttl := s.issue(azureTokenPrefix)
	b, _ := json.Marshal(map[string]string{"access_token": token, "expires_on": strconv.FormatInt(time.Now().Add(ttl).Unix(), 10),
		"resource": "https://cognitiveservices.azure.com", "token_type": "Bearer"})
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}

// azureError writes Azure's error object: its code a string.
func azureError(w http.ResponseWriter, status int, code, msg string) {
	b, _ := json.Marshal(map[string]any{"error": map[string]string{"code": code, "message": msg}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
