package sim

import (
	"bytes"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolgate/toolgate/internal/wire"
)

// Options configures a Sim. The zero value is usable.
type Options struct {
	// Fast serves pre-encoded responses (fixed ids, model "sim").
	Fast bool
	// Chunks is the number of content chunks in a text answer; 0 means 8.
	Chunks int
	// ChunkDelay is the pause between chunks of every stream; 0 means none.
	ChunkDelay time.Duration
	// SlowDelay is the pause between chunks of the slow script; 0 means 200ms.
	SlowDelay time.Duration
	// PacedDelay is the pause between chunks of a stream whose model name
	// contains "paced"; 0 means 1ms.
	PacedDelay time.Duration
	// Strict checks every transcript against OpenAI's tool-call pairing
	// rules, as a model name containing "strict" does.
	Strict bool
	// Status, when set, fails every chat request with it, as the error
	// script does (a deployment that is down, or rate-limited: a 429
	// carries RetryAfter in Retry-After when it is set).
	Status     int
	RetryAfter time.Duration
	// KeepBodies keeps every request's body (Bodies), up to 10,000, for
	// a test that checks what a whole session sent.
	KeepBodies bool
	// Org names the organization whose key seals the Responses mode's
	// encrypted reasoning: a simulator of another organization refuses it.
	// Default "org-sim".
	Org string
	// GoogleKey is the public key of the service account the Vertex
	// mode's token endpoint issues tokens to; TokenTTL their life
	// (default an hour).
	GoogleKey *rsa.PublicKey
	TokenTTL  time.Duration
	// AzureAssertion is the federated token (a workload identity's) the
	// Azure mode's Entra ID takes for a token; "" takes none.
	AzureAssertion string
}

// Sim is the simulated provider. It implements http.Handler.
type Sim struct {
	opts Options
	mux  *http.ServeMux

	mu         sync.Mutex
	last       []byte
	lastHeader http.Header
	bodies     [][]byte

	requests      atomic.Int64
	cancellations atomic.Int64
	seq           atomic.Int64

	fast map[fastKey][]byte

	// stored are the Responses mode's responses kept with store: true
	// (their input and output items), for previous_response_id.
	stored map[string][]json.RawMessage
	// tokens are the Vertex mode's access tokens, with their expiry.
	tokens map[string]time.Time
}

type fastKey struct {
	script script
	stream bool
	usage  bool
}

// New returns a Sim.
func New(opts Options) *Sim {
	if opts.Chunks <= 0 {
		opts.Chunks = 8
	}
	if opts.SlowDelay <= 0 {
		opts.SlowDelay = 200 * time.Millisecond
	}
	if opts.PacedDelay <= 0 {
		opts.PacedDelay = time.Millisecond
	}
	s := &Sim{opts: opts, mux: http.NewServeMux()}
	s.mux.HandleFunc("POST /v1/chat/completions", s.chat)
	s.mux.HandleFunc("POST /chat/completions", s.chat)
	s.mux.HandleFunc("GET /v1/models", s.models)
	s.mux.HandleFunc("POST /v1/messages", s.messages)
	s.mux.HandleFunc("POST /v1/embeddings", s.embeddings)
	s.mux.HandleFunc("POST /v1/completions", s.completions)
	s.mux.HandleFunc("POST /v1/moderations", s.moderations)
	s.mux.HandleFunc("GET /v1/files", s.files)
	s.mux.HandleFunc("POST /messages", s.messages)
	s.mux.HandleFunc("POST /v1/messages/count_tokens", s.countTokens)
	s.mux.HandleFunc("POST /v1beta/models/{call}", s.gemini)
	s.mux.HandleFunc("POST /v1beta/openai/chat/completions", s.geminiCompat)
	s.mux.HandleFunc("POST /v1/responses", s.responses)
	s.azureRoutes()
	s.vertexRoutes()
	s.converseRoutes()
	if opts.Fast {
		s.fast = map[fastKey][]byte{}
		for _, sc := range []script{scriptText, scriptTool, scriptParallel} {
			for _, stream := range []bool{false, true} {
				for _, usage := range []bool{false, true} {
					p := plan{script: sc, model: "sim", id: "chatcmpl-sim", tool: "get_weather", chunks: opts.Chunks, usage: usage}
					s.fast[fastKey{sc, stream, usage}] = p.encode(stream)
				}
			}
		}
	}
	return s
}

func (s *Sim) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// LastRequest returns a copy of the body of the latest chat request.
func (s *Sim) LastRequest() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return bytes.Clone(s.last)
}

// Bodies returns the bodies of every request received, in order, with
// Options.KeepBodies (nil without).
func (s *Sim) Bodies() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.bodies)
}

// LastHeader returns a copy of the headers of the latest chat request.
func (s *Sim) LastHeader() http.Header {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastHeader.Clone()
}

// Requests returns the number of chat requests received.
func (s *Sim) Requests() int64 { return s.requests.Load() }

// Cancellations returns the number of streams that stopped because the
// caller went away before they ended.
func (s *Sim) Cancellations() int64 { return s.cancellations.Load() }

type script int

const (
	scriptText script = iota
	scriptTool
	scriptError
	scriptCut
	scriptSlow
	scriptParallel
)

func pick(model string) (script, int) {
	switch {
	case strings.Contains(model, "error"):
		status := 500
		if n, ok := errorScript(model); ok && n >= 400 && n < 600 {
			status = n
		}
		return scriptError, status
	case strings.Contains(model, "cut"):
		return scriptCut, 0
	case strings.Contains(model, "slow"):
		return scriptSlow, 0
	case strings.Contains(model, "parallel"):
		return scriptParallel, 0
	case strings.Contains(model, "tool"):
		return scriptTool, 0
	}
	return scriptText, 0
}

// request is the part of a chat request the simulator reads.
type request struct {
	Model         string `json:"model"`
	Stream        bool   `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	Tools []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
}

// receive reads a request's body, counts the request and keeps the body
// and headers (LastRequest, LastHeader).
func (s *Sim) receive(r *http.Request) ([]byte, error) {
	body, err := readAll(r)
	s.requests.Add(1)
	s.mu.Lock()
	s.last, s.lastHeader = body, r.Header.Clone()
	if s.opts.KeepBodies && len(s.bodies) < 10000 {
		s.bodies = append(s.bodies, body)
	}
	s.mu.Unlock()
	return body, err
}

// receiveJSON is receive, then the body decoded into v.
func (s *Sim) receiveJSON(r *http.Request, v any) ([]byte, error) {
	body, err := s.receive(r)
	if err != nil {
		return nil, fmt.Errorf("could not read the body: %w", err)
	}
	return body, json.Unmarshal(body, v)
}

func (s *Sim) chat(w http.ResponseWriter, r *http.Request) {
	var req request
	body, err := s.receiveJSON(r, &req)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "We could not parse the JSON body of your request.")
		return
	}
	if s.opts.Strict || strings.Contains(req.Model, "strict") {
		if err := checkPairs(body); err != nil {
			writeErrorParam(w, http.StatusBadRequest, "invalid_request_error", err.Param, err.Msg)
			return
		}
		if param, msg := checkIDLengths(body); msg != "" {
			writeErrorCode(w, http.StatusBadRequest, "invalid_request_error", param, "string_above_max_length", msg)
			return
		}
	}
	if strings.Contains(req.Model, "plain") {
		// A model that does not reason (gpt-4.1, gpt-4o) refuses every
		// reasoning member, in OpenAI's words.
		var m map[string]json.RawMessage
		_ = json.Unmarshal(body, &m)
		for _, k := range []string{"reasoning_effort", "reasoning", "thinking"} {
			if _, ok := m[k]; ok {
				writeErrorParam(w, http.StatusBadRequest, "invalid_request_error", k, "Unrecognized request argument supplied: "+k)
				return
			}
		}
	}
	if strings.Contains(req.Model, "deepseek") {
		s.thinking(w, body, req.Stream)
		return
	}
	if strings.Contains(req.Model, "agent") {
		r, err := wire.DecodeRequest(body)
		if err != nil {
			writeError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
			return
		}
		s.chatAgent(w, r, false)
		return
	}
	if evs, ok := quirkFor(req.Model); ok && req.Stream {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		for i, ev := range evs {
			if !s.send(w, r, i, 0, []byte(ev)) {
				return
			}
		}
		return
	}
	sc, status := pick(req.Model)
	if s.opts.Status != 0 {
		if s.opts.RetryAfter > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(int(s.opts.RetryAfter/time.Second)))
		}
		kind := "server_error"
		if s.opts.Status == http.StatusTooManyRequests {
			kind = "rate_limit_error"
		}
		writeError(w, s.opts.Status, kind, fmt.Sprintf("The simulator fails every request with status %d (its --status option).", s.opts.Status))
		return
	}
	if sc == scriptError {
		writeError(w, status, "server_error", fmt.Sprintf("The simulator was asked to fail (model %s).", req.Model))
		return
	}
	paced := req.Stream && strings.Contains(req.Model, "paced")
	if b, ok := s.fast[fastKey{sc, req.Stream, req.Stream && req.StreamOptions != nil && req.StreamOptions.IncludeUsage}]; ok && !paced {
		s.writeFast(w, b, req.Stream)
		return
	}
	p := plan{
		script: sc,
		model:  req.Model,
		id:     "chatcmpl-sim-" + strconv.FormatInt(s.seq.Add(1), 10),
		tool:   "get_weather",
		chunks: s.opts.Chunks,
		usage:  req.StreamOptions != nil && req.StreamOptions.IncludeUsage,
		paced:  paced,
	}
	if s.opts.Fast && paced {
		p.model, p.id = "sim", "chatcmpl-sim" // the pre-encoded answer's bytes, paced
	}
	if len(req.Tools) > 0 && req.Tools[0].Function.Name != "" {
		p.tool = req.Tools[0].Function.Name
	}
	if !req.Stream {
		if sc == scriptSlow { // a slow model answers late
			select {
			case <-r.Context().Done():
				s.cancellations.Add(1)
				return
			case <-time.After(s.opts.SlowDelay):
			}
		}
		writeWhole(w, p.encode(false), sc == scriptCut)
		return
	}
	s.stream(w, r, p)
}

func (s *Sim) writeFast(w http.ResponseWriter, b []byte, stream bool) {
	if stream {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
	} else {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	}
	w.Write(b)
}

func (s *Sim) stream(w http.ResponseWriter, r *http.Request, p plan) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	delay := s.opts.ChunkDelay
	switch {
	case p.script == scriptSlow:
		delay = s.opts.SlowDelay
	case p.paced:
		delay = s.opts.PacedDelay
	}
	events := p.events()
	for i, ev := range events {
		if p.script == scriptCut && i == len(events)/2 {
			panic(http.ErrAbortHandler) // the connection drops mid-stream
		}
		if !s.send(w, r, i, delay, ev) {
			return
		}
	}
}

// send writes a stream's event i, after the pause when it is not the
// first, and flushes it; false when the client has gone (counted as a
// cancellation), which ends the stream. Every protocol's stream writes
// through it.
func (s *Sim) send(w http.ResponseWriter, r *http.Request, i int, delay time.Duration, ev []byte) bool {
	if i > 0 && delay > 0 {
		t := time.NewTimer(delay)
		defer t.Stop()
		select {
		case <-r.Context().Done():
			s.cancellations.Add(1)
			return false
		case <-t.C:
		}
	}
	if _, err := w.Write(ev); err != nil {
		s.cancellations.Add(1)
		return false
	}
	if err := http.NewResponseController(w).Flush(); err != nil {
		s.cancellations.Add(1)
		return false
	}
	return true
}

func (s *Sim) models(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	body := `{"object":"list","data":[`
	for i, id := range []string{"sim-text", "sim-tool", "sim-parallel", "sim-error", "sim-cut", "sim-slow"} {
		if i > 0 {
			body += ","
		}
		body += `{"id":"` + id + `","object":"model","created":0,"owned_by":"toolgate-sim"}`
	}
	w.Write([]byte(body + "]}"))
}

// checkPairs applies OpenAI's tool-call pairing rules to the request's
// transcript, as OpenAI does before it answers.
func checkPairs(body []byte) *wire.PairingError {
	req, err := wire.DecodeRequest(body)
	if err != nil {
		return nil // the simulator is lenient about everything else
	}
	if pe, ok := wire.CheckToolPairs(req.Messages).(*wire.PairingError); ok {
		return pe
	}
	return nil
}

// checkIDLengths applies OpenAI's limit on tool-call ids (docs/quirks.md C04):
// 40 characters, with OpenAI's wording.
func checkIDLengths(body []byte) (param, msg string) {
	req, err := wire.DecodeRequest(body)
	if err != nil {
		return "", ""
	}
	for i, m := range req.Messages {
		for k, c := range m.ToolCalls {
			if len(c.ID) > 40 {
				param = fmt.Sprintf("messages[%d].tool_calls[%d].id", i, k)
				return param, fmt.Sprintf("Invalid '%s': string too long. Expected a string with maximum length 40, but got a string with length %d instead.", param, len(c.ID))
			}
		}
	}
	return "", ""
}

func writeErrorCode(w http.ResponseWriter, status int, typ, param, code, msg string) {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": param, "code": code}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b)
}

// writeWhole writes a whole JSON answer, or with cut, its first half
// under a Content-Length of all of it, and drops the connection.
func writeWhole(w http.ResponseWriter, b []byte, cut bool) {
	w.Header().Set("Content-Type", "application/json")
	if cut {
		w.Header().Set("Content-Length", strconv.Itoa(len(b)))
		w.Write(b[:len(b)/2])
		panic(http.ErrAbortHandler)
	}
	w.Write(b)
}

func writeError(w http.ResponseWriter, status int, typ, msg string) {
	writeErrorParam(w, status, typ, "", msg)
}

func writeErrorParam(w http.ResponseWriter, status int, typ, param, msg string) {
	var p any
	if param != "" {
		p = param
	}
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": p, "code": nil}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b)
}

func readAll(r *http.Request) ([]byte, error) {
	var buf bytes.Buffer
	if r.ContentLength > 0 {
		buf.Grow(int(r.ContentLength))
	}
	_, err := buf.ReadFrom(r.Body)
	return buf.Bytes(), err
}

// errorScript is the status an error script's model name asks for: the
// three digits after "error-" (sim-error-429); ok is false for a name
// without them.
func errorScript(model string) (status int, ok bool) {
	i := strings.Index(model, "error-")
	if i < 0 || len(model) < i+9 {
		return 0, false
	}
	status, _ = strconv.Atoi(model[i+6 : i+9])
	return status, true
}
