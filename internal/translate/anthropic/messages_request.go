package anthropic

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/toolgate/toolgate/internal/translate"
	"github.com/toolgate/toolgate/internal/wire"
)

// Request is a Messages API request body, the one declaration of it for
// both directions: a POST /v1/messages (or count_tokens) body as a client
// sent it (Decode), and the body the gateway sends an Anthropic upstream
// (UpstreamRequest fills it, appendJSON writes it).
type Request struct {
	Model     string          `json:"model"`
	MaxTokens *int            `json:"max_tokens"`
	System    json.RawMessage `json:"system"`
	Messages  []Message       `json:"messages"`
	// Tools are the tools as the client declared them (an upstream
	// request's are upTools).
	Tools         []json.RawMessage `json:"tools"`
	ToolChoice    json.RawMessage   `json:"tool_choice"`
	StopSequences json.RawMessage   `json:"stop_sequences"`
	Temperature   json.RawMessage   `json:"temperature"`
	TopP          json.RawMessage   `json:"top_p"`
	TopK          json.RawMessage   `json:"top_k"`
	Thinking      json.RawMessage   `json:"thinking"`
	Metadata      json.RawMessage   `json:"metadata"`
	Stream        bool              `json:"stream"`
	// extra are the members the chat model has no slot for (container,
	// mcp_servers, service_tier, …): an Anthropic upstream gets them as
	// they are.
	extra map[string]json.RawMessage
	// An upstream request's system prompt (its blocks) and tools, as the
	// gateway built them: appendJSON writes them in place of System and
	// Tools.
	upSystem []json.RawMessage
	upTools  []tool
}

// Message is one message of a Request: its content as a client sent it
// (a string or blocks), or, in the body the gateway sends, its blocks.
type Message struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
	blocks  []json.RawMessage
}

// userID is the request's metadata.user_id, "" for none.
func (r *Request) userID() string {
	var md struct {
		UserID string `json:"user_id"`
	}
	if len(r.Metadata) > 0 && json.Unmarshal(r.Metadata, &md) == nil {
		return md.UserID
	}
	return ""
}

// translatedMembers are the members Chat translates; the others are extra.
var translatedMembers = []string{"model", "messages", "system", "max_tokens", "stream", "tools", "tool_choice", "stop_sequences",
	"temperature", "top_p", "top_k", "thinking", "metadata"}

// block is one content block of a message.
type block struct {
	Type         string          `json:"type"`
	Text         string          `json:"text"`
	Source       json.RawMessage `json:"source"`
	ID           string          `json:"id"`
	Name         string          `json:"name"`
	Input        json.RawMessage `json:"input"`
	ToolUseID    string          `json:"tool_use_id"`
	Content      json.RawMessage `json:"content"`
	IsError      bool            `json:"is_error"`
	Thinking     string          `json:"thinking"`
	Signature    string          `json:"signature"`
	Data         string          `json:"data"`
	CacheControl json.RawMessage `json:"cache_control"`
	ToolName     string          `json:"tool_name"`
}

// thought is a thinking block as Anthropic takes it back.
type thought struct {
	Type      string `json:"type"`
	Thinking  string `json:"thinking,omitempty"`
	Signature string `json:"signature,omitempty"`
	Data      string `json:"data,omitempty"`
}

// The bounds on content blocks, checked before any is translated: a
// block costs the translation far more than its bytes (a tiny text block
// is 27 bytes of JSON), so a request of many small blocks is refused
// with a clear 400 rather than translated at a cost that grows with
// their number. A message carries at most MaxBlocksPerMessage, as it
// carries at most wire.MaxCalls calls; a request at most MaxBlocks in
// all (its system blocks included).
const (
	MaxBlocksPerMessage = 1024
	MaxBlocks           = 20000
)

// checkBlocks applies the bounds on content blocks to the request's top
// level (as wire.ParseTop reads it), counting each content array's
// elements with the wire scanner before anything is decoded: a request
// past them costs a scan of its bytes, no more.
func checkBlocks(top *wire.Object) error {
	system, _ := top.Get("system")
	total := wire.ArrayLen(system)
	raw, _ := top.Get("messages")
	var err error
	wire.EachElement(raw, func(i int, m []byte) bool {
		content, _ := wire.Member(m, "content") // a view: nothing decoded or copied
		n := wire.ArrayLen(content)
		if n > MaxBlocksPerMessage {
			err = &wire.ParamError{Param: fmt.Sprintf("messages.%d.content", i), Msg: fmt.Sprintf("has %d content blocks; a message may carry at most %d", n, MaxBlocksPerMessage)}
			return false
		}
		if total += n; total > MaxBlocks {
			err = &wire.ParamError{Param: "messages", Msg: fmt.Sprintf("hold more than %d content blocks; a request may carry at most %d", MaxBlocks, MaxBlocks)}
			return false
		}
		return true
	})
	return err
}

// Decode reads a Messages request. A member repeated in its top level
// (or two whose names differ only in case) is refused, as for chat.
func Decode(body []byte, countTokens bool) (*Request, error) {
	top, err := wire.ParseTop(body)
	if de, ok := err.(*wire.DecodeError); ok && de.Kind == wire.KindDuplicate {
		return nil, err
	}
	if err == nil {
		if err := checkBlocks(&top); err != nil {
			return nil, err
		}
	}
	var r Request
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, &wire.ParamError{Param: "body", Msg: "must be a Messages API request (a JSON object): " + wire.Clip(err.Error())}
	}
	// The members the chat model has no slot for, as sent (views of the
	// body, which is never changed).
	for k, v := range top.Members() {
		if slices.Contains(translatedMembers, k) || strings.HasPrefix(k, wire.OwnPrefix) { // the gateway's own members, which a client never sends
			continue
		}
		if r.extra == nil {
			r.extra = map[string]json.RawMessage{}
		}
		r.extra[k] = v
	}
	switch {
	case r.Model == "":
		return nil, &wire.ParamError{Param: "model", Msg: "Field required"}
	case len(r.Messages) == 0:
		return nil, &wire.ParamError{Param: "messages", Msg: "Field required: at least one message"}
	case r.MaxTokens == nil && !countTokens:
		return nil, &wire.ParamError{Param: "max_tokens", Msg: "Field required"}
	}
	return &r, nil
}

// ChatOptions are what Chat needs besides the request.
type ChatOptions struct {
	// Protocol is the route's upstream protocol: an anthropic upstream
	// gets the client's thinking blocks, cache_control and top_k as they
	// are; the others get the thinking text as reasoning and neither of
	// the others.
	Protocol translate.Protocol
	// ReasoningField is the chat member a turn's thinking text goes in
	// for the other protocols.
	ReasoningField string
	// CarriedMember is the member an assistant turn's thinking blocks go
	// in for an anthropic upstream (the translator there reads it).
	CarriedMember string
	// Effort: for another protocol, the route takes the client's thinking
	// as a reasoning level (its reasoning block has client_effort), so it
	// becomes reasoning_effort; without it the thinking setting is left
	// out, so that a model that takes no reasoning setting is sent none.
	Effort bool
	// OrgWide are the kinds of translate.Reach the route allows (a file
	// source, a container, MCP servers, a service tier); any other is
	// refused, naming the member.
	OrgWide []string
	// HostedTools are the billed server tools (web_search, web_fetch,
	// code_execution) the route lets the upstream run
	// (translate.HostedAllowed); the others are left out (Translated.Dropped).
	HostedTools []string
}

// Translated is a Messages request as the chat path takes it.
type Translated struct {
	Chat []byte
	// DroppedCacheControl counts cache_control marks left out (an
	// upstream of another protocol has no such thing).
	DroppedCacheControl int
	// Dropped names the server tools left out, as "tool:TYPE": billed
	// tools the route does not let the upstream run (HostedTools).
	Dropped []string
}

// Chat translates the request into a chat completions request (see the
// package doc for what maps to what).
func (r *Request) Chat(o ChatOptions) (Translated, error) {
	t := translator{o: o}
	if err := r.reaches(o); err != nil {
		return Translated{}, err
	}
	tools, dropped := r.allowedTools(o.HostedTools)
	chat := map[string]any{"model": r.Model}
	var msgs []json.RawMessage
	if len(r.System) > 0 && string(r.System) != "null" {
		sys, err := t.system(r.System)
		if err != nil {
			return Translated{}, err
		}
		msgs = append(msgs, sys...)
	}
	for i, m := range r.Messages {
		out, err := t.message(i, m.Role, m.Content)
		if err != nil {
			return Translated{}, err
		}
		msgs = append(msgs, out...)
	}
	chat["messages"] = msgs
	if r.Stream {
		chat["stream"] = true
		chat["stream_options"] = map[string]bool{"include_usage": true}
	}
	if r.MaxTokens != nil {
		chat["max_tokens"] = *r.MaxTokens
	}
	if err := r.tools(chat, tools, t.keep()); err != nil {
		return Translated{}, err
	}
	if err := r.settings(chat, o); err != nil {
		return Translated{}, err
	}
	if t.keep() {
		r.keep(chat, tools)
	}
	b, err := json.Marshal(chat)
	return Translated{Chat: b, DroppedCacheControl: t.droppedCache, Dropped: dropped}, err
}

// billedTools are the server tools (by type, before its version) that
// Anthropic runs and bills per use.
var billedTools = []string{"web_search", "web_fetch", "code_execution"}

// allowedTools are the request's tools but the billed server tools the
// route does not allow, and the types of those left out ("tool:TYPE").
func (r *Request) allowedTools(allowed []string) ([]json.RawMessage, []string) {
	var dropped []string
	tools := r.Tools
	for i, raw := range r.Tools {
		var t struct {
			Type string `json:"type"`
		}
		_ = json.Unmarshal(raw, &t)
		if !translate.HostedAllowed(billedTools, t.Type) || translate.HostedAllowed(allowed, t.Type) {
			if dropped != nil {
				tools = append(tools, raw)
			}
			continue
		}
		if dropped == nil {
			tools = slices.Clone(r.Tools[:i])
		}
		dropped = append(dropped, "tool:"+wire.Clip(t.Type))
	}
	return tools, dropped
}

// reaches refuses what the request reaches past itself that the route
// does not allow (o.OrgWide): a container, MCP servers, a service tier
// other than the default, a file the upstream keeps (a document or image
// whose source is a file, a container upload).
func (r *Request) reaches(o ChatOptions) error {
	allow := func(x translate.Reach) error {
		if slices.Contains(o.OrgWide, x.Kind) {
			return nil
		}
		return x.Error()
	}
	for _, m := range [...]struct{ member, kind string }{{"container", translate.ReachContainers}, {"mcp_servers", translate.ReachMCPServers}} {
		if v, ok := r.extra[m.member]; ok && string(v) != "null" {
			if err := allow(translate.Reach{Kind: m.kind, Param: m.member}); err != nil {
				return err
			}
		}
	}
	if x, ok := translate.ServiceTier(r.extra["service_tier"], "auto", "standard_only"); ok {
		if err := allow(x); err != nil {
			return err
		}
	}
	for i, m := range r.Messages {
		if err := fileBlocks(m.Content, fmt.Sprintf("messages.%d.content", i), allow, 0); err != nil {
			return err
		}
	}
	return nil
}

// fileBlocks checks the blocks of a content array (and of the tool
// results in it) that name a file the upstream keeps.
func fileBlocks(content json.RawMessage, param string, allow func(translate.Reach) error, depth int) error {
	if len(content) == 0 || content[0] != '[' || depth > 1 {
		return nil
	}
	var bs []struct {
		Type   string `json:"type"`
		Source *struct {
			Type string `json:"type"`
		} `json:"source"`
		Content json.RawMessage `json:"content"`
	}
	if json.Unmarshal(content, &bs) != nil {
		return nil // the translation says what is wrong with it
	}
	for k, b := range bs {
		switch {
		case b.Type == "container_upload", b.Source != nil && b.Source.Type == "file":
			if err := allow(translate.Reach{Kind: translate.ReachFiles, Param: fmt.Sprintf("%s.%d", param, k)}); err != nil {
				return err
			}
		case b.Type == "tool_result":
			if err := fileBlocks(b.Content, fmt.Sprintf("%s.%d.content", param, k), allow, depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}

// keep puts what the chat model has no slot for in the request's own
// member, for an Anthropic upstream: the tools as the client declared
// them (server tools and cache_control included) and the extra members.
func (r *Request) keep(chat map[string]any, tools []json.RawMessage) {
	kept := map[string]json.RawMessage{}
	for k, v := range r.extra {
		kept[k] = v
	}
	if len(tools) > 0 {
		kept["tools"], _ = json.Marshal(tools)
	}
	if len(kept) > 0 {
		chat[translate.RequestMember] = kept
	}
}

// settings maps the sampling, stop and thinking settings.
func (r *Request) settings(chat map[string]any, o ChatOptions) error {
	p := o.Protocol
	for key, v := range map[string]json.RawMessage{"stop": r.StopSequences, "temperature": r.Temperature, "top_p": r.TopP} {
		if len(v) > 0 && string(v) != "null" {
			chat[key] = v
		}
	}
	if p == translate.Anthropic && len(r.TopK) > 0 && string(r.TopK) != "null" {
		chat["top_k"] = r.TopK
	}
	if id := r.userID(); id != "" {
		chat["user"] = id
	}
	if len(r.Thinking) == 0 || string(r.Thinking) == "null" {
		return nil
	}
	var th struct {
		Type   string `json:"type"`
		Budget int    `json:"budget_tokens"`
	}
	if json.Unmarshal(r.Thinking, &th) != nil {
		return &wire.ParamError{Param: "thinking", Msg: `must be {"type":"enabled","budget_tokens":N} or {"type":"disabled"}`}
	}
	if p == translate.Anthropic {
		chat["thinking"] = r.Thinking
		return nil
	}
	if !o.Effort {
		return nil // the route does not take the client's setting
	}
	// Another protocol: the budget as a reasoning effort, or adaptive
	// thinking's output_config.effort.
	effort := "none"
	var oc struct {
		Effort string `json:"effort"`
	}
	_ = json.Unmarshal(r.extra["output_config"], &oc)
	switch {
	case th.Type == "adaptive" && oc.Effort != "":
		effort = oc.Effort
	case th.Type != "enabled" && th.Type != "adaptive":
	case th.Budget > 0 && th.Budget < 2048:
		effort = "low"
	case th.Budget > 0 && th.Budget < 8192:
		effort = "medium"
	default:
		effort = "high"
	}
	chat["reasoning_effort"] = effort
	return nil
}

// tools maps the client tools and tool_choice; server tools are refused,
// but for an Anthropic upstream (keep), which gets them from the
// request's own member.
func (r *Request) tools(chat map[string]any, declared []json.RawMessage, keep bool) error {
	names := map[string]bool{}
	var tools []map[string]any
	for i, raw := range declared {
		var t struct {
			Type        string          `json:"type"`
			Name        string          `json:"name"`
			Description string          `json:"description"`
			InputSchema json.RawMessage `json:"input_schema"`
		}
		if json.Unmarshal(raw, &t) != nil {
			return &wire.ParamError{Param: fmt.Sprintf("tools.%d", i), Msg: "must be a tool object"}
		}
		if t.Type != "" && t.Type != "custom" {
			if keep {
				continue
			}
			return &wire.ParamError{Param: fmt.Sprintf("tools.%d.type", i), Msg: fmt.Sprintf("the server tool %q runs at Anthropic, and this gateway serves client tools only", wire.Clip(t.Type)), Unsupported: true}
		}
		if t.Name == "" {
			return &wire.ParamError{Param: fmt.Sprintf("tools.%d.name", i), Msg: "Field required"}
		}
		names[t.Name] = true
		fn := map[string]any{"name": t.Name}
		if t.Description != "" {
			fn["description"] = t.Description
		}
		if len(t.InputSchema) > 0 && string(t.InputSchema) != "null" {
			fn["parameters"] = t.InputSchema
		}
		tools = append(tools, map[string]any{"type": "function", "function": fn})
	}
	if len(tools) > 0 {
		chat["tools"] = tools
	}
	return toolChoice(r.ToolChoice, names, chat)
}

// toolChoice maps tool_choice: auto, any (required), tool (a function
// that must be among the tools), none; disable_parallel_tool_use.
func toolChoice(raw json.RawMessage, names map[string]bool, chat map[string]any) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var c struct {
		Type                   string `json:"type"`
		Name                   string `json:"name"`
		DisableParallelToolUse bool   `json:"disable_parallel_tool_use"`
	}
	if json.Unmarshal(raw, &c) != nil {
		return &wire.ParamError{Param: "tool_choice", Msg: "must be an object with a type"}
	}
	switch c.Type {
	case "auto", "none":
		chat["tool_choice"] = c.Type
	case "any":
		chat["tool_choice"] = "required"
	case "tool":
		if !names[c.Name] {
			return &wire.ParamError{Param: "tool_choice.name", Msg: fmt.Sprintf("%q is not the name of a tool in tools", wire.Clip(c.Name))}
		}
		chat["tool_choice"] = map[string]any{"type": "function", "function": map[string]string{"name": c.Name}}
	default:
		return &wire.ParamError{Param: "tool_choice.type", Msg: "must be auto, any, tool or none"}
	}
	if c.DisableParallelToolUse {
		chat["parallel_tool_calls"] = false
	}
	return nil
}

// translator turns the transcript into chat messages.
type translator struct {
	o            ChatOptions
	droppedCache int
}

// keep: the upstream is Anthropic's, and each chat message keeps the
// blocks the client sent for it (translate.BlocksMember), which that
// upstream gets as they are; blocks the chat model has no slot for are
// then carried, not refused.
func (t *translator) keep() bool { return t.o.Protocol == translate.Anthropic }

// rawBlocks are a message's content blocks as the client sent them (nil
// for a string): views of the body, not copies.
func rawBlocks(c json.RawMessage) []json.RawMessage {
	var bs []json.RawMessage
	if !wire.EachElement(c, func(_ int, elem []byte) bool {
		bs = append(bs, elem)
		return true
	}) {
		return nil
	}
	return bs
}

// blocks reads a message's content: a string is one text block.
func blocks(c json.RawMessage, param string) ([]block, error) {
	// A string (or null: no text) is one text block; only an array is
	// decoded into blocks (one pass, not a failed one first).
	if s, ok := wire.AsString(c); ok {
		return []block{{Type: "text", Text: s}}, nil
	}
	var bs []block
	if err := json.Unmarshal(c, &bs); err != nil {
		return nil, &wire.ParamError{Param: param, Msg: "must be a string or a list of content blocks"}
	}
	return bs, nil
}

// system turns the system prompt into a system message.
func (t *translator) system(raw json.RawMessage) ([]json.RawMessage, error) {
	bs, err := blocks(raw, "system")
	if err != nil {
		return nil, err
	}
	parts, err := t.parts(bs, "system", false)
	if err != nil || len(parts) == 0 {
		return nil, err
	}
	m := map[string]any{"role": "system", "content": parts}
	if raws := rawBlocks(raw); t.keep() && raws != nil {
		m[translate.BlocksMember] = raws
	}
	b, _ := json.Marshal(m)
	return []json.RawMessage{b}, nil
}

// message translates message i: a user message's tool_result blocks
// become tool messages, first, then its other blocks one user message;
// an assistant message's text, thinking and tool_use blocks one
// assistant message.
func (t *translator) message(i int, role string, content json.RawMessage) ([]json.RawMessage, error) {
	param := fmt.Sprintf("messages.%d.content", i)
	bs, err := blocks(content, param)
	if err != nil {
		return nil, err
	}
	raws := rawBlocks(content)
	if !t.keep() || len(raws) != len(bs) || len(raws) == 0 {
		raws = nil
	}
	switch role {
	case "user":
		return t.user(bs, raws, param)
	case "assistant":
		m, err := t.assistant(bs, raws, param)
		if err != nil || m == nil {
			return nil, err
		}
		return []json.RawMessage{m}, nil
	case "system":
		// A system message in the conversation (Claude Code sends its
		// environment so to the newest models): a system message in
		// its place.
		return t.system(content)
	}
	return nil, &wire.ParamError{Param: fmt.Sprintf("messages.%d.role", i), Msg: "must be user, assistant or system"}
}

// user translates a user message; raws are its blocks as sent, when they
// are kept (each tool message keeps its tool_result block, the user
// message the others).
func (t *translator) user(bs []block, raws []json.RawMessage, param string) ([]json.RawMessage, error) {
	var out []json.RawMessage
	var rest []block
	var restRaw []json.RawMessage
	for k, b := range bs {
		if b.Type != "tool_result" {
			rest = append(rest, b)
			if raws != nil {
				restRaw = append(restRaw, raws[k])
			}
			continue
		}
		text, err := resultText(b, fmt.Sprintf("%s.%d.content", param, k))
		if err != nil {
			return nil, err
		}
		m := map[string]any{"role": "tool", "tool_call_id": b.ToolUseID, "content": text}
		if raws != nil {
			m[translate.BlocksMember] = raws[k : k+1]
		}
		b, _ := json.Marshal(m)
		out = append(out, b)
	}
	parts, err := t.parts(rest, param, true)
	if err != nil {
		return nil, err
	}
	if len(parts) > 0 || len(restRaw) > 0 {
		m := map[string]any{"role": "user", "content": parts}
		if len(parts) == 0 {
			m["content"] = "" // blocks the chat model has no slot for (a document, …), which the kept blocks carry
		}
		if len(restRaw) > 0 {
			m[translate.BlocksMember] = restRaw
		}
		b, _ := json.Marshal(m)
		out = append(out, b)
	}
	return out, nil
}

// resultText is a tool_result's content as text (an error marked so).
func resultText(b block, param string) (string, error) {
	text := ""
	if len(b.Content) > 0 && string(b.Content) != "null" {
		bs, err := blocks(b.Content, param)
		if err != nil {
			return "", err
		}
		var sb strings.Builder
		for _, c := range bs {
			switch c.Type {
			case "text":
				sb.WriteString(c.Text)
			case "tool_reference":
				// Tool search (advanced-tool-use): the tool it found is
				// declared in full on a route to another protocol.
				if sb.Len() > 0 {
					sb.WriteString("\n")
				}
				sb.WriteString("Tool loaded: " + c.ToolName)
			}
		}
		text = sb.String()
	}
	if b.IsError {
		text = "Error: " + text
	}
	return text, nil
}

// parts turns text and image blocks into chat content parts.
func (t *translator) parts(bs []block, param string, images bool) ([]map[string]any, error) {
	var out []map[string]any
	for k, b := range bs {
		var p map[string]any
		switch {
		case b.Type == "text":
			if b.Text == "" {
				continue
			}
			p = map[string]any{"type": "text", "text": b.Text}
		case b.Type == "image" && images && !(t.keep() && !imageSource(b.Source)):
			url, err := imageURL(b.Source, fmt.Sprintf("%s.%d.source", param, k))
			if err != nil {
				return nil, err
			}
			p = map[string]any{"type": "image_url", "image_url": map[string]string{"url": url}}
		case t.keep():
			continue // a block the chat model has no slot for, carried as it is
		default:
			return nil, &wire.ParamError{Param: fmt.Sprintf("%s.%d.type", param, k), Msg: fmt.Sprintf("a %q block cannot be sent here", wire.Clip(b.Type)), Unsupported: true}
		}
		if len(b.CacheControl) > 0 && string(b.CacheControl) != "null" {
			if t.o.Protocol == translate.Anthropic {
				p["cache_control"] = b.CacheControl
			} else {
				t.droppedCache++
			}
		}
		out = append(out, p)
	}
	return out, nil
}

// imageSource reports an image source that imageURL can translate.
func imageSource(raw json.RawMessage) bool {
	var s struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(raw, &s)
	return s.Type == "base64" || s.Type == "url"
}

// imageURL turns an image source into a URL: base64 data as a data: URL.
func imageURL(raw json.RawMessage, param string) (string, error) {
	var s struct {
		Type      string `json:"type"`
		MediaType string `json:"media_type"`
		Data      string `json:"data"`
		URL       string `json:"url"`
	}
	_ = json.Unmarshal(raw, &s)
	switch s.Type {
	case "base64":
		return "data:" + s.MediaType + ";base64," + s.Data, nil
	case "url":
		return s.URL, nil
	}
	return "", &wire.ParamError{Param: param, Msg: "must be a base64 or url image source", Unsupported: true}
}

// assistant translates an assistant message; raws are its blocks as sent,
// when they are kept.
func (t *translator) assistant(bs []block, raws []json.RawMessage, param string) (json.RawMessage, error) {
	var text, reasoning strings.Builder
	var thoughts []thought
	var calls []map[string]any
	for k, b := range bs {
		switch b.Type {
		case "text":
			text.WriteString(b.Text)
			if len(b.CacheControl) > 0 && t.o.Protocol != translate.Anthropic {
				t.droppedCache++
			}
		case "thinking":
			reasoning.WriteString(b.Thinking)
			if b.Signature != "" { // unsigned, it is no use to Anthropic: the gateway's store restores the signed one
				thoughts = append(thoughts, thought{Type: b.Type, Thinking: b.Thinking, Signature: b.Signature})
			}
		case "redacted_thinking":
			thoughts = append(thoughts, thought{Type: b.Type, Data: b.Data})
		case "tool_use":
			input := strings.TrimSpace(string(b.Input))
			if input == "" || input == "null" {
				input = "{}"
			}
			calls = append(calls, map[string]any{"id": b.ID, "type": "function", "function": map[string]string{"name": b.Name, "arguments": input}})
		default:
			if raws != nil {
				continue // a server tool's use or result, …: carried as it is
			}
			return nil, &wire.ParamError{Param: fmt.Sprintf("%s.%d.type", param, k), Msg: fmt.Sprintf("a %q block cannot be sent here", wire.Clip(b.Type)), Unsupported: true}
		}
	}
	m := map[string]any{"role": "assistant", "content": nil}
	if text.Len() > 0 {
		m["content"] = text.String()
	}
	if len(calls) > 0 {
		m["tool_calls"] = calls
	}
	switch {
	case t.o.Protocol == translate.Anthropic && len(thoughts) > 0 && t.o.CarriedMember != "":
		enc, _ := json.Marshal(thoughts)
		m[t.o.CarriedMember] = string(enc)
	case t.o.Protocol != translate.Anthropic && reasoning.Len() > 0 && t.o.ReasoningField != "":
		m[t.o.ReasoningField] = reasoning.String()
	}
	if raws != nil {
		m[translate.BlocksMember] = raws
	}
	if m["content"] == nil && len(calls) == 0 && m[t.o.CarriedMember] == nil && raws == nil {
		return nil, nil // an empty turn: nothing to send
	}
	return json.Marshal(m)
}
