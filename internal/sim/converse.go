package sim

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
)

// The simulator's Converse mode, Amazon Bedrock's Converse API on its own
// reading of AWS's reference (docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Converse.html,
// API_runtime_ConverseStream.html; it shares nothing with the gateway's
// translator):
//
//	POST /model/{modelId}/converse
//	POST /model/{modelId}/converse-stream   (application/vnd.amazon.eventstream)
//
// Every request is signed with AWS Signature Version 4 for the service
// bedrock (checked against AWSAccessKey and AWSSecretKey, and a session
// token against those GET /aws/credentials, a container credentials
// endpoint, issued and their expiry) or carries
// AWSBearerToken as a Bedrock API key; else AWS's 403. Then it is checked
// by Bedrock's rules, answering a ValidationException (400) in Bedrock's
// wording when one is broken: the conversation starts with a user turn
// and alternates; no turn is empty and no text block blank; tool blocks
// need a toolConfig; each toolUse is answered by a toolResult in the next
// turn, and no toolResult answers nothing; with Claude's thinking on
// (additionalModelRequestFields.thinking), no temperature, and the last
// assistant turn that made calls starts with its reasoning block, whose
// signature the simulator issued (an HMAC of its text).
//
// The model id picks the script:
//
//	error-NNN  fails with status NNN and Bedrock's exception for it
//	           (429 ThrottlingException, 503 ServiceUnavailableException,
//	           400 ValidationException, 403 AccessDeniedException, else
//	           InternalServerException)
//	exception  the stream sends some text, then a throttlingException event
//	cut        the stream ends before messageStop (a whole answer is cut)
//	parallel   two toolUse blocks (Paris and Rome)
//	toolloop   a toolUse until the request holds two toolResults, then text
//	tool       one toolUse of the first declared tool, {"city":"Paris"}
//	redacted   a redactedContent reasoning block before the answer
//	else       a text answer
//
// The parallel and tool scripts answer in text once the last turn holds
// a toolResult.
// With thinking on, every answer starts with a signed reasoning block.

// AWSBearerToken is the Bedrock API key the simulated Bedrock takes.
const AWSBearerToken = "sim-bedrock-api-key"

var converseKey = []byte("toolgate-sim-bedrock")

// reasoningSignature is the signature the simulator issues for a
// reasoning text.
func reasoningSignature(text string) string {
	h := hmac.New(sha256.New, converseKey)
	h.Write([]byte(text))
	return base64.StdEncoding.EncodeToString(h.Sum(nil))
}

// converseBlock is one content block of a Converse message.
type converseBlock struct {
	Text    *string `json:"text,omitempty"`
	ToolUse *struct {
		ToolUseID string          `json:"toolUseId"`
		Name      string          `json:"name"`
		Input     json.RawMessage `json:"input"`
	} `json:"toolUse,omitempty"`
	ToolResult *struct {
		ToolUseID string            `json:"toolUseId"`
		Content   []json.RawMessage `json:"content"`
		Status    string            `json:"status"`
	} `json:"toolResult,omitempty"`
	ReasoningContent *struct {
		ReasoningText *struct {
			Text      string `json:"text"`
			Signature string `json:"signature"`
		} `json:"reasoningText"`
		RedactedContent []byte `json:"redactedContent"`
	} `json:"reasoningContent,omitempty"`
	Image      json.RawMessage `json:"image,omitempty"`
	Document   json.RawMessage `json:"document,omitempty"`
	CachePoint json.RawMessage `json:"cachePoint,omitempty"`
}

type converseRequest struct {
	Messages []struct {
		Role    string          `json:"role"`
		Content []converseBlock `json:"content"`
	} `json:"messages"`
	System          []converseBlock `json:"system"`
	InferenceConfig *struct {
		MaxTokens   *int     `json:"maxTokens"`
		Temperature *float64 `json:"temperature"`
	} `json:"inferenceConfig"`
	ToolConfig *struct {
		Tools []struct {
			ToolSpec struct {
				Name string `json:"name"`
			} `json:"toolSpec"`
		} `json:"tools"`
	} `json:"toolConfig"`
	AdditionalModelRequestFields struct {
		Thinking *struct {
			Type string `json:"type"`
		} `json:"thinking"`
	} `json:"additionalModelRequestFields"`
}

func (s *Sim) converseRoutes() {
	s.mux.HandleFunc("POST /model/{model}/converse", s.converse)
	s.mux.HandleFunc("POST /model/{model}/converse-stream", s.converse)
	s.mux.HandleFunc("GET /aws/credentials", s.awsCredentials)
}

func (s *Sim) converse(w http.ResponseWriter, r *http.Request) {
	body, err := s.receive(r)
	if err != nil {
		bedrockError(w, http.StatusBadRequest, "ValidationException", "The body could not be read.")
		return
	}
	switch {
	case bedrockSigned(r):
		if msg := s.verifySigV4(r, body); msg != "" {
			bedrockError(w, http.StatusForbidden, "InvalidSignatureException", msg)
			return
		}
	case r.Header.Get("Authorization") != "Bearer "+AWSBearerToken:
		bedrockError(w, http.StatusForbidden, "AccessDeniedException", "Authorization header is missing or invalid.")
		return
	}
	var req converseRequest
	if err := json.Unmarshal(body, &req); err != nil {
		bedrockError(w, http.StatusBadRequest, "ValidationException", "Malformed input request, please reformat your input and try again.")
		return
	}
	model := r.PathValue("model")
	if msg := checkConverse(&req); msg != "" {
		bedrockError(w, http.StatusBadRequest, "ValidationException", msg)
		return
	}
	if converseFails(w, model) {
		return
	}
	a := converseAnswer(model, &req)
	if strings.HasSuffix(r.URL.Path, "/converse-stream") {
		s.converseStream(w, model, a)
		return
	}
	b, _ := json.Marshal(map[string]any{"output": map[string]any{"message": map[string]any{"role": "assistant", "content": a.blocks}},
		"stopReason": a.stop, "usage": a.usage(), "metrics": map[string]int{"latencyMs": 1}})
	writeWhole(w, b, strings.Contains(model, "cut"))
}

// bedrockError answers an exception as Bedrock does: the status, its
// name in x-amzn-ErrorType, its message in the body.
func bedrockError(w http.ResponseWriter, status int, exception, msg string) {
	b, _ := json.Marshal(map[string]string{"message": msg})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("x-amzn-ErrorType", exception+":http://internal.amazon.com/coral/com.amazon.bedrock/")
	w.WriteHeader(status)
	w.Write(b)
}

// converseFails answers the error scripts.
func converseFails(w http.ResponseWriter, model string) bool {
	status, ok := errorScript(model)
	if !ok {
		return false
	}
	switch status {
	case 429:
		bedrockError(w, 429, "ThrottlingException", "Too many requests, please wait before trying again.")
	case 503:
		bedrockError(w, 503, "ServiceUnavailableException", "Bedrock is unable to process your request.")
	case 400:
		bedrockError(w, 400, "ValidationException", "The provided request is not valid.")
	case 403:
		bedrockError(w, 403, "AccessDeniedException", "You don't have access to the model with the specified model ID.")
	default:
		bedrockError(w, status, "InternalServerException", "The server encountered an internal error.")
	}
	return true
}

// checkConverse applies Bedrock's rules on turns, tool blocks and
// reasoning; it returns the first broken one in Bedrock's wording, or "".
func checkConverse(req *converseRequest) string {
	thinking := req.AdditionalModelRequestFields.Thinking != nil && req.AdditionalModelRequestFields.Thinking.Type == "enabled"
	if thinking && req.InferenceConfig != nil && req.InferenceConfig.Temperature != nil && *req.InferenceConfig.Temperature != 1 {
		return "temperature may only be set to 1 when thinking is enabled."
	}
	if len(req.Messages) == 0 || req.Messages[0].Role != "user" {
		return "A conversation must start with a user message. Try again with a conversation that starts with a user message."
	}
	var open []string // the calls of the turn before
	lastCalls := -1   // the last assistant turn that made calls
	for i, m := range req.Messages {
		if i > 0 && m.Role == req.Messages[i-1].Role {
			return "A conversation must alternate between user and assistant roles. Make sure the conversation alternates between user and assistant roles and try again."
		}
		if len(m.Content) == 0 {
			return fmt.Sprintf("The content field in the Message object at messages.%d is empty. Add a ContentBlock object to the content field and try again.", i)
		}
		var calls []string
		results := map[string]bool{}
		for k, b := range m.Content {
			switch {
			case b.Text != nil && strings.TrimSpace(*b.Text) == "":
				return fmt.Sprintf("The text field in the ContentBlock object at messages.%d.content.%d is blank. Add text to the text field, and try again.", i, k)
			case (b.ToolUse != nil || b.ToolResult != nil) && req.ToolConfig == nil:
				return "The toolConfig field must be defined when using toolUse and toolResult content blocks."
			case b.ToolUse != nil:
				calls = append(calls, b.ToolUse.ToolUseID)
			case b.ToolResult != nil:
				results[b.ToolResult.ToolUseID] = true
			}
		}
		if len(results) > len(open) {
			return fmt.Sprintf("The number of toolResult blocks at messages.%d.content exceeds the number of toolUse blocks of previous turn.", i)
		}
		var missing []string
		for _, id := range open {
			if !results[id] {
				missing = append(missing, id)
			}
		}
		if len(missing) > 0 {
			return fmt.Sprintf("Expected toolResult blocks at messages.%d.content for the following Ids: %s", i, strings.Join(missing, ", "))
		}
		if open = calls; len(calls) > 0 {
			lastCalls = i
		}
	}
	if thinking && lastCalls >= 0 {
		return checkReasoning(req.Messages[lastCalls].Content, lastCalls)
	}
	return ""
}

// checkReasoning applies Claude's rule with thinking on to the last
// assistant turn that made calls: it starts with a reasoning block the
// simulator signed.
func checkReasoning(content []converseBlock, i int) string {
	first := content[0].ReasoningContent
	if first == nil {
		return fmt.Sprintf("messages.%d.content.0.type: Expected `thinking` or `redacted_thinking`, but found `tool_use`. When `thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). We recommend you include thinking blocks from previous turns.", i)
	}
	for k, b := range content {
		if rc := b.ReasoningContent; rc != nil && rc.ReasoningText != nil && rc.ReasoningText.Signature != reasoningSignature(rc.ReasoningText.Text) {
			return fmt.Sprintf("messages.%d.content.%d: Invalid `signature` in `thinking` block", i, k)
		}
	}
	return ""
}

// converseReply is an answer: its content blocks (as the Converse API
// writes them) and stop reason.
type converseReply struct {
	blocks []map[string]any
	stop   string
}

func (converseReply) usage() map[string]int {
	return map[string]int{"inputTokens": 12, "outputTokens": 7, "totalTokens": 19, "cacheReadInputTokens": 0, "cacheWriteInputTokens": 0}
}

// converseAnswer is the script's answer to req.
func converseAnswer(model string, req *converseRequest) converseReply {
	var a converseReply
	if t := req.AdditionalModelRequestFields.Thinking; t != nil && t.Type == "enabled" {
		text := fmt.Sprintf("Thinking about turn %d.", len(req.Messages))
		a.blocks = append(a.blocks, map[string]any{"reasoningContent": map[string]any{"reasoningText": map[string]string{"text": text, "signature": reasoningSignature(text)}}})
	}
	if strings.Contains(model, "redacted") {
		a.blocks = append(a.blocks, map[string]any{"reasoningContent": map[string]any{"redactedContent": []byte("sim-redacted-" + model)}})
	}
	answered, results := false, 0
	for i, m := range req.Messages {
		for _, b := range m.Content {
			if b.ToolResult != nil {
				results++
				answered = answered || i == len(req.Messages)-1
			}
		}
	}
	if strings.Contains(model, "toolloop") {
		answered = results >= 2
	}
	tool := "get_weather"
	if req.ToolConfig != nil && len(req.ToolConfig.Tools) > 0 {
		tool = req.ToolConfig.Tools[0].ToolSpec.Name
	}
	switch {
	case !answered && strings.Contains(model, "parallel"):
		for k, city := range []string{"Paris", "Rome"} {
			a.blocks = append(a.blocks, map[string]any{"toolUse": map[string]any{"toolUseId": fmt.Sprintf("tooluse_sim%d_%d", len(req.Messages), k), "name": tool, "input": map[string]string{"city": city}}})
		}
		a.stop = "tool_use"
	case !answered && strings.Contains(model, "tool"):
		a.blocks = append(a.blocks, map[string]any{"toolUse": map[string]any{"toolUseId": fmt.Sprintf("tooluse_sim%d_0", len(req.Messages)), "name": tool, "input": map[string]string{"city": "Paris"}}})
		a.stop = "tool_use"
	default:
		a.blocks = append(a.blocks, map[string]any{"text": "Hello from Bedrock: it is sunny."})
		a.stop = "end_turn"
	}
	return a
}

// converseStream writes an answer as the event stream: messageStart,
// each block's start (a toolUse's), deltas and stop, messageStop and
// metadata — each payload padded with "p", as Bedrock's are.
func (s *Sim) converseStream(w http.ResponseWriter, model string, a converseReply) {
	w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
	enc := eventstream.NewEncoder()
	f, _ := w.(http.Flusher)
	send := func(typ string, payload map[string]any) {
		payload["p"] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJ"[:1+len(typ)%30]
		b, _ := json.Marshal(payload)
		m := eventstream.Message{Payload: b}
		m.Headers.Set(":event-type", eventstream.StringValue(typ))
		m.Headers.Set(":content-type", eventstream.StringValue("application/json"))
		m.Headers.Set(":message-type", eventstream.StringValue("event"))
		_ = enc.Encode(w, m)
		if f != nil {
			f.Flush()
		}
	}
	send("messageStart", map[string]any{"role": "assistant"})
	for i, b := range a.blocks {
		converseBlockEvents(send, i, b)
		if strings.Contains(model, "exception") {
			m := eventstream.Message{Payload: []byte(`{"message":"Too many tokens, please wait before trying again."}`)}
			m.Headers.Set(":exception-type", eventstream.StringValue("throttlingException"))
			m.Headers.Set(":content-type", eventstream.StringValue("application/json"))
			m.Headers.Set(":message-type", eventstream.StringValue("exception"))
			_ = enc.Encode(w, m)
			return
		}
	}
	if strings.Contains(model, "cut") {
		return // ends cleanly between frames, before messageStop
	}
	send("messageStop", map[string]any{"stopReason": a.stop})
	send("metadata", map[string]any{"usage": a.usage(), "metrics": map[string]int{"latencyMs": 1}})
}

// converseBlockEvents sends one content block as its events: a toolUse's
// start and its input in fragments, text and reasoning as deltas.
func converseBlockEvents(send func(string, map[string]any), i int, b map[string]any) {
	delta := func(d map[string]any) {
		send("contentBlockDelta", map[string]any{"contentBlockIndex": i, "delta": d})
	}
	switch {
	case b["toolUse"] != nil:
		u := b["toolUse"].(map[string]any)
		send("contentBlockStart", map[string]any{"contentBlockIndex": i, "start": map[string]any{"toolUse": map[string]any{"toolUseId": u["toolUseId"], "name": u["name"]}}})
		in, _ := json.Marshal(u["input"])
		for k := 0; k < len(in); k += 5 {
			delta(map[string]any{"toolUse": map[string]string{"input": string(in[k:min(k+5, len(in))])}})
		}
	case b["text"] != nil:
		text := b["text"].(string)
		for k := 0; k < len(text); k += 8 {
			delta(map[string]any{"text": text[k:min(k+8, len(text))]})
		}
	default:
		rc := b["reasoningContent"].(map[string]any)
		if red, ok := rc["redactedContent"].([]byte); ok {
			delta(map[string]any{"reasoningContent": map[string]any{"redactedContent": red}})
			break
		}
		rt := rc["reasoningText"].(map[string]string)
		delta(map[string]any{"reasoningContent": map[string]string{"text": rt["text"]}})
		delta(map[string]any{"reasoningContent": map[string]string{"signature": rt["signature"]}})
	}
	send("contentBlockStop", map[string]any{"contentBlockIndex": i})
}
