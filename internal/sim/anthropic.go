package sim

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
)

// The simulator's Anthropic mode: POST /v1/messages speaks the Messages
// API — its event sequence, its whole messages, its errors — and checks
// every request by Anthropic's rules first (docs/quirks.md C10–C14, max_tokens,
// the anthropic-version header), answering Anthropic's own 400 wording
// when one is broken. The model name picks the script, as for chat
// completions:
//
//	error-NNN  fails with status NNN and the error type Anthropic documents for it (529:
//	           overloaded_error, 429: rate_limit_error with retry-after, 504: timeout_error, …)
//	cut        the stream (or body) is cut mid-way
//	midstream  the stream sends an error event mid-way: overloaded_error, or the type the
//	           model names after it (claude-midstream-rate_limit_error)
//	parallel   two tool_use blocks (the first declared tool, Paris and Rome)
//	toolloop   a tool_use block until the transcript has two tool results, then text
//	tool       one tool_use block
//	search     Anthropic's web search server tool (the request must declare
//	           it): a server_tool_use block, its web_search_tool_result, and
//	           text with a citation
//	else       a text answer
//
// With thinking enabled every answer starts with a thinking block, signed
// (an HMAC of its text); a thinking block sent back must carry that
// signature unchanged. A web_search_tool_result sent back must follow its
// server_tool_use in the same turn and carry each result's
// encrypted_content as the simulator issued it, as Anthropic requires.

// anthropicMessage is one turn of a Messages request.
type anthropicMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// anthropicBlock is one content block of a turn.
type anthropicBlock struct {
	Type      string          `json:"type"`
	Text      *string         `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	ToolUseID string          `json:"tool_use_id"`
	Thinking  string          `json:"thinking"`
	Signature string          `json:"signature"`
	Input     json.RawMessage `json:"input"`
	Content   json.RawMessage `json:"content"`
}

type anthropicRequest struct {
	Model     string             `json:"model"`
	MaxTokens *int               `json:"max_tokens"`
	Messages  []anthropicMessage `json:"messages"`
	Tools     []struct {
		Type        string          `json:"type"`
		Name        string          `json:"name"`
		InputSchema json.RawMessage `json:"input_schema"`
	} `json:"tools"`
	ToolChoice *struct {
		Type string `json:"type"`
	} `json:"tool_choice"`
	Thinking *struct {
		Type   string `json:"type"`
		Budget int    `json:"budget_tokens"`
	} `json:"thinking"`
	Temperature *float64 `json:"temperature"`
	Stream      bool     `json:"stream"`
}

// thinkingOn: thinking enabled with a budget, or adaptive (the newest
// models'), which this simulator always uses.
func (r *anthropicRequest) thinkingOn() bool {
	return r.Thinking != nil && (r.Thinking.Type == "enabled" || r.Thinking.Type == "adaptive")
}

// blocks reads a turn's content: a string is one text block.
func (m anthropicMessage) blocks() []anthropicBlock {
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return []anthropicBlock{{Type: "text", Text: &s}}
	}
	var bs []anthropicBlock
	_ = json.Unmarshal(m.Content, &bs)
	return bs
}

var signKey = []byte("toolgate-sim-thinking")

// signature is what the simulator signs a thinking block's text with.
func signature(thinking string) string {
	h := hmac.New(sha256.New, signKey)
	h.Write([]byte(thinking))
	return base64.StdEncoding.EncodeToString(h.Sum(nil))
}

// searchURL is the page the search script finds; searchSeal the
// encrypted_content it issues for it.
const searchURL = "https://weather.example/paris"

func searchSeal(url string) string { return "Ev" + signature("search\x00"+url) }

// searchBlocks are the search script's blocks: the server tool's use, its
// result, and the text citing it.
func searchBlocks(n int64) []map[string]any {
	id := fmt.Sprintf("srvtoolu_sim_%d", n)
	return []map[string]any{
		{"type": "server_tool_use", "id": id, "name": "web_search", "input": map[string]string{"query": "weather in Paris"}},
		{"type": "web_search_tool_result", "tool_use_id": id, "content": []any{map[string]any{"type": "web_search_result", "url": searchURL,
			"title": "Paris weather", "encrypted_content": searchSeal(searchURL), "page_age": "1 hour ago"}}},
		{"type": "text", "text": "It is sunny in Paris.", "citations": []any{map[string]any{"type": "web_search_result_location", "url": searchURL,
			"title": "Paris weather", "encrypted_index": "Eo" + signature("index\x00"+searchURL), "cited_text": "Sunny, 24°C"}}},
	}
}

func (s *Sim) messages(w http.ResponseWriter, r *http.Request) {
	var req anthropicRequest
	if _, err := s.receiveJSON(r, &req); err != nil {
		anthropicError(w, http.StatusBadRequest, "invalid_request_error", "There was an error parsing the body: "+err.Error())
		return
	}
	if r.Header.Get("anthropic-version") == "" {
		anthropicError(w, http.StatusBadRequest, "invalid_request_error", "anthropic-version: header is required")
		return
	}
	if msg := checkAnthropic(&req); msg != "" {
		anthropicError(w, http.StatusBadRequest, "invalid_request_error", msg)
		return
	}
	if status, ok := errorScript(req.Model); ok {
		switch status {
		case 529:
			anthropicError(w, 529, "overloaded_error", "Overloaded")
		case 429:
			w.Header().Set("retry-after", "1")
			anthropicError(w, 429, "rate_limit_error", "This request would exceed the rate limit for your organization.")
		default:
			typ, ok := anthropicErrorTypes[status]
			if !ok {
				typ = "api_error"
			}
			anthropicError(w, status, typ, "Simulated "+typ)
		}
		return
	}
	blocks, stop := s.anthropicAnswer(&req)
	id := fmt.Sprintf("msg_sim_%d", s.seq.Add(1))
	if req.Stream {
		s.anthropicStream(w, r, id, &req, blocks, stop)
		return
	}
	b, _ := json.Marshal(map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": req.Model, "content": blocks,
		"stop_reason": stop, "stop_sequence": nil, "usage": map[string]int{"input_tokens": 20, "output_tokens": 12, "cache_read_input_tokens": 5},
	})
	writeWhole(w, b, strings.Contains(req.Model, "cut"))
}

// anthropicAnswer is the script's answer: its content blocks and stop
// reason.
func (s *Sim) anthropicAnswer(req *anthropicRequest) ([]map[string]any, string) {
	results := 0
	for _, m := range req.Messages {
		for _, b := range m.blocks() {
			if b.Type == "tool_result" {
				results++
			}
		}
	}
	var out []map[string]any
	if req.thinkingOn() {
		t := fmt.Sprintf("Thinking about it, step %d.", results+1)
		out = append(out, map[string]any{"type": "thinking", "thinking": t, "signature": signature(t)})
	}
	tool := "get_weather"
	if len(req.Tools) > 0 {
		tool = req.Tools[0].Name
	}
	use := func(id, city string) map[string]any {
		return map[string]any{"type": "tool_use", "id": id, "name": tool, "input": map[string]string{"city": city}}
	}
	n := s.seq.Add(1)
	if strings.Contains(req.Model, "agent") {
		return anthropicAgent(req, out, n)
	}
	switch {
	case strings.Contains(req.Model, "search"):
		return append(out, searchBlocks(n)...), "end_turn"
	case strings.Contains(req.Model, "parallel"):
		return append(out, map[string]any{"type": "text", "text": "Checking both."},
			use(fmt.Sprintf("toolu_sim_%da", n), "Paris"), use(fmt.Sprintf("toolu_sim_%db", n), "Rome")), "tool_use"
	case strings.Contains(req.Model, "toolloop") && results < 2, strings.Contains(req.Model, "tool") && !strings.Contains(req.Model, "toolloop"):
		return append(out, use(fmt.Sprintf("toolu_sim_%d", n), "Paris")), "tool_use"
	}
	return append(out, map[string]any{"type": "text", "text": answer}), "end_turn"
}

// anthropicAgent is the agent script's answer (agent.go) after out (the
// thinking block).
func anthropicAgent(req *anthropicRequest, out []map[string]any, n int64) ([]map[string]any, string) {
	result, has := "", false
	if k := len(req.Messages) - 1; k >= 0 && req.Messages[k].Role == "user" {
		for _, b := range req.Messages[k].blocks() {
			if b.Type == "tool_result" {
				result, has = result+resultText(b.Content), true
			}
		}
	}
	var tools []agentTool
	for _, t := range req.Tools {
		tools = append(tools, agentTool{Name: t.Name, Schema: t.InputSchema})
	}
	if name, args, ok := agentCall(tools); ok && !has {
		return append(out, map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_sim_%d", n), "name": name, "input": args}), "tool_use"
	}
	return append(out, map[string]any{"type": "text", "text": agentText(result, has)}), "end_turn"
}

// anthropicStream sends the answer as Anthropic streams it: message_start,
// ping, each block's start, deltas and stop, message_delta, message_stop.
func (s *Sim) anthropicStream(w http.ResponseWriter, r *http.Request, id string, req *anthropicRequest, blocks []map[string]any, stop string) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	var events []string
	ev := func(typ string, v map[string]any) {
		v["type"] = typ
		b, _ := json.Marshal(v)
		events = append(events, "event: "+typ+"\ndata: "+string(b)+"\n\n")
	}
	ev("message_start", map[string]any{"message": map[string]any{"id": id, "type": "message", "role": "assistant", "model": req.Model,
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": map[string]int{"input_tokens": 20, "output_tokens": 1, "cache_read_input_tokens": 5}}})
	ev("ping", map[string]any{})
	for i, b := range blocks {
		switch b["type"] {
		case "text":
			ev("content_block_start", map[string]any{"index": i, "content_block": map[string]any{"type": "text", "text": ""}})
			if cs, ok := b["citations"].([]any); ok {
				for _, c := range cs {
					ev("content_block_delta", map[string]any{"index": i, "delta": map[string]any{"type": "citations_delta", "citation": c}})
				}
			}
			for _, p := range pieces(b["text"].(string), 4) {
				ev("content_block_delta", map[string]any{"index": i, "delta": map[string]any{"type": "text_delta", "text": p}})
			}
		case "thinking":
			ev("content_block_start", map[string]any{"index": i, "content_block": map[string]any{"type": "thinking", "thinking": ""}})
			for _, p := range pieces(b["thinking"].(string), 3) {
				ev("content_block_delta", map[string]any{"index": i, "delta": map[string]any{"type": "thinking_delta", "thinking": p}})
			}
			ev("content_block_delta", map[string]any{"index": i, "delta": map[string]any{"type": "signature_delta", "signature": b["signature"]}})
		case "web_search_tool_result":
			ev("content_block_start", map[string]any{"index": i, "content_block": b})
		case "tool_use", "server_tool_use":
			ev("content_block_start", map[string]any{"index": i, "content_block": map[string]any{"type": b["type"], "id": b["id"], "name": b["name"], "input": map[string]any{}}})
			input, _ := json.Marshal(b["input"])
			for _, p := range pieces(string(input), 3) {
				ev("content_block_delta", map[string]any{"index": i, "delta": map[string]any{"type": "input_json_delta", "partial_json": p}})
			}
		}
		ev("content_block_stop", map[string]any{"index": i})
	}
	ev("message_delta", map[string]any{"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]int{"output_tokens": 12}})
	ev("message_stop", map[string]any{})
	for i, e := range events {
		if strings.Contains(req.Model, "cut") && i == len(events)/2 {
			panic(http.ErrAbortHandler) // the connection drops mid-stream
		}
		if _, after, ok := strings.Cut(req.Model, "midstream"); ok && i == len(events)/2 {
			typ, msg := "overloaded_error", "Overloaded"
			for _, t := range anthropicErrorTypes {
				if strings.HasPrefix(after, "-"+t) {
					typ, msg = t, "Simulated "+t
				}
			}
			b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]string{"type": typ, "message": msg}})
			io.WriteString(w, "event: error\ndata: "+string(b)+"\n\n")
			return
		}
		if !s.send(w, r, i, s.opts.ChunkDelay, []byte(e)) {
			return
		}
	}
}

// anthropicErrorTypes are the error types Anthropic documents for its
// statuses (https://docs.anthropic.com/en/api/errors).
var anthropicErrorTypes = map[int]string{400: "invalid_request_error", 401: "authentication_error", 402: "billing_error",
	403: "permission_error", 404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error",
	500: "api_error", 504: "timeout_error", 529: "overloaded_error"}

// countTokens answers count_tokens: a token per four bytes of the
// request's messages, system and tools (max_tokens must not be sent).
func (s *Sim) countTokens(w http.ResponseWriter, r *http.Request) {
	var req struct {
		MaxTokens *int            `json:"max_tokens"`
		Messages  json.RawMessage `json:"messages"`
		System    json.RawMessage `json:"system"`
		Tools     json.RawMessage `json:"tools"`
	}
	if _, err := s.receiveJSON(r, &req); err != nil || len(req.Messages) == 0 {
		anthropicError(w, http.StatusBadRequest, "invalid_request_error", "messages: Field required")
		return
	}
	if req.MaxTokens != nil {
		anthropicError(w, http.StatusBadRequest, "invalid_request_error", "max_tokens: Extra inputs are not permitted")
		return
	}
	n := (len(req.Messages) + len(req.System) + len(req.Tools)) / 4
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"input_tokens":%d}`, n)
}

func anthropicError(w http.ResponseWriter, status int, typ, msg string) {
	b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]string{"type": typ, "message": msg}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b)
}

var toolName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

const thinkingDocs = "Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking"

// checkAnthropic applies Anthropic's request rules and returns the first
// broken one in Anthropic's wording, or "".
func checkAnthropic(req *anthropicRequest) string {
	if req.MaxTokens == nil {
		return "max_tokens: Field required"
	}
	search := false
	for i, t := range req.Tools {
		search = search || strings.HasPrefix(t.Type, "web_search_")
		if !toolName.MatchString(t.Name) {
			return fmt.Sprintf("tools.%d.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,64}$'", i)
		}
	}
	if strings.Contains(req.Model, "search") && !search {
		return "the search script answers with the web_search server tool: declare it in tools"
	}
	if msg := checkThinking(req); msg != "" {
		return msg
	}
	return checkTurns(req)
}

// checkThinking applies C14 and the rules that come with thinking.
func checkThinking(req *anthropicRequest) string {
	if !req.thinkingOn() {
		return ""
	}
	enabled := req.Thinking.Type == "enabled"
	switch {
	case enabled && req.Thinking.Budget < 1024:
		return "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"
	case enabled && req.Thinking.Budget >= *req.MaxTokens:
		return "`max_tokens` must be greater than `thinking.budget_tokens`. " + thinkingDocs + "#max-tokens-and-context-window-size"
	case req.Temperature != nil && *req.Temperature != 1:
		return "`temperature` may only be set to 1 when thinking is enabled. " + thinkingDocs
	case req.ToolChoice != nil && (req.ToolChoice.Type == "any" || req.ToolChoice.Type == "tool"):
		return "Thinking may not be enabled when tool_choice forces tool use."
	}
	// The final assistant message, when it made calls, must start with
	// its thinking block, whatever follows its tool results.
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role != "assistant" {
			continue
		}
		a := req.Messages[i].blocks()
		uses := false
		for _, b := range a {
			uses = uses || b.Type == "tool_use"
		}
		if uses && a[0].Type != "thinking" && a[0].Type != "redacted_thinking" {
			return fmt.Sprintf("messages.%d.content.0.type: Expected `thinking` or `redacted_thinking`, but found `%s`. When `thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). We recommend you include thinking blocks from previous turns. To avoid this requirement, disable `thinking`. %s", i, a[0].Type, thinkingDocs)
		}
		break
	}
	return ""
}

// checkTurns applies the rules on turns and blocks (C10–C12, signatures).
func checkTurns(req *anthropicRequest) string {
	seen := map[string]bool{}
	for i, m := range req.Messages {
		blocks := m.blocks()
		if len(blocks) == 0 && !(i == len(req.Messages)-1 && m.Role == "assistant") {
			return fmt.Sprintf("messages.%d: all messages must have non-empty content except for the optional final assistant message", i)
		}
		var uses []string
		for j, b := range blocks {
			switch b.Type {
			case "text":
				if b.Text == nil || *b.Text == "" {
					return "messages: text content blocks must be non-empty"
				}
			case "thinking":
				if b.Signature != signature(b.Thinking) {
					return fmt.Sprintf("messages.%d.content.%d: Invalid `signature` in `thinking` block", i, j)
				}
			case "tool_use":
				if seen[b.ID] {
					return fmt.Sprintf("messages.%d.content.%d: tool_use ids must be unique", i, j)
				}
				seen[b.ID] = true
				uses = append(uses, b.ID)
			case "web_search_tool_result":
				if msg := checkSearchResult(blocks, i, j); msg != "" {
					return msg
				}
			}
		}
		if msg := checkResults(req.Messages, i, uses); msg != "" {
			return msg
		}
	}
	return ""
}

// checkSearchResult checks block j of turn i, a web_search_tool_result:
// its server_tool_use comes right before it, and each result's
// encrypted_content is the one the simulator issued.
func checkSearchResult(blocks []anthropicBlock, i, j int) string {
	b := blocks[j]
	if j == 0 || blocks[j-1].Type != "server_tool_use" || blocks[j-1].ID != b.ToolUseID {
		return fmt.Sprintf("messages.%d.content.%d: `web_search_tool_result` block(s) must follow the `server_tool_use` block with the same id: %s", i, j, b.ToolUseID)
	}
	var results []struct {
		URL              string `json:"url"`
		EncryptedContent string `json:"encrypted_content"`
	}
	_ = json.Unmarshal(b.Content, &results)
	for k, r := range results {
		if r.EncryptedContent != searchSeal(r.URL) {
			return fmt.Sprintf("messages.%d.content.%d.content.%d.encrypted_content: Invalid `encrypted_content` in `web_search_result` block", i, j, k)
		}
	}
	return ""
}

// checkResults checks that turn i's tool_use ids are answered by
// tool_result blocks at the start of the next turn, and that the results
// of turn i answer the calls of the turn before it (C10).
func checkResults(msgs []anthropicMessage, i int, uses []string) string {
	blocks := msgs[i].blocks()
	results := 0
	for j, b := range blocks {
		if b.Type != "tool_result" {
			continue
		}
		if j != results {
			return fmt.Sprintf("messages.%d: Did not find %d tool_result block(s) at the beginning of this message. Messages following tool_use blocks must begin with a matching number of tool_result blocks.", i, results+1)
		}
		results++
		found := false
		if i > 0 {
			for _, p := range msgs[i-1].blocks() {
				found = found || p.Type == "tool_use" && p.ID == b.ToolUseID
			}
		}
		if !found {
			return fmt.Sprintf("messages.%d.content.%d: unexpected `tool_use_id` found in `tool_result` blocks: %s. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.", i, j, b.ToolUseID)
		}
	}
	if len(uses) == 0 || i == len(msgs)-1 {
		return ""
	}
	answered := map[string]bool{}
	for _, b := range msgs[i+1].blocks() {
		if b.Type == "tool_result" {
			answered[b.ToolUseID] = true
		}
	}
	var missing []string
	for _, id := range uses {
		if !answered[id] {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		return fmt.Sprintf("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. Each `tool_use` block must have a corresponding `tool_result` block in the next message.", i, strings.Join(missing, ", "))
	}
	return ""
}
