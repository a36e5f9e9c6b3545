package responses

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/toolgate/toolgate/internal/translate"
	"github.com/toolgate/toolgate/internal/wire"
)

// Request is a decoded POST /v1/responses body.
type Request struct {
	Model  string
	Stream bool
	// Store is false when the client said store: false.
	Store bool
	// PreviousResponseID names a stored response to continue.
	PreviousResponseID string
	// Input is the conversation as items (a string input is one user
	// message item), before any previous response's are put in front.
	Input []json.RawMessage

	members map[string]json.RawMessage
	// namespaced: the functions of its namespace tools (Unflatten).
	namespaced map[string][2]string
}

// Echo returns a member of the request as sent (nil when absent), for
// the response object that repeats it.
func (r *Request) Echo(key string) json.RawMessage { return r.members[key] }

// Decode reads a Responses request.
func Decode(body []byte) (*Request, error) {
	// The top level is scanned as chat's is first: a repeated member, or
	// two whose names differ only in case, is refused.
	top, err := wire.ParseTop(body)
	if de, ok := errors.AsType[*wire.DecodeError](err); ok && de.Kind == wire.KindDuplicate {
		return nil, err
	}
	if err != nil {
		return nil, &wire.ParamError{Param: "body", Msg: "must be a JSON object (a Responses API request)"}
	}
	// The members as sent: views of the body, which is never changed, so
	// that a request refused by a bound below costs no copy of it.
	members := map[string]json.RawMessage{}
	for k, v := range top.Members() {
		members[k] = v
	}
	r := &Request{members: members, Store: true}
	if err := str(members, "model", &r.Model); err != nil || r.Model == "" {
		return nil, &wire.ParamError{Param: "model", Msg: "is required: a string naming the model"}
	}
	for _, k := range []string{"stream", "store"} {
		if v, ok := members[k]; ok && string(v) != "null" {
			var b bool
			if json.Unmarshal(v, &b) != nil {
				return nil, &wire.ParamError{Param: k, Msg: "must be a boolean"}
			}
			if k == "stream" {
				r.Stream = b
			} else {
				r.Store = b
			}
		}
	}
	if err := str(members, "previous_response_id", &r.PreviousResponseID); err != nil {
		return nil, err
	}
	for _, c := range []struct {
		param string
		r     wire.Range
	}{{"max_output_tokens", wire.OutputTokens}, {"temperature", wire.Temperature}, {"top_p", wire.TopP}} {
		if err := wire.CheckNumber(c.param, members[c.param], c.r); err != nil {
			return nil, err
		}
	}
	for _, k := range []string{"background", "conversation", "prompt"} {
		if v, ok := members[k]; ok && string(v) != "null" && string(v) != "false" {
			return nil, &wire.ParamError{Param: k, Msg: "is not supported by this gateway", Unsupported: true}
		}
	}
	input, ok := members["input"]
	switch {
	case !ok || string(input) == "null":
		if r.PreviousResponseID == "" {
			return nil, &wire.ParamError{Param: "input", Msg: "is required: a string or an array of input items"}
		}
	case input[0] == '"':
		var s string
		_ = json.Unmarshal(input, &s)
		item, _ := json.Marshal(map[string]string{"type": "message", "role": "user", "content": s})
		r.Input = []json.RawMessage{item}
	default:
		items, ok := wire.Elements(input)
		if !ok || input[0] != '[' {
			return nil, &wire.ParamError{Param: "input", Msg: "must be a string or an array of input items"}
		}
		r.Input = items
	}
	r.namespaced = namespaced(r.declared())
	return r, checkParts(r.Input)
}

// The bounds on content parts, checked before any item is translated: a
// part costs the translation far more than its bytes, so a request of
// many small parts is refused with a clear 400 rather than translated at
// a cost that grows with their number. An item carries at most
// MaxPartsPerItem; a request at most MaxParts in all. (The items
// themselves are bounded by the gateway's server.max_messages.)
const (
	MaxPartsPerItem = 1024
	MaxParts        = 20000
)

// checkParts applies the bounds on content parts, counting each item's
// content array's elements without decoding them.
func checkParts(items []json.RawMessage) error {
	total := 0
	for i, raw := range items {
		content, _ := wire.Member(raw, "content") // a view of the item's bytes, nothing decoded or copied
		n := wire.ArrayLen(content)
		if n > MaxPartsPerItem {
			return &wire.ParamError{Param: fmt.Sprintf("input[%d].content", i), Msg: fmt.Sprintf("has %d content parts; an item may carry at most %d", n, MaxPartsPerItem)}
		}
		if total += n; total > MaxParts {
			return &wire.ParamError{Param: "input", Msg: fmt.Sprintf("holds more than %d content parts; a request may carry at most %d", MaxParts, MaxParts)}
		}
	}
	return nil
}

// namespaced maps each function name NamespaceSep makes from a namespace
// tool to that tool's namespace and function name.
func namespaced(tools []tool, _ error) map[string][2]string {
	var out map[string][2]string
	for _, t := range tools {
		if t.Type != "namespace" {
			continue
		}
		for _, f := range t.Tools {
			if out == nil {
				out = map[string][2]string{}
			}
			out[t.Name+NamespaceSep+f.Name] = [2]string{t.Name, f.Name}
		}
	}
	return out
}

// str reads an optional string member.
func str(members map[string]json.RawMessage, key string, dst *string) error {
	v, ok := members[key]
	if !ok || string(v) == "null" {
		return nil
	}
	if json.Unmarshal(v, dst) != nil {
		return &wire.ParamError{Param: key, Msg: "must be a string"}
	}
	return nil
}

// ChatOptions are what Translate needs besides the request.
type ChatOptions struct {
	// OutputLimitField is the chat member max_output_tokens goes in
	// (the upstream's output_limit_field).
	OutputLimitField string
	// ReasoningField is the member reasoning items' summaries go in on
	// the assistant turn that follows them.
	ReasoningField string
	// CarriedMember, for a Responses upstream, is the member in which the
	// reasoning items the client sent back with their encrypted content
	// (sealed by the gateway, see seal.go) go to the upstream translator,
	// with the turn's calls, as a Carried — byte for byte but for the
	// unsealing.
	CarriedMember string
	// Keep, for a Responses upstream: each chat message keeps the items
	// the client sent for it (translate.ItemsMember: their indices in
	// Translate's items, which the caller gives wire.DecodeTranslated as
	// the request's Kept), and the request the client's tools and the
	// members the chat model lacks (translate.ResponsesRequestMember);
	// items, parts and tools the chat model has no slot for are carried,
	// not refused.
	Keep bool
	// Effort: the client's reasoning.effort becomes reasoning_effort, for
	// an upstream of this API (its own member) or a route that takes the
	// client's effort (client_effort); elsewhere it is left out, so that
	// a model that takes no reasoning setting is sent none.
	Effort bool
	// OrgWide are the kinds of translate.Reach the route allows (an item
	// reference, a file, vector stores, MCP servers, a container, a
	// service tier); any other is refused, naming the member.
	OrgWide []string
	// HostedTools are the hosted tools the route lets the upstream run
	// at the gateway's cost (translate.HostedAllowed); the others are left
	// out on every route (Unallowed names them), their past calls kept.
	HostedTools []string
	// DropHosted: for an upstream of another protocol, hosted tools
	// (web_search, file_search, …), which it cannot run, are left out
	// (HostedTools names them) instead of refused, and their calls in
	// the input with them.
	DropHosted bool
	// Apart: the long strings of the items' content (a message's, an
	// output's) and the instructions are not copied into the chat
	// request but named by their index in Translated.Strings
	// (translate.ChatWriter), for an upstream translator that reads the
	// decoded messages (every protocol but chat completions).
	Apart bool
	// Previous, with Keep, is the response the conversation continues, as
	// the upstream keeps it: the chat messages made from its items (the
	// first Items of the conversation) are marked, so that the upstream's
	// translator can send its id instead of them.
	Previous *Previous
}

// Previous is a response an upstream keeps: its id there, the upstream,
// and how many of the conversation's first items it stands for.
type Previous struct {
	ID, Upstream string
	Items        int
}

// translatedMembers are the members Translate translates (or Decode refuses);
// the others go to a Responses upstream as they are, with Keep.
var translatedMembers = []string{"model", "input", "instructions", "stream", "store", "previous_response_id", "tools", "tool_choice",
	"parallel_tool_calls", "temperature", "top_p", "metadata", "user", "max_output_tokens", "reasoning", "text", "background",
	"conversation", "prompt", "stream_options"}

// Translated is a request translated into a chat completions request.
type Translated struct {
	Chat []byte
	// Strings, with Apart, are the strings put apart, which the messages
	// name by their index here (for wire.DecodeTranslated): views of the
	// items. (With Keep, the messages name the items they keep by their
	// index in the conversation's items.)
	Strings []json.RawMessage
}

// Translate returns the chat completions request for the conversation
// items (the previous response's, then this request's), and what its
// messages name by index.
func (r *Request) Translate(items []json.RawMessage, o ChatOptions) (Translated, error) {
	if err := r.reaches(items, o); err != nil {
		return Translated{}, err
	}
	if o.Previous != nil {
		p := *o.Previous // flush sets Items to 0 when a turn spans its end
		o.Previous = &p
	}
	size, named := r.chatSize(items, o.Keep, o.Apart)
	c := conversation{o: o, ChatWriter: translate.ChatWriter{Buf: make([]byte, 0, size), Apart: o.Apart}}
	if named > 0 {
		c.Strings = make([]json.RawMessage, 0, named)
	}
	c.Buf = append(c.Buf, `{"messages":[`...)
	if v := r.members["instructions"]; v != nil && string(v) != "null" {
		tok, ok := wire.StringToken(v)
		if !ok {
			return Translated{}, &wire.ParamError{Param: "instructions", Msg: "must be a string"}
		}
		c.Next("system")
		c.Content(tok)
		c.Buf = append(c.Buf, '}')
	}
	if err := c.messages(items); err != nil {
		return Translated{}, err
	}
	c.Buf = append(c.Buf, ']')
	// The other members, few and small, marshalled after the messages.
	chat := map[string]any{"model": r.Model}
	if o.Keep {
		r.keep(chat, o.HostedTools)
		if o.Previous != nil && o.Previous.Items > 0 {
			chat[translate.PreviousMember] = map[string]string{"id": o.Previous.ID, "upstream": o.Previous.Upstream}
		}
	}
	if r.Stream {
		chat["stream"] = true
		chat["stream_options"] = map[string]bool{"include_usage": true}
	}
	if err := r.tools(chat, o); err != nil {
		return Translated{}, err
	}
	limit := o.OutputLimitField
	if limit == "" {
		limit = "max_tokens"
	}
	for from, to := range map[string]string{"parallel_tool_calls": "parallel_tool_calls", "temperature": "temperature", "top_p": "top_p",
		"metadata": "metadata", "user": "user", "max_output_tokens": limit} {
		if v := r.members[from]; v != nil && string(v) != "null" {
			chat[to] = v
		}
	}
	if err := r.reasoningAndFormat(chat, o.Effort); err != nil {
		return Translated{}, err
	}
	rest, err := json.Marshal(chat)
	if err != nil {
		return Translated{}, err
	}
	return Translated{Chat: append(append(c.Buf, ','), rest[1:]...), Strings: c.Strings}, nil // rest has at least the model
}

// chatSize is about the length of the chat body Translate writes: the
// items it reads (with keep, the index of each beside its chat form;
// with apart, but the strings that go apart, each named by its index
// instead), and the other members, which it may write twice (the tools
// translated and, with keep, as declared); and the number of strings
// that go apart.
func (r *Request) chatSize(items []json.RawMessage, keep, apart bool) (size, named int) {
	n := 512
	put := func(tok []byte) {
		if apart && translate.Apart(tok) {
			// Its name and index fit in the item's 24 bytes, with the
			// member's name it replaces ("content", "output").
			n, named = n-len(tok), named+1
		}
	}
	for _, it := range items {
		n += len(it) + 24 // the chat form of an item is about its length: a call's is longer, an output's shorter
		if keep {
			n += 24 // `,"toolgate_items":[` and the index
		}
		if apart {
			eachApart(it, put)
		}
	}
	for k, v := range r.members {
		switch k {
		case "input":
		case "instructions":
			n += len(v) + 24
			if tok, ok := wire.StringToken(v); ok {
				put(tok)
			}
		default:
			n += 2 * len(v)
		}
	}
	return n + n/16, named
}

// eachApart calls fn with the string of an input item that Translate
// may put apart: a user's, system's or developer's message content, or a
// function_call_output's output, when a string.
func eachApart(item []byte, fn func(tok []byte)) {
	var typ, role, content, output []byte
	wire.EachMember(item, func(k string, v []byte) bool {
		switch k {
		case "type":
			typ = v
		case "role":
			role = v
		case "content":
			content = v
		case "output":
			output = v
		}
		return true
	})
	switch {
	case (typ == nil || wire.StringIs(typ, "message")) && !wire.StringIs(role, "assistant"):
		if tok, ok := wire.StringToken(content); ok && tok != nil {
			fn(tok)
		}
	case wire.StringIs(typ, "function_call_output"):
		if tok, ok := wire.StringToken(output); ok && tok != nil {
			fn(tok)
		}
	}
}

// keep puts what the chat model has no slot for in the request's own
// member, for a Responses upstream: the tools as the client declared them
// (hosted tools included) and the members it does not translate.
func (r *Request) keep(chat map[string]any, hostedTools []string) {
	kept := map[string]json.RawMessage{}
	for k, v := range r.members {
		if !slices.Contains(translatedMembers, k) && !strings.HasPrefix(k, wire.OwnPrefix) {
			kept[k] = v
		}
	}
	if v := r.members["tools"]; v != nil && string(v) != "null" {
		kept["tools"] = v
		if len(r.Unallowed(hostedTools)) > 0 {
			var tools []json.RawMessage
			_ = json.Unmarshal(v, &tools)
			tools = slices.DeleteFunc(tools, func(raw json.RawMessage) bool {
				var t tool
				_ = json.Unmarshal(raw, &t)
				return unallowed(t.Type, hostedTools)
			})
			kept["tools"], _ = json.Marshal(tools)
		}
	}
	if len(kept) > 0 {
		chat[translate.ResponsesRequestMember] = kept
	}
}

// tool is a tool as the translator reads it: a function tool, or a
// namespace tool with the function tools it groups.
type tool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
	Tools       []tool          `json:"tools,omitempty"`
}

// NamespaceSep joins a namespace tool's name and the name of a function
// it groups into the one function name the chat model has for it
// (multi_agent_v1__spawn_agent): every protocol's function names allow
// it. A call of that name goes back to a Responses API client as the
// function and its namespace (Unflatten).
const NamespaceSep = "__"

// Unflatten maps a function name made by NamespaceSep from a namespace
// tool the request declares back to its namespace and name; ok is false
// for any other name.
func (r *Request) Unflatten(name string) (namespace, fn string, ok bool) {
	if r == nil {
		return "", "", false
	}
	n, ok := r.namespaced[name]
	return n[0], n[1], ok
}

// HostedTools names the tools an upstream of another protocol cannot run
// (hosted), which DropHosted leaves out. A tool the client runs that the
// chat model has no slot for (a custom tool, the local shell) is refused
// rather than left out unseen.
func (r *Request) HostedTools() []string {
	tools, _ := r.declared()
	var out []string
	for _, t := range tools {
		if hosted(t.Type) {
			out = append(out, wire.Clip(t.Type))
		}
	}
	return out
}

// Unallowed names the hosted tools the request declares that allowed
// (routes[].hosted_tools) does not let the upstream run at the gateway's
// cost: left out on every route.
func (r *Request) Unallowed(allowed []string) []string {
	tools, _ := r.declared()
	var out []string
	for _, t := range tools {
		if unallowed(t.Type, allowed) {
			out = append(out, wire.Clip(t.Type))
		}
	}
	return out
}

// unallowed reports a hosted tool type allowed does not list.
func unallowed(typ string, allowed []string) bool {
	return hosted(typ) && !translate.HostedAllowed(allowed, typ)
}

// reaches refuses what the request reaches past itself that the route
// does not allow (o.OrgWide): an item reference, a file part naming a
// file the upstream keeps (or a URL it fetches), file_search's vector
// stores, an MCP server, a container named by id, a service tier other
// than the default.
func (r *Request) reaches(items []json.RawMessage, o ChatOptions) error {
	allow := func(kind, param string) error {
		if slices.Contains(o.OrgWide, kind) {
			return nil
		}
		return translate.Reach{Kind: kind, Param: param}.Error()
	}
	if x, ok := translate.ServiceTier(r.members["service_tier"], "auto", "default"); ok {
		if err := allow(x.Kind, x.Param); err != nil {
			return err
		}
	}
	if v := r.members["tools"]; v != nil && string(v) != "null" {
		var tools []struct {
			Type           string          `json:"type"`
			VectorStoreIDs json.RawMessage `json:"vector_store_ids"`
			Container      json.RawMessage `json:"container"`
		}
		_ = json.Unmarshal(v, &tools)
		for i, t := range tools {
			var err error
			switch {
			case unallowed(t.Type, o.HostedTools): // left out
			case t.Type == "file_search":
				err = allow(translate.ReachVectorStores, fmt.Sprintf("tools[%d].vector_store_ids", i))
			case t.Type == "mcp":
				err = allow(translate.ReachMCPServers, fmt.Sprintf("tools[%d]", i))
			case len(t.Container) > 0 && t.Container[0] == '"':
				err = allow(translate.ReachContainers, fmt.Sprintf("tools[%d].container", i))
			}
			if err != nil {
				return err
			}
		}
	}
	for i, raw := range items {
		if err := itemReaches(raw, i, allow); err != nil {
			return err
		}
	}
	return nil
}

// itemReaches refuses what input item i reaches past itself that allow
// refuses: an item reference, a file part naming a file the upstream
// keeps (or a URL it fetches). The item is read in place.
func itemReaches(raw []byte, i int, allow func(kind, param string) error) error {
	var typ, role, id, content []byte
	if !wire.EachMember(raw, func(k string, v []byte) bool {
		switch k {
		case "type":
			typ = v
		case "role":
			role = v
		case "id":
			id = v
		case "content":
			content = v
		}
		return true
	}) {
		return nil // the translation says what is wrong with it
	}
	if wire.StringIs(typ, "item_reference") || typ == nil && role == nil && len(id) > 2 && id[0] == '"' {
		if err := allow(translate.ReachItems, fmt.Sprintf("input[%d]", i)); err != nil {
			return err
		}
	}
	if len(content) == 0 || content[0] != '[' {
		return nil
	}
	var err error
	wire.EachElement(content, func(k int, p []byte) bool {
		typ, _ := wire.Member(p, "type")
		fileID, _ := wire.Member(p, "file_id")
		fileURL, _ := wire.Member(p, "file_url")
		if len(fileID) > 2 && fileID[0] == '"' || wire.StringIs(typ, "input_file") && len(fileURL) > 2 && fileURL[0] == '"' {
			err = allow(translate.ReachFiles, fmt.Sprintf("input[%d].content[%d]", i, k))
		}
		return err == nil
	})
	return err
}

// clientRun are the tool types the client runs, by the name of the tool
// and of its call item (x for an x_call item): functions, namespaces of
// them, custom tools, and the built-in tools the client executes (local
// shell, shell, apply_patch, computer use). Any other type is a hosted
// tool, run by the provider.
var clientRun = []string{"function", "namespace", "custom", "custom_tool", "local_shell", "shell", "apply_patch",
	"computer", "computer_use", "computer_use_preview"}

// hosted reports a tool type the provider runs (web_search, file_search,
// code_interpreter, mcp, …), not the client.
func hosted(typ string) bool { return !slices.Contains(clientRun, typ) }

// declared reads the request's tools.
func (r *Request) declared() ([]tool, error) {
	v := r.members["tools"]
	if v == nil || string(v) == "null" {
		return nil, nil
	}
	var tools []tool
	if json.Unmarshal(v, &tools) != nil {
		return nil, &wire.ParamError{Param: "tools", Msg: "must be an array of tools"}
	}
	return tools, nil
}

// functionTool is a function tool as the chat model declares it.
func functionTool(name string, t tool) map[string]any {
	fn := map[string]any{"name": name}
	if t.Description != "" {
		fn["description"] = t.Description
	}
	if len(t.Parameters) > 0 && string(t.Parameters) != "null" {
		fn["parameters"] = t.Parameters
	}
	if t.Strict != nil {
		fn["strict"] = *t.Strict
	}
	return map[string]any{"type": "function", "function": fn}
}

// tools translates function tools and tool_choice; a namespace tool's
// functions become functions named with NamespaceSep. Other tools are
// refused, but for a Responses upstream (Keep), which gets them from the
// request's own member, or left out with DropHosted.
func (r *Request) tools(chat map[string]any, o ChatOptions) error {
	if v := r.members["tools"]; v != nil && string(v) != "null" {
		tools, err := r.declared()
		if err != nil {
			return err
		}
		out := make([]map[string]any, 0, len(tools))
		for i, t := range tools {
			switch {
			case t.Type == "namespace":
				for _, f := range t.Tools {
					if f.Type == "function" && f.Name != "" {
						out = append(out, functionTool(t.Name+NamespaceSep+f.Name, f))
					}
				}
				continue
			case t.Type != "function" && (o.Keep || o.DropHosted && hosted(t.Type) || unallowed(t.Type, o.HostedTools)):
				continue
			case t.Type != "function":
				return &wire.ParamError{Param: fmt.Sprintf("tools[%d].type", i), Msg: fmt.Sprintf("%q tools are not supported by this route's upstream; declare function tools", wire.Clip(t.Type)), Unsupported: true}
			}
			out = append(out, functionTool(t.Name, t))
		}
		chat["tools"] = out
	}
	v := r.members["tool_choice"]
	if v == nil || string(v) == "null" {
		return nil
	}
	if v[0] == '"' {
		chat["tool_choice"] = v
		return nil
	}
	var c struct {
		Type      string `json:"type"`
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	}
	if json.Unmarshal(v, &c) != nil || c.Type != "function" || c.Name == "" {
		return &wire.ParamError{Param: "tool_choice", Msg: `must be "none", "auto", "required" or {"type":"function","name":"…"}`, Unsupported: c.Type != "" && c.Type != "function"}
	}
	if c.Namespace != "" {
		c.Name = c.Namespace + NamespaceSep + c.Name
	}
	chat["tool_choice"] = map[string]any{"type": "function", "function": map[string]string{"name": c.Name}}
	return nil
}

// reasoningAndFormat translates reasoning.effort (when effort) and
// text.format.
func (r *Request) reasoningAndFormat(chat map[string]any, effort bool) error {
	if v := r.members["reasoning"]; v != nil && string(v) != "null" {
		var re struct {
			Effort *string `json:"effort"`
		}
		if json.Unmarshal(v, &re) != nil {
			return &wire.ParamError{Param: "reasoning", Msg: `must be an object such as {"effort":"medium"}`}
		}
		if re.Effort != nil && effort {
			chat["reasoning_effort"] = *re.Effort
		}
	}
	v := r.members["text"]
	if v == nil || string(v) == "null" {
		return nil
	}
	var t struct {
		Format *struct {
			Type   string          `json:"type"`
			Name   string          `json:"name"`
			Schema json.RawMessage `json:"schema"`
			Strict *bool           `json:"strict"`
		} `json:"format"`
	}
	if json.Unmarshal(v, &t) != nil {
		return &wire.ParamError{Param: "text", Msg: "must be an object"}
	}
	switch {
	case t.Format == nil || t.Format.Type == "text":
	case t.Format.Type == "json_object":
		chat["response_format"] = map[string]string{"type": "json_object"}
	case t.Format.Type == "json_schema":
		js := map[string]any{"name": t.Format.Name, "schema": t.Format.Schema}
		if t.Format.Strict != nil {
			js["strict"] = *t.Format.Strict
		}
		chat["response_format"] = map[string]any{"type": "json_schema", "json_schema": js}
	default:
		return &wire.ParamError{Param: "text.format.type", Msg: fmt.Sprintf("%q is not a text format; use text, json_object or json_schema", wire.Clip(t.Format.Type))}
	}
	return nil
}

// item is an item as the answer's translation reads it (decoded: the
// items of an upstream's answer, and what a kept item says).
type item struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Namespace string          `json:"namespace"`
	Arguments string          `json:"arguments"`
	Output    json.RawMessage `json:"output"`
	Summary   []struct {
		Text string `json:"text"`
	} `json:"summary"`
	ID               string `json:"id"`
	EncryptedContent string `json:"encrypted_content"`
}

// assistantText appends an assistant message's text.
func assistantText(b *strings.Builder, content json.RawMessage, i int) error {
	if s, ok := wire.AsString(content); ok {
		b.WriteString(s)
		return nil
	}
	var parts []struct {
		Type    string `json:"type"`
		Text    string `json:"text"`
		Refusal string `json:"refusal"`
	}
	if len(content) > 0 && json.Unmarshal(content, &parts) != nil {
		return &wire.ParamError{Param: fmt.Sprintf("input[%d].content", i), Msg: "must be a string or an array of output_text parts"}
	}
	for _, p := range parts {
		b.WriteString(p.Text + p.Refusal)
	}
	return nil
}
