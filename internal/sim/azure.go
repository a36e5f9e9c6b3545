package sim

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
)

// Azure OpenAI, as its REST reference documents it
// (learn.microsoft.com/azure/ai-foundry/openai/reference): a resource's
// deployment URLs, /openai/deployments/{deployment}/chat/completions (and
// /embeddings) with an api-version query parameter, and the v1 API,
// /openai/v1/chat/completions and /openai/v1/responses, the model in the
// body; either takes the resource's key in the api-key header (or a
// Microsoft Entra ID token as a bearer, which this mode does not
// simulate). A deployment URL without its
// api-version is no resource ("Resource not found", 404); a wrong key is
// Azure's 401. A deployment serves the model it was made for, whatever
// the body's model member says: the deployment's name is that model here.

// AzureKey is the key the simulated Azure resource takes in api-key.
const AzureKey = "sim-azure-key"

// azureVersion is an api-version as Azure names them: a date, perhaps a
// preview's.
var azureVersion = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}(-preview)?$`)

// azureRoutes adds the Azure mode's paths to the mux.
func (s *Sim) azureRoutes() {
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
		if !azureAuthorized(r) {
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
		if !azureAuthorized(r) {
			azureError(w, http.StatusUnauthorized, "401", "Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource.")
			return
		}
		next(w, r)
	}
}

// azureAuthorized: the resource's key in api-key.
func azureAuthorized(r *http.Request) bool { return r.Header.Get("Api-Key") == AzureKey }

// azureError writes Azure's error object: its code a string.
func azureError(w http.ResponseWriter, status int, code, msg string) {
	b, _ := json.Marshal(map[string]any{"error": map[string]string{"code": code, "message": msg}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
