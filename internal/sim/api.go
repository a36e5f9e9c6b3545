package sim

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"net/http"
	"strings"
)

// The rest of the OpenAI API the simulator serves, for the gateway's
// passthrough: POST /v1/embeddings (a deterministic 8-dimension vector
// per input, from a hash of its text), /v1/completions (the answer, whole
// or streamed, with usage) and /v1/moderations (nothing flagged), each
// failing with status NNN for a model containing "error-NNN", and
// GET /v1/files (an empty list) for a body without a model.

func (s *Sim) embeddings(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model string          `json:"model"`
		Input json.RawMessage `json:"input"`
	}
	if s.apiRequest(w, r, &req) {
		return
	}
	var inputs []string
	if json.Unmarshal(req.Input, &inputs) != nil {
		var one string
		_ = json.Unmarshal(req.Input, &one)
		inputs = []string{one}
	}
	var data []map[string]any
	tokens := 0
	for i, in := range inputs {
		h := fnv.New64a()
		h.Write([]byte(in))
		seed := h.Sum64()
		vec := make([]float64, 8)
		for k := range vec {
			vec[k] = float64((seed>>(k*8))&0xff)/255 - 0.5
		}
		data = append(data, map[string]any{"object": "embedding", "index": i, "embedding": vec})
		tokens += len(strings.Fields(in)) + 1
	}
	writeJSON(w, map[string]any{"object": "list", "data": data, "model": req.Model,
		"usage": map[string]int{"prompt_tokens": tokens, "total_tokens": tokens}})
}

func (s *Sim) completions(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model  string `json:"model"`
		Stream bool   `json:"stream"`
	}
	if s.apiRequest(w, r, &req) {
		return
	}
	usage := map[string]int{"prompt_tokens": 5, "completion_tokens": 20, "total_tokens": 25}
	if !req.Stream {
		writeJSON(w, map[string]any{"id": "cmpl-sim", "object": "text_completion", "model": req.Model,
			"choices": []map[string]any{{"index": 0, "text": answer, "finish_reason": "stop"}}, "usage": usage})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	for _, p := range pieces(answer, 4) {
		b, _ := json.Marshal(map[string]any{"id": "cmpl-sim", "object": "text_completion", "model": req.Model,
			"choices": []map[string]any{{"index": 0, "text": p, "finish_reason": nil}}})
		fmt.Fprintf(w, "data: %s\n\n", b)
	}
	b, _ := json.Marshal(map[string]any{"id": "cmpl-sim", "object": "text_completion", "model": req.Model, "choices": []any{}, "usage": usage})
	fmt.Fprintf(w, "data: %s\n\ndata: [DONE]\n\n", b)
}

func (s *Sim) moderations(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model string `json:"model"`
	}
	if s.apiRequest(w, r, &req) {
		return
	}
	writeJSON(w, map[string]any{"id": "modr-sim", "model": req.Model, "results": []map[string]any{{"flagged": false, "categories": map[string]bool{}, "category_scores": map[string]float64{}}}})
}

func (s *Sim) files(w http.ResponseWriter, r *http.Request) {
	_, _ = s.receive(r)
	writeJSON(w, map[string]any{"object": "list", "data": []any{}})
}

// apiRequest reads a request of the rest of the API into v; it reports
// true when it answered already (an unreadable body, an error script).
func (s *Sim) apiRequest(w http.ResponseWriter, r *http.Request, v any) bool {
	body, err := s.receiveJSON(r, v)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "We could not parse the JSON body of your request.")
		return true
	}
	var m struct {
		Model string `json:"model"`
	}
	_ = json.Unmarshal(body, &m)
	if sc, status := pick(m.Model); sc == scriptError {
		writeError(w, status, "server_error", fmt.Sprintf("The simulator was asked to fail (model %s).", m.Model))
		return true
	}
	return false
}

func writeJSON(w http.ResponseWriter, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.Write(b)
}
