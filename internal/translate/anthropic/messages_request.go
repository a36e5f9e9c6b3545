package anthropic

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/toolgate/toolgate/internal/translate"
	"github.com/toolgate/toolgate/internal/wire"
)

// Request is a Messages API request body, the one declaration of it for
// both directions: a POST /v1/messages (or count_tokens) body as a client
// sent it (Decode), and the body the gateway sends an Anthropic upstream
// (UpstreamRequest fills it, appendHead and appendTail write it).
type Request struct {
	Model     string          `json:"model"`
	MaxTokens *int            `json:"max_tokens"`
	System    json.RawMessage `json:"system"`
	// msgs is a client's messages array as sent, which Decode checked,
	// and index where each message's role and content are in it
	// (eachMessage reads them): 12 bytes a message, where a list of
	// views would take 40.
	msgs  json.RawMessage
	index []message
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
	// blocks counts the content blocks of the system prompt and messages.
	blocks int
	// extra are the members the chat model has no slot for (container,
	// mcp_servers, service_tier, …): an Anthropic upstream gets them as
	// they are (appendTail writes an upstream request's after its own).
	extra map[string]json.RawMessage
	// An upstream request's system prompt (its blocks) and tools, as the
	// gateway built them: appendHead and appendTail write them in place
	// of System and Tools.
	upSystem []json.RawMessage
	upTools  []tool
	// keptTools are the tools as a client declared them, sent in place
	// of upTools (withKept).
	keptTools json.RawMessage
	// vertex: the body goes to Claude on Vertex AI (the model in the
	// path, anthropic_version in the body).
	vertex bool
}

// Message is one message of a Request: its content as a client sent it
// (a string or blocks).
type Message struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
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
func checkBlocks(top *wire.Object) (int, error) {
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
	return total, err
}

// Decode reads a Messages request. A member repeated in its top level
// (or two whose names differ only in case) is refused, as for chat. The
// request refers to body's bytes (its messages' content and the raw
// members are views of it), which must not change afterwards.
func Decode(body []byte, countTokens bool) (*Request, error) {
	top, err := wire.ParseTop(body)
	if de, ok := err.(*wire.DecodeError); ok && de.Kind == wire.KindDuplicate {
		return nil, err
	}
	if err != nil {
		return nil, notRequest(err.Error())
	}
	blocks, err := checkBlocks(&top)
	if err != nil {
		return nil, err
	}
	r := Request{blocks: blocks}
	for k, v := range top.Members() {
		if err := r.member(k, v); err != nil {
			return nil, err
		}
	}
	switch {
	case r.Model == "":
		return nil, &wire.ParamError{Param: "model", Msg: "Field required"}
	case len(r.index) == 0:
		return nil, &wire.ParamError{Param: "messages", Msg: "Field required: at least one message"}
	case r.MaxTokens == nil && !countTokens:
		return nil, &wire.ParamError{Param: "max_tokens", Msg: "Field required"}
	}
	return &r, nil
}

// notRequest is the error for a body that is no Messages request.
func notRequest(why string) error {
	return &wire.ParamError{Param: "body", Msg: "must be a Messages API request (a JSON object): " + wire.Clip(why)}
}

// member reads the top-level member k, whose value is v (a view of the
// body, kept as it is for the raw members): the members the chat model
// has no slot for are extra, but the gateway's own, which a client never
// sends.
func (r *Request) member(k string, v json.RawMessage) error {
	var into any
	switch k {
	case "model":
		into = &r.Model
	case "max_tokens":
		into = &r.MaxTokens
	case "stream":
		into = &r.Stream
	case "messages":
		return r.messages(v)
	case "tools":
		into = &r.Tools
	case "system":
		r.System = v
	case "tool_choice":
		r.ToolChoice = v
	case "stop_sequences":
		r.StopSequences = v
	case "temperature":
		r.Temperature = v
	case "top_p":
		r.TopP = v
	case "top_k":
		r.TopK = v
	case "thinking":
		r.Thinking = v
	case "metadata":
		r.Metadata = v
	default:
		if !strings.HasPrefix(k, wire.OwnPrefix) {
			if r.extra == nil {
				r.extra = map[string]json.RawMessage{}
			}
			r.extra[k] = v
		}
	}
	if into != nil {
		if err := json.Unmarshal(v, into); err != nil {
			return notRequest(k + ": " + err.Error())
		}
	}
	return nil
}

// message is where a message's content is in the messages array (from
// at to end: none for end 0) and its role.
type message struct {
	at, end uint32
	role    role
}

// role is a message's role, as messages read it.
type role uint8

const (
	noRole role = iota
	userRole
	assistantRole
	systemRole
	otherRole
)

// roleNames are the roles' names, as Chat takes them (a role none of
// the others is refused).
var roleNames = [...]string{noRole: "", userRole: "user", assistantRole: "assistant", systemRole: "system", otherRole: "other"}

// messages checks the messages, each in place (its role, and its
// content as sent), and indexes them.
func (r *Request) messages(v json.RawMessage) error {
	if string(v) == "null" {
		return nil
	}
	if uint64(len(v)) > math.MaxUint32 {
		return notRequest("messages is longer than 4 GiB") // where the index says a message is: 32 bits
	}
	r.index = make([]message, 0, wire.ArrayLen(v))
	var err error
	if !wire.EachElement(v, func(i int, elem []byte) bool {
		var m message
		ok := wire.EachMember(elem, func(k string, c []byte) bool {
			switch k {
			case "role":
				m.role, err = roleOf(c, i)
			case "content":
				m.at = uint32(cap(v) - cap(c)) // c is a view of v: where it starts in it
				m.end = m.at + uint32(len(c))
			default:
				err = wire.CaseVariant(k, messageMembers, fmt.Sprintf("messages.%d", i))
			}
			return err == nil
		})
		if ok && err == nil {
			r.index = append(r.index, m)
			return true
		}
		if err == nil {
			err = notRequest(fmt.Sprintf("messages.%d must be an object", i))
		}
		return false
	}) && err == nil {
		err = notRequest("messages must be an array of messages")
	}
	r.msgs = v
	return err
}

// eachMessage calls fn with each message, its content a view of the
// body, until fn returns an error, which it returns.
func (r *Request) eachMessage(fn func(i int, m Message) error) error {
	for i, x := range r.index {
		m := Message{Role: roleNames[x.role]}
		if x.end > 0 {
			m.Content = r.msgs[x.at:x.end]
		}
		if err := fn(i, m); err != nil {
			return err
		}
	}
	return nil
}

// messageMembers are the members of a message the translator reads: one
// spelled in another case is refused, not read or passed on.
var messageMembers = []string{"role", "content"}

// roleOf reads a message's role.
func roleOf(v []byte, i int) (role, error) {
	switch string(v) {
	case `"user"`:
		return userRole, nil
	case `"assistant"`:
		return assistantRole, nil
	case "null":
		return noRole, nil
	}
	s, ok := wire.String(v)
	switch {
	case !ok:
		return noRole, notRequest(fmt.Sprintf("messages.%d.role must be a string", i))
	case s == "user":
		return userRole, nil // escaped
	case s == "assistant":
		return assistantRole, nil
	case s == "system":
		return systemRole, nil
	case s == "":
		return noRole, nil
	}
	return otherRole, nil
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
	// Apart: the long strings of the messages' content (a user's text, a
	// tool result's) are not copied into the chat request but named by
	// their index in Translated.Strings (translate.ChatWriter), for an
	// upstream translator that reads the decoded messages (every
	// protocol but chat completions).
	Apart bool
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
	// Kept, for an Anthropic upstream, are the blocks the chat messages
	// keep (translate.BlocksMember names them by their index in it):
	// views of the body, for wire.ChatRequest.Kept.
	Kept []json.RawMessage
	// Strings, with Apart, are the strings put apart, which the messages
	// name by their index here (for wire.DecodeTranslated): views of
	// the body.
	Strings []json.RawMessage
}

// Chat translates the request into a chat completions request (see the
// package doc for what maps to what).
func (r *Request) Chat(o ChatOptions) (Translated, error) {
	if err := r.reaches(o); err != nil {
		return Translated{}, err
	}
	tools, dropped := r.allowedTools(o.HostedTools)
	size, named := r.chatSize(o)
	t := translator{o: o, ChatWriter: translate.ChatWriter{Buf: make([]byte, 0, size), Apart: o.Apart}}
	if t.keep() {
		t.kept = make([]json.RawMessage, 0, r.blocks)
	}
	if named > 0 {
		t.Strings = make([]json.RawMessage, 0, named)
	}
	t.Buf = append(t.Buf, `{"messages":[`...)
	if len(r.System) > 0 && string(r.System) != "null" {
		if err := t.system(r.System, systemPlace); err != nil {
			return Translated{}, err
		}
	}
	if err := r.eachMessage(func(i int, m Message) error { return t.message(i, m.Role, m.Content) }); err != nil {
		return Translated{}, err
	}
	t.Buf = append(t.Buf, ']')
	// The other members, few and small, marshalled after the messages.
	chat := map[string]any{"model": r.Model}
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
	rest, err := json.Marshal(chat)
	if err != nil {
		return Translated{}, err
	}
	b := append(append(t.Buf, ','), rest[1:]...) // rest has at least the model
	return Translated{Chat: b, DroppedCacheControl: t.droppedCache, Dropped: dropped, Kept: t.kept, Strings: t.Strings}, nil
}

// chatSize is about the length of the chat body Chat writes: the
// content it reads (with Apart, but the strings that go apart, each
// named by its index instead: translate.ChatWriter), for an Anthropic
// upstream the index of each block a message keeps (Translated.Kept),
// and the other members; and the number of strings that go apart.
func (r *Request) chatSize(o ChatOptions) (size, named int) {
	n := 512 + len(r.System) + 40*(len(r.index)+1)
	_ = r.eachMessage(func(_ int, m Message) error {
		n += len(m.Content)
		if o.Apart && m.Role == "user" {
			eachApart(m.Content, func(tok []byte) {
				n, named = n-len(tok)+apartName, named+1
			})
		}
		return nil
	})
	if o.Protocol == translate.Anthropic {
		n += 24 * r.blocks // a kept block's index, and its message's member
	}
	// The other members, which it may write twice (the tools translated
	// and, for an Anthropic upstream, as declared).
	for _, t := range r.Tools {
		n += 2 * len(t)
	}
	for _, v := range r.extra {
		n += len(v)
	}
	return n + n/16, named
}

// apartName is what naming a string put apart costs the chat message
// more than its content member's name would: `"toolgate_content":`
// against `"content":`, and the index.
const apartName = 16

// eachApart calls fn with each string of a user message's content that
// goes apart (translate.Apart) when Chat writes it: the content itself
// when a string, and a tool_result's string but an error's.
func eachApart(content []byte, fn func(tok []byte)) {
	if tok, ok := wire.StringToken(content); ok {
		if translate.Apart(tok) {
			fn(tok)
		}
		return
	}
	wire.EachElement(content, func(_ int, b []byte) bool {
		var result, isError bool
		var text []byte
		wire.EachMember(b, func(k string, v []byte) bool {
			switch k {
			case "type":
				result = wire.StringIs(v, "tool_result")
			case "is_error":
				isError = string(v) == "true"
			case "content":
				text, _ = wire.StringToken(v)
			}
			return true
		})
		if result && !isError && translate.Apart(text) {
			fn(text)
		}
		return true
	})
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
	return r.eachMessage(func(i int, m Message) error {
		return fileBlocks(m.Content, place{msg: i, block: -1}, allow) // nothing but for an array
	})
}

// fileBlocks checks the blocks of a content array (and of the tool
// results in it) that name a file the upstream keeps, read in place; at
// names the content, for the error only.
func fileBlocks(content json.RawMessage, at place, allow func(translate.Reach) error) error {
	if len(content) == 0 || content[0] != '[' {
		return nil
	}
	var err error
	wire.EachElement(content, func(k int, b []byte) bool {
		typ, _ := wire.Member(b, "type")
		source, _ := wire.Member(b, "source")
		sourceType, _ := wire.Member(source, "type")
		switch {
		case wire.StringIs(typ, "container_upload"), wire.StringIs(sourceType, "file"):
			err = allow(translate.Reach{Kind: translate.ReachFiles, Param: fmt.Sprintf("%s.%d", at, k)})
		case wire.StringIs(typ, "tool_result") && at.block < 0:
			inner, _ := wire.Member(b, "content")
			err = fileBlocks(inner, place{msg: at.msg, block: k}, allow)
		}
		return err == nil
	})
	return err
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
