package sim

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// The simulator's Gemini mode, on its own reading of Google's wire (it
// shares nothing with the gateway's translator):
//
//	POST /v1beta/models/{model}:generateContent
//	POST /v1beta/models/{model}:streamGenerateContent?alt=sse
//	POST /v1beta/openai/chat/completions   (Gemini's OpenAI-compatible dialect)
//
// Every request is checked by Gemini 3's rules first, answering Google's
// 400 wording when one is broken: roles user and model, no empty turn, a
// function response turn right after its call turn with as many
// responses as calls, by name; and thought signatures — in the current
// turn (everything after the last user text), the first function call of
// each step must carry the signature the simulator issued for it (an HMAC
// of the call), or skip_thought_signature_validator. The dialect checks
// the same on extra_content.google.thought_signature.
//
// The model name picks the script, as for chat completions:
//
//	error-NNN  fails with status NNN (429: RESOURCE_EXHAUSTED with a retryDelay, 503: UNAVAILABLE)
//	cut        the stream (or body) is cut mid-way, before any finishReason
//	malformed  finishes with MALFORMED_FUNCTION_CALL
//	parallel   two function calls (Paris and Rome; only the first signed)
//	toolloop   a function call until the request holds two responses, then text
//	tool       one function call
//	ids        function calls carry ids (Gemini's own otherwise have none)
//	else       a text answer
//
// Every answer thinks first (a thought part when includeThoughts is set)
// and signs its first function call, or its last text part.

// geminiPart is one part of a Gemini turn.
type geminiPart struct {
	Text             *string `json:"text,omitempty"`
	Thought          bool    `json:"thought,omitempty"`
	ThoughtSignature string  `json:"thoughtSignature,omitempty"`
	InlineData       *struct {
		MimeType string `json:"mimeType"`
		Data     string `json:"data"`
	} `json:"inlineData,omitempty"`
	FunctionCall *struct {
		ID   string          `json:"id,omitempty"`
		Name string          `json:"name"`
		Args json.RawMessage `json:"args"`
	} `json:"functionCall,omitempty"`
	FunctionResponse *struct {
		ID       string          `json:"id,omitempty"`
		Name     string          `json:"name"`
		Response json.RawMessage `json:"response"`
	} `json:"functionResponse,omitempty"`
}

type geminiContent struct {
	Role  string       `json:"role"`
	Parts []geminiPart `json:"parts"`
}

type geminiRequest struct {
	Contents         []geminiContent `json:"contents"`
	Tools            []geminiTools   `json:"tools"`
	GenerationConfig struct {
		ThinkingConfig *struct {
			IncludeThoughts bool `json:"includeThoughts"`
		} `json:"thinkingConfig"`
	} `json:"generationConfig"`
}

// geminiTools is one entry of a request's tools.
type geminiTools struct {
	FunctionDeclarations []geminiDecl `json:"functionDeclarations"`
}

// geminiDecl is a function declaration.
type geminiDecl struct {
	Name                 string          `json:"name"`
	Parameters           json.RawMessage `json:"parameters"`
	ParametersJSONSchema json.RawMessage `json:"parametersJsonSchema"`
}

// skipSignature is the value Gemini documents to skip the check.
const skipSignature = "skip_thought_signature_validator"

var geminiKey = []byte("toolgate-sim-gemini")

// callSignature is the signature the simulator issues for a function call:
// an HMAC of its name and arguments (re-encoded, so key order and spacing
// do not matter).
func callSignature(name string, args json.RawMessage) string {
	var v any
	_ = json.Unmarshal(args, &v)
	canonical, _ := json.Marshal(v)
	h := hmac.New(sha256.New, geminiKey)
	h.Write([]byte("fc\x00" + name + "\x00" + string(canonical)))
	return base64.StdEncoding.EncodeToString(h.Sum(nil))
}

// textSignature is the signature of an answer's text.
func textSignature(text string) string {
	h := hmac.New(sha256.New, geminiKey)
	h.Write([]byte("text\x00" + text))
	return base64.StdEncoding.EncodeToString(h.Sum(nil))
}

func (s *Sim) gemini(w http.ResponseWriter, r *http.Request) {
	model, method, _ := strings.Cut(r.PathValue("call"), ":")
	stream := method == "streamGenerateContent"
	if !stream && method != "generateContent" {
		geminiError(w, http.StatusNotFound, "NOT_FOUND", fmt.Sprintf("Method %q is not found for model %s.", method, model))
		return
	}
	if stream && r.URL.Query().Get("alt") != "sse" {
		geminiError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "The simulator streams only with alt=sse.")
		return
	}
	var req geminiRequest
	if _, err := s.receiveJSON(r, &req); err != nil {
		geminiError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "Invalid JSON payload received. "+err.Error())
		return
	}
	if msg := checkGemini(req.Contents); msg != "" {
		geminiError(w, http.StatusBadRequest, "INVALID_ARGUMENT", msg)
		return
	}
	if geminiFails(w, model) {
		return
	}
	a := s.geminiAnswer(model, &req)
	if !stream {
		b, _ := json.Marshal(a.response(a.parts, a.finish, true))
		writeWhole(w, b, strings.Contains(model, "cut"))
		return
	}
	s.geminiStream(w, r, a)
}

// geminiFails answers the error scripts.
func geminiFails(w http.ResponseWriter, model string) bool {
	status, ok := errorScript(model)
	if !ok {
		return false
	}
	switch status {
	case 429:
		b, _ := json.Marshal(map[string]any{"error": map[string]any{"code": 429, "status": "RESOURCE_EXHAUSTED",
			"message": "You exceeded your current quota, please check your plan and billing details.",
			"details": []any{map[string]any{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "2s"}}}})
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(429)
		w.Write(b)
	case 503:
		geminiError(w, 503, "UNAVAILABLE", "The model is overloaded. Please try again later.")
	case 400:
		geminiError(w, 400, "INVALID_ARGUMENT", "Request contains an invalid argument.")
	default:
		geminiError(w, status, "INTERNAL", "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting")
	}
	return true
}

func geminiError(w http.ResponseWriter, status int, code, msg string) {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"code": status, "message": msg, "status": code}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b)
}

// checkGemini applies Gemini 3's rules on turns, function responses and
// thought signatures; it returns the first broken one in Google's
// wording, or "".
func checkGemini(contents []geminiContent) string {
	if len(contents) == 0 {
		return "* GenerateContentRequest.contents: contents is not specified"
	}
	current := 0 // the current turn starts after the last user text
	for i, c := range contents {
		if c.Role != "user" && c.Role != "model" {
			return fmt.Sprintf("Please use a valid role: user, model. (contents[%d].role %q)", i, c.Role)
		}
		if len(c.Parts) == 0 {
			return fmt.Sprintf("* GenerateContentRequest.contents[%d].parts: contents.parts must not be empty.", i)
		}
		for _, p := range c.Parts {
			if c.Role == "user" && p.Text != nil {
				current = i + 1
			}
		}
	}
	for i, c := range contents {
		if msg := checkResponses(contents, i); msg != "" {
			return msg
		}
		if i >= current && c.Role == "model" {
			if msg := checkSignature(c); msg != "" {
				return msg
			}
		}
	}
	return ""
}

// checkResponses checks that turn i's function responses answer the
// calls of the turn right before it, as many and by name.
func checkResponses(contents []geminiContent, i int) string {
	var responses []string
	for _, p := range contents[i].Parts {
		if p.FunctionResponse != nil {
			responses = append(responses, p.FunctionResponse.Name)
		}
	}
	var calls []string
	if i > 0 {
		for _, p := range contents[i-1].Parts {
			if p.FunctionCall != nil {
				calls = append(calls, p.FunctionCall.Name)
			}
		}
	}
	next := i+1 < len(contents) && contents[i+1].Role == "user"
	switch {
	case len(responses) > 0 && len(calls) == 0:
		return "Please ensure that function response turn comes immediately after a function call turn."
	case contents[i].Role == "model" && hasCall(contents[i]) && next && !hasResponse(contents[i+1]):
		return "Please ensure that function call turn comes immediately before a function response turn."
	case len(calls) > 0 && contents[i].Role == "user" && len(responses) != len(calls):
		return "Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn."
	}
	for k := range responses {
		if responses[k] != calls[k] {
			return fmt.Sprintf("Please ensure that function response parts name the function calls of the function call turn, in order (%q answers %q).", responses[k], calls[k])
		}
	}
	return ""
}

func hasCall(c geminiContent) bool {
	for _, p := range c.Parts {
		if p.FunctionCall != nil {
			return true
		}
	}
	return false
}

func hasResponse(c geminiContent) bool {
	for _, p := range c.Parts {
		if p.FunctionResponse != nil {
			return true
		}
	}
	return false
}

// checkSignature checks the first function call of a model turn of the
// current turn: it carries its signature, or the documented skip value.
func checkSignature(c geminiContent) string {
	for pos, p := range c.Parts {
		if p.FunctionCall == nil {
			continue
		}
		switch p.ThoughtSignature {
		case "":
			return fmt.Sprintf("Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly, and missing thought_signature may lead to degraded model performance. Additional data, function call `default_api:%s` , position %d. Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details.", p.FunctionCall.Name, pos+1)
		case skipSignature, callSignature(p.FunctionCall.Name, p.FunctionCall.Args):
			return ""
		default:
			return "Thought signature is not valid."
		}
	}
	return ""
}

// geminiAnswer is a script's answer.
type geminiAnswer struct {
	model, id string
	parts     []map[string]any
	finish    string
	thoughts  bool
}

func (s *Sim) geminiAnswer(model string, req *geminiRequest) geminiAnswer {
	results := 0
	for _, c := range req.Contents {
		for _, p := range c.Parts {
			if p.FunctionResponse != nil {
				results++
			}
		}
	}
	n := s.seq.Add(1)
	a := geminiAnswer{model: model, id: fmt.Sprintf("sim-gemini-%d", n), finish: "STOP"}
	if tc := req.GenerationConfig.ThinkingConfig; tc != nil && tc.IncludeThoughts {
		a.thoughts = true
		a.parts = append(a.parts, map[string]any{"text": fmt.Sprintf("Thinking about it, step %d.", results+1), "thought": true})
	}
	tool := "get_weather"
	if len(req.Tools) > 0 && len(req.Tools[0].FunctionDeclarations) > 0 {
		tool = req.Tools[0].FunctionDeclarations[0].Name
	}
	call := func(k int, city string, signed bool) map[string]any {
		args := json.RawMessage(`{"city":"` + city + `"}`)
		fc := map[string]any{"name": tool, "args": args}
		if strings.Contains(model, "ids") {
			fc["id"] = fmt.Sprintf("fc_sim_%d_%d", n, k)
		}
		p := map[string]any{"functionCall": fc}
		if signed {
			p["thoughtSignature"] = callSignature(tool, args)
		}
		return p
	}
	if strings.Contains(model, "agent") {
		return a.agent(req)
	}
	switch {
	case strings.Contains(model, "malformed"):
		a.finish = "MALFORMED_FUNCTION_CALL"
	case strings.Contains(model, "parallel") && results == 0:
		a.parts = append(a.parts, map[string]any{"text": "Checking both."}, call(0, "Paris", true), call(1, "Rome", false))
	case strings.Contains(model, "toolloop") && results < 2, strings.Contains(model, "tool") && !strings.Contains(model, "toolloop") && results == 0:
		a.parts = append(a.parts, call(0, "Paris", true))
	default:
		a.parts = append(a.parts, map[string]any{"text": answer, "thoughtSignature": textSignature(answer)})
	}
	return a
}

// agent is the agent script's answer (agent.go), after the thought.
func (a geminiAnswer) agent(req *geminiRequest) geminiAnswer {
	result, has := "", false
	if k := len(req.Contents) - 1; k >= 0 {
		for _, p := range req.Contents[k].Parts {
			if p.FunctionResponse != nil {
				result, has = result+string(p.FunctionResponse.Response), true
			}
		}
	}
	var tools []agentTool
	for _, t := range req.Tools {
		for _, d := range t.FunctionDeclarations {
			schema := d.ParametersJSONSchema
			if len(schema) == 0 {
				schema = d.Parameters
			}
			tools = append(tools, agentTool{Name: d.Name, Schema: schema})
		}
	}
	if name, args, ok := agentCall(tools); ok && !has {
		a.parts = append(a.parts, map[string]any{"functionCall": map[string]any{"name": name, "args": args}, "thoughtSignature": callSignature(name, args)})
		return a
	}
	text := agentText(result, has)
	a.parts = append(a.parts, map[string]any{"text": text, "thoughtSignature": textSignature(text)})
	return a
}

// response is one GenerateContentResponse holding parts.
func (a geminiAnswer) response(parts []map[string]any, finish string, usage bool) map[string]any {
	cand := map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "index": 0}
	if finish != "" {
		cand["finishReason"] = finish
	}
	r := map[string]any{"candidates": []any{cand}, "modelVersion": a.model, "responseId": a.id}
	if usage {
		thoughts := 0
		if a.thoughts {
			thoughts = 7
		}
		r["usageMetadata"] = map[string]int{"promptTokenCount": 20, "candidatesTokenCount": 12, "thoughtsTokenCount": thoughts,
			"cachedContentTokenCount": 5, "totalTokenCount": 32 + thoughts}
	}
	return r
}

// geminiStream sends the answer as Gemini streams it: one response per
// piece of text or part, the last with the finishReason and the usage,
// each a "data:" line ended by CRLF CRLF; no end marker.
func (s *Sim) geminiStream(w http.ResponseWriter, r *http.Request, a geminiAnswer) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	var events []map[string]any
	for _, p := range a.parts {
		text, isText := p["text"].(string)
		if !isText || p["thought"] == true {
			events = append(events, a.response([]map[string]any{p}, "", false))
			continue
		}
		pieces := pieces(text, 3)
		for k, piece := range pieces {
			q := map[string]any{"text": piece}
			if k == len(pieces)-1 && p["thoughtSignature"] != nil {
				q["thoughtSignature"] = p["thoughtSignature"]
			}
			events = append(events, a.response([]map[string]any{q}, "", false))
		}
	}
	events = append(events, a.response([]map[string]any{{"text": ""}}, a.finish, true))
	for i, e := range events {
		if strings.Contains(a.model, "cut") && i == len(events)-1 {
			panic(http.ErrAbortHandler) // the connection drops before the finishReason
		}
		b, _ := json.Marshal(e)
		if !s.send(w, r, i, s.opts.ChunkDelay, []byte("data: "+string(b)+"\r\n\r\n")) {
			return
		}
	}
}

// compatRequest is the part of a chat request Gemini's OpenAI-compatible
// dialect reads here.
type compatRequest struct {
	Model    string `json:"model"`
	Stream   bool   `json:"stream"`
	Messages []struct {
		Role      string          `json:"role"`
		Content   json.RawMessage `json:"content"`
		ToolCalls []struct {
			ID       string `json:"id"`
			Function struct {
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			} `json:"function"`
			ExtraContent struct {
				Google struct {
					ThoughtSignature string `json:"thought_signature"`
				} `json:"google"`
			} `json:"extra_content"`
		} `json:"tool_calls"`
	} `json:"messages"`
	Tools []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
}

// geminiCompat is Gemini's OpenAI-compatible dialect: chat completions
// whose tool calls carry their signature in
// extra_content.google.thought_signature, have an empty id (docs/quirks.md
// A07) and finish with "stop" (A15). The replayed calls of the current
// turn must carry their signatures back, as on the native wire.
func (s *Sim) geminiCompat(w http.ResponseWriter, r *http.Request) {
	var req compatRequest
	body, err := s.receiveJSON(r, &req)
	if err != nil {
		geminiError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "Invalid JSON payload received. "+err.Error())
		return
	}
	if perr := checkPairs(body); perr != nil {
		geminiError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.")
		return
	}
	// The same request on the native wire, for the same checks and script.
	var native geminiRequest
	current := 0
	for i, m := range req.Messages {
		if m.Role == "user" {
			current = i
		}
	}
	for i, m := range req.Messages {
		if i < current || m.Role != "assistant" || len(m.ToolCalls) == 0 {
			continue
		}
		c := m.ToolCalls[0]
		if msg := checkSignature(geminiContent{Role: "model", Parts: []geminiPart{{ThoughtSignature: c.ExtraContent.Google.ThoughtSignature,
			FunctionCall: &struct {
				ID   string          `json:"id,omitempty"`
				Name string          `json:"name"`
				Args json.RawMessage `json:"args"`
			}{Name: c.Function.Name, Args: json.RawMessage(c.Function.Arguments)}}}}); msg != "" {
			geminiError(w, http.StatusBadRequest, "INVALID_ARGUMENT", msg)
			return
		}
	}
	for _, m := range req.Messages {
		if m.Role == "tool" {
			native.Contents = append(native.Contents, geminiContent{Role: "user", Parts: []geminiPart{{FunctionResponse: &struct {
				ID       string          `json:"id,omitempty"`
				Name     string          `json:"name"`
				Response json.RawMessage `json:"response"`
			}{}}}})
		}
	}
	if len(req.Tools) > 0 {
		native.Tools = append(native.Tools, geminiTools{FunctionDeclarations: []geminiDecl{{Name: req.Tools[0].Function.Name}}})
	}
	if geminiFails(w, req.Model) {
		return
	}
	a := s.geminiAnswer(req.Model, &native)
	s.compatAnswer(w, a, req.Stream)
}

// compatAnswer writes a script's answer as the dialect does.
func (s *Sim) compatAnswer(w http.ResponseWriter, a geminiAnswer, stream bool) {
	var text strings.Builder
	var calls []map[string]any
	for _, p := range a.parts {
		if fc, ok := p["functionCall"].(map[string]any); ok {
			args, _ := json.Marshal(fc["args"])
			call := map[string]any{"id": "", "type": "function", "function": map[string]any{"name": fc["name"], "arguments": string(args)}}
			if sig, ok := p["thoughtSignature"].(string); ok {
				call["extra_content"] = map[string]any{"google": map[string]any{"thought_signature": sig}}
			}
			calls = append(calls, call)
		} else if t, ok := p["text"].(string); ok && p["thought"] != true {
			text.WriteString(t)
		}
	}
	created := time.Now().Unix()
	if !stream {
		msg := map[string]any{"role": "assistant", "content": text.String()}
		if len(calls) > 0 {
			msg["tool_calls"] = calls
		}
		b, _ := json.Marshal(map[string]any{"id": a.id, "object": "chat.completion", "created": created, "model": a.model,
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": "stop"}},
			"usage":   map[string]int{"prompt_tokens": 20, "completion_tokens": 12, "total_tokens": 32}})
		writeWhole(w, b, strings.Contains(a.model, "cut"))
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	chunk := func(delta map[string]any, finish any) {
		b, _ := json.Marshal(map[string]any{"id": a.id, "object": "chat.completion.chunk", "created": created, "model": a.model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}})
		io.WriteString(w, "data: "+string(b)+"\n\n")
	}
	chunk(map[string]any{"role": "assistant"}, nil)
	if text.Len() > 0 {
		chunk(map[string]any{"content": text.String()}, nil)
	}
	for k, c := range calls {
		c["index"] = k
		chunk(map[string]any{"tool_calls": []any{c}}, nil)
	}
	if strings.Contains(a.model, "cut") {
		panic(http.ErrAbortHandler)
	}
	chunk(map[string]any{}, "stop")
	io.WriteString(w, "data: [DONE]\n\n")
}
