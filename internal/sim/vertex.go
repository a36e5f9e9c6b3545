package sim

import (
	"bytes"
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Google Vertex AI, as its REST reference documents it
// (cloud.google.com/vertex-ai/docs/reference/rest): a publisher's models
// below a project and a location,
// /v1/projects/{project}/locations/{location}/publishers/google/models/{model}:generateContent
// (:streamGenerateContent?alt=sse), the Gemini API's bodies; and
// …/publishers/anthropic/models/{model}:rawPredict (:streamRawPredict,
// and count-tokens:rawPredict), the Messages API's bodies with
// anthropic_version "vertex-2023-10-16" in the body and no model member,
// the model in the path. Every call carries an OAuth access token as its
// bearer, which Google's token endpoint issues to a service account for
// a JWT it signed (RFC 7523's jwt-bearer grant): the simulator is that
// endpoint too (POST /token), and checks both the assertions (signed by
// Options.GoogleKey, for the cloud-platform scope) and the tokens (its
// own, unexpired). Errors are Google's: {"error":{"code","message","status"}}.

// VertexVersion is the anthropic_version Claude on Vertex AI takes.
const VertexVersion = "vertex-2023-10-16"

// vertexRoutes adds the Vertex mode's paths to the mux.
func (s *Sim) vertexRoutes() {
	s.mux.HandleFunc("POST /token", s.googleToken)
	s.mux.HandleFunc("POST /v1/projects/{project}/locations/{location}/publishers/google/models/{call}", s.vertexAuthorized(s.gemini))
	s.mux.HandleFunc("POST /v1/projects/{project}/locations/{location}/publishers/anthropic/models/{call}", s.vertexAuthorized(s.vertexClaude))
}

// TokensIssued is how many access tokens the token endpoint issued.
func (s *Sim) TokensIssued() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.tokens)
}

// googleToken is the token endpoint: an access token for a service
// account's signed assertion.
func (s *Sim) googleToken(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil || r.PostForm.Get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer" {
		oauthError(w, "unsupported_grant_type", "Invalid grant_type.")
		return
	}
	claims, err := s.verifyAssertion(r.PostForm.Get("assertion"))
	if err != nil {
		oauthError(w, "invalid_grant", "Invalid JWT Signature: "+err.Error())
		return
	}
	if !strings.Contains(claims.Scope, "https://www.googleapis.com/auth/cloud-platform") {
		oauthError(w, "invalid_scope", "The scope cloud-platform is needed.")
		return
	}
	token, ttl := s.issue("ya29.sim-")
	b, _ := json.Marshal(map[string]any{"access_token": token, "token_type": "Bearer", "expires_in": int(ttl / time.Second)})
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}

// issue makes an access token that starts with prefix, valid for
// Options.TokenTTL (default an hour).
func (s *Sim) issue(prefix string) (string, time.Duration) {
	ttl := s.opts.TokenTTL
	if ttl <= 0 {
		ttl = time.Hour
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tokens == nil {
		s.tokens = map[string]time.Time{}
	}
	token := fmt.Sprintf("%s%d", prefix, len(s.tokens)+1)
	s.tokens[token] = time.Now().Add(ttl)
	return token, ttl
}

// assertion is what a service account's JWT claims.
type assertion struct {
	Iss   string `json:"iss"`
	Scope string `json:"scope"`
	Aud   string `json:"aud"`
	Exp   int64  `json:"exp"`
}

// verifyAssertion checks a JWT's RS256 signature with Options.GoogleKey
// and its expiry, and returns its claims.
func (s *Sim) verifyAssertion(jwt string) (assertion, error) {
	var c assertion
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 || s.opts.GoogleKey == nil {
		return c, fmt.Errorf("not a JWT of a known key")
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return c, err
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if err := rsa.VerifyPKCS1v15(s.opts.GoogleKey, crypto.SHA256, sum[:], sig); err != nil {
		return c, err
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil || json.Unmarshal(payload, &c) != nil {
		return c, fmt.Errorf("unreadable claims")
	}
	if time.Unix(c.Exp, 0).Before(time.Now()) {
		return c, fmt.Errorf("expired")
	}
	return c, nil
}

// oauthError writes an OAuth error (RFC 6749, section 5.2).
func oauthError(w http.ResponseWriter, code, desc string) {
	b, _ := json.Marshal(map[string]string{"error": code, "error_description": desc})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	_, _ = w.Write(b)
}

// vertexAuthorized serves next for a call whose bearer is a token the
// token endpoint issued and that has not expired.
func (s *Sim) vertexAuthorized(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		token, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		s.mu.Lock()
		until, ok := s.tokens[token]
		s.mu.Unlock()
		if !ok || time.Now().After(until) {
			geminiError(w, http.StatusUnauthorized, "UNAUTHENTICATED", "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.")
			return
		}
		next(w, r)
	}
}

// vertexClaude serves Claude's rawPredict, streamRawPredict and
// count-tokens: the body's version checked, the model taken from the
// path into the Messages API's request.
func (s *Sim) vertexClaude(w http.ResponseWriter, r *http.Request) {
	model, method, _ := strings.Cut(r.PathValue("call"), ":")
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 64<<20))
	var m map[string]json.RawMessage
	if err != nil || json.Unmarshal(body, &m) != nil {
		geminiError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "Invalid JSON payload received.")
		return
	}
	var version string
	_ = json.Unmarshal(m["anthropic_version"], &version)
	switch {
	case version != VertexVersion:
		anthropicError(w, http.StatusBadRequest, "invalid_request_error", "anthropic_version: Input should be '"+VertexVersion+"'")
		return
	case method != "rawPredict" && method != "streamRawPredict":
		geminiError(w, http.StatusNotFound, "NOT_FOUND", fmt.Sprintf("Method %q is not found.", method))
		return
	case model == "count-tokens":
		delete(m, "anthropic_version")
		s.vertexForward(w, r, m, s.countTokens)
		return
	case m["model"] != nil:
		anthropicError(w, http.StatusBadRequest, "invalid_request_error", "model: Extra inputs are not permitted")
		return
	}
	delete(m, "anthropic_version")
	m["model"], _ = json.Marshal(model)
	s.vertexForward(w, r, m, s.messages)
}

// vertexForward serves a Vertex call with the Messages API's handler,
// whose request it now is.
func (s *Sim) vertexForward(w http.ResponseWriter, r *http.Request, m map[string]json.RawMessage, next http.HandlerFunc) {
	body, _ := json.Marshal(m)
	r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	r.Header.Set("anthropic-version", "2023-06-01") // in the body on Vertex
	next(w, r)
}

// ServiceAccountJSON is a service account's key file (what
// GOOGLE_APPLICATION_CREDENTIALS names) for key, whose tokens come from
// tokenURL: the Vertex mode's token endpoint, for a simulator started
// with Options.GoogleKey set to key's public half.
func ServiceAccountJSON(key *rsa.PrivateKey, tokenURL string) []byte {
	der := x509.MarshalPKCS1PrivateKey(key)
	b, _ := json.Marshal(map[string]string{
		"type": "service_account", "project_id": "sim-project", "private_key_id": "sim-key-1",
		"private_key":  string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: der})),
		"client_email": "toolgate@sim-project.iam.gserviceaccount.com", "client_id": "1",
		"token_uri": tokenURL,
	})
	return b
}
