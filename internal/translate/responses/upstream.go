package responses

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/toolgate/toolgate/internal/translate"
	"github.com/toolgate/toolgate/internal/wire"
)

// The outbound direction: an upstream that speaks the Responses API
// (protocol: responses). Request turns the path's prepared chat request
// into a Responses request, UpstreamStream and UpstreamWhole turn its
// answer back into chat completions, and what the upstream needs back on
// the next turn — its reasoning items, encrypted when it keeps nothing —
// is Carried.

// Translator is the Responses API's translate.Outbound, for an upstream.
var Translator translate.Outbound = translate.Functions{RequestFunc: UpstreamRequest, WholeFunc: UpstreamWhole,
	StreamFunc: func(o translate.StreamOptions) translate.Events { return NewUpstreamStream(o) }}

// Carried is what a turn leaves for the next: its output items in order,
// the reasoning items whole (their encrypted_content included) and each
// function call as its item id and call_id.
type Carried struct {
	Items []carriedItem `json:"items"`
	// Sealed: the reasoning items are a client's, their encrypted content
	// sealed (seal.go), opened for the upstream the request goes to; the
	// gateway's store keeps items per upstream, as issued, and leaves it
	// false.
	Sealed bool `json:"sealed,omitempty"`
}

type carriedItem struct {
	Type      string          `json:"type"`
	Reasoning json.RawMessage `json:"reasoning,omitempty"` // a reasoning item as the upstream sent it
	ID        string          `json:"id,omitempty"`        // a function call's item id
	CallID    string          `json:"call_id,omitempty"`
}

// UpstreamRequest translates a prepared chat request into a Responses
// request. With o.UpstreamStore false (the default) the upstream keeps
// nothing (store: false) and is asked for its reasoning encrypted, to be
// sent back; the reasoning items remembered for a turn (o.CarriedMember)
// go back in front of the function calls they preceded, which then carry
// their item ids — never a reasoning item without its following item.
func UpstreamRequest(req *wire.ChatRequest, o translate.Options) (translate.Request, error) {
	r := translate.Request{Path: "/responses"}
	if err := translate.Unsupported(req, "responses"); err != nil {
		return r, err
	}
	b := map[string]any{"model": o.Model, "store": o.UpstreamStore}
	if !o.UpstreamStore {
		b["include"] = []string{"reasoning.encrypted_content"}
	}
	msgs := req.Messages
	if rest, id := afterPrevious(req, o); id != "" {
		b["previous_response_id"], msgs = id, rest
	}
	in := items{req: req, b: make([]byte, 0, bodySize(req, msgs))}
	in.b = append(in.b, `{"input":[`...)
	dropped, err := in.inputItems(msgs, o.CarriedMember, o.Upstream, o.Sealer)
	if err != nil {
		return r, err
	}
	r.DroppedReasoning = dropped
	if req.Stream {
		b["stream"] = true
	}
	if err := upstreamTools(req, b); err != nil {
		return r, err
	}
	for chat, resp := range map[string]string{"parallel_tool_calls": "parallel_tool_calls", "temperature": "temperature", "top_p": "top_p",
		"metadata": "metadata", "user": "user", "safety_identifier": "safety_identifier"} {
		if v := translate.Member(req, chat); v != nil {
			b[resp] = v
		}
	}
	if n, ok := translate.IntMember(req, "max_completion_tokens", "max_tokens"); ok {
		b["max_output_tokens"] = n
	}
	if err := upstreamReasoning(req, b); err != nil {
		return r, err
	}
	if err := upstreamFormat(req, b); err != nil {
		return r, err
	}
	withKept(req, b)
	// The other members, few and small, marshalled after the items.
	rest, err := json.Marshal(b)
	if err != nil {
		return r, err
	}
	r.Body = append(append(in.b, ']', ','), rest[1:]...)
	return r, nil
}

// items writes input items into one buffer, comma-separated.
type items struct {
	req *wire.ChatRequest // its Kept, the items the messages keep
	b   []byte
	n   int
	// kept is the list of the items a message keeps, reused.
	kept []json.RawMessage
}

// add writes a whole item.
func (w *items) add(raw []byte) {
	w.next()
	w.b = append(w.b, raw...)
}

// next starts an item.
func (w *items) next() {
	if w.n > 0 {
		w.b = append(w.b, ',')
	}
	w.n++
}

// withKept adds to a translated request what a Responses API client sent
// that the chat model has no slot for (translate.ResponsesRequestMember): its
// tools as it declared them (hosted tools included) — all of them while
// its function tools are the request's, else its other tools after the
// translated ones — its include list joined to the translator's, and the
// members the request does not have.
func withKept(req *wire.ChatRequest, b map[string]any) {
	for k, v := range translate.KeptMembers(req, translate.ResponsesRequestMember) {
		switch k {
		case "tools":
			if tools := keptTools(v, b["tools"]); tools != nil {
				b["tools"] = tools
			}
		case "include":
			var include []string
			_ = json.Unmarshal(v, &include)
			if mine, ok := b["include"].([]string); ok {
				for _, s := range mine {
					if !slices.Contains(include, s) {
						include = append(include, s)
					}
				}
			}
			b["include"] = include
		default:
			if _, has := b[k]; !has {
				b[k] = v
			}
		}
	}
}

// keptTools are the tools to send: the client's as declared while its
// function tools are the translated ones, else the translated ones and
// the client's other tools.
func keptTools(raw json.RawMessage, translated any) any {
	mine, _ := translated.([]map[string]any)
	// A namespace tool's functions, which the chat request declares
	// flattened, go as the namespace the client declared.
	var declared []tool
	_ = json.Unmarshal(raw, &declared)
	mine = slices.DeleteFunc(slices.Clone(mine), func(t map[string]any) bool {
		name, _ := t["name"].(string)
		return slices.ContainsFunc(declared, func(d tool) bool {
			return d.Type == "namespace" && strings.HasPrefix(name, d.Name+NamespaceSep)
		})
	})
	names := make([]string, len(mine))
	for k, t := range mine {
		names[k], _ = t["name"].(string)
	}
	asDeclared, hosted := translate.KeptTools(raw, names, func(typ string) bool { return typ == "function" })
	if asDeclared {
		return raw
	}
	out := make([]any, 0, len(mine)+len(hosted))
	for _, t := range mine {
		out = append(out, t)
	}
	for _, h := range hosted {
		out = append(out, h)
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// inputItems writes the messages as input items: messages (system and
// developer keep their role and place), function_call items for an
// assistant's calls (with the reasoning items restored for the turn),
// function_call_output items for tool replies.
func (w *items) inputItems(msgs []wire.Message, carriedMember, upstream string, sealer translate.Sealer) (int, error) {
	dropped := 0
	for i, m := range msgs {
		kept := keptItems(w.kept, w.req, m, upstream, sealer)
		if kept != nil {
			w.kept = kept // the list, for the next message's
		}
		switch m.Role {
		case "system", "developer", "user":
			if kept != nil {
				w.addAll(kept)
				continue
			}
			if err := w.upstreamMessage(m, i); err != nil {
				return 0, err
			}
		case "assistant":
			// The items as the client sent them, while they say what the
			// turn says — unless they lack the reasoning the gateway
			// restored for the turn (a client that drops reasoning items),
			// which the translation puts back in front of its calls.
			if kept != nil && itemsSay(kept, translate.ReplyText(m.Content), callsOf(m)) &&
				(hasReasoning(kept) || !restores(m, carriedMember)) {
				w.addAll(kept)
				continue
			}
			n, err := w.assistantItems(m, i, carriedMember, upstream, sealer)
			if err != nil {
				return 0, err
			}
			dropped += n
		case "tool":
			if len(kept) == 1 && outputFor(kept[0], m.ToolCallID) {
				w.add(kept[0])
				continue
			}
			w.next()
			w.b = append(w.b, `{"type":"function_call_output","call_id":`...)
			w.b = wire.AppendString(w.b, m.ToolCallID)
			w.b = append(w.b, `,"output":`...)
			if tok, ok := wire.StringToken(m.Content); ok {
				w.b = wire.AppendToken(w.b, tok) // a string, as it was written
			} else {
				w.b = wire.AppendString(w.b, translate.ReplyText(m.Content))
			}
			w.b = append(w.b, '}')
		default:
			return 0, &wire.ParamError{Param: fmt.Sprintf("messages[%d].role", i), Msg: fmt.Sprintf("%q has no counterpart in the Responses API", wire.Clip(m.Role)), Unsupported: true}
		}
	}
	return dropped, nil
}

// addAll writes whole items.
func (w *items) addAll(raws []json.RawMessage) {
	for _, raw := range raws {
		w.add(raw)
	}
}

// afterPrevious returns, for a conversation that continues a response
// this upstream keeps (translate.PreviousMember), that response's id and
// the messages to send instead of the whole conversation: the system
// messages and those after the ones made from its items. That holds only
// while those messages come first and are as the client sent them (not
// changed by repair, nothing inserted among them); otherwise the id is ""
// and the whole conversation goes.
func afterPrevious(req *wire.ChatRequest, o translate.Options) ([]wire.Message, string) {
	raw, ok := req.Get(translate.PreviousMember)
	if !ok || !o.UpstreamStore {
		return nil, ""
	}
	var p struct{ ID, Upstream string }
	if json.Unmarshal(raw, &p) != nil || p.ID == "" || p.Upstream != o.Upstream {
		return nil, ""
	}
	var rest []wire.Message
	skipped, after := 0, false
	for _, m := range req.Messages {
		switch marked := fromPrevious(m); {
		case m.Role == "system" || m.Role == "developer":
			rest = append(rest, m)
		case marked && (after || !unchanged(req, m, o.Upstream, o.Sealer)):
			return nil, "" // repair changed or moved what the upstream keeps
		case marked:
			skipped++
		default:
			after = true
			rest = append(rest, m)
		}
	}
	if skipped == 0 {
		return nil, ""
	}
	return rest, p.ID
}

// fromPrevious reports a message made from the previous response's items.
func fromPrevious(m wire.Message) bool {
	return string(translate.Own(m, translate.PreviousMember)) == "true"
}

// unchanged reports a message whose kept items still say what it says.
func unchanged(req *wire.ChatRequest, m wire.Message, upstream string, s translate.Sealer) bool {
	kept := keptItems(nil, req, m, upstream, s)
	switch {
	case kept == nil:
		return false
	case m.Role == "assistant":
		return itemsSay(kept, translate.ReplyText(m.Content), callsOf(m))
	case m.Role == "tool":
		return len(kept) == 1 && outputFor(kept[0], m.ToolCallID)
	}
	return true
}

// keptItems are the items a Responses API client sent for a message
// (translate.ItemsMember), the reasoning items' encrypted content
// unsealed for upstream — or nil, when there are none, or when one was
// sealed for another upstream (the message is then translated, and such
// reasoning left out). The list is dst's array when it has one
// (translate.Kept).
func keptItems(dst []json.RawMessage, req *wire.ChatRequest, m wire.Message, upstream string, s translate.Sealer) []json.RawMessage {
	items := translate.Kept(dst, req.Kept, m, translate.ItemsMember)
	for k, raw := range items {
		it, ok := readItem(raw)
		if !ok {
			return nil
		}
		if it.Type != "reasoning" || len(it.encrypt) <= 2 {
			continue
		}
		enc, ok := open(text(it.encrypt), upstream, s)
		if !ok {
			return nil
		}
		items[k] = withEncrypted(raw, func(string) string { return enc })
	}
	return items
}

// hasReasoning reports items with a reasoning item.
func hasReasoning(items []json.RawMessage) bool {
	for _, raw := range items {
		typ, _ := wire.Member(raw, "type")
		if wire.StringIs(typ, "reasoning") {
			return true
		}
	}
	return false
}

// restores reports an assistant message with reasoning items to restore
// (the gateway's, in carriedMember).
func restores(m wire.Message, carriedMember string) bool {
	calls := map[string]wire.ToolCall{}
	for _, c := range m.ToolCalls {
		calls[c.ID] = c
	}
	items, _ := restoredItems(m, carriedMember, calls, "", nil)
	return hasRestoredReasoning(items)
}

func hasRestoredReasoning(items []carriedItem) bool {
	for _, it := range items {
		if it.Type == "reasoning" {
			return true
		}
	}
	return false
}

// callsOf are an assistant message's calls: call id and name.
func callsOf(m wire.Message) [][2]string {
	calls := make([][2]string, len(m.ToolCalls))
	for k, c := range m.ToolCalls {
		calls[k] = [2]string{c.ID, c.Function.Name}
	}
	return calls
}

// itemsSay reports whether items say what an assistant turn says: the
// same text (their assistant messages' output_text and refusals joined),
// the same function calls (call ids and names, in order).
func itemsSay(items []json.RawMessage, said string, calls [][2]string) bool {
	k, at := 0, 0
	for i, raw := range items {
		it, ok := readItem(raw)
		if !ok {
			return false
		}
		switch it.Type {
		case "message", "":
			var t assistant
			if turnText(&t, it.content, i) != nil {
				return false
			}
			for _, tok := range t.text {
				n, ok := wire.StringPrefix(tok, said[at:])
				if !ok {
					return false
				}
				at += n
			}
		case "function_call":
			if k >= len(calls) || !wire.StringIs(it.callID, calls[k][0]) || !wire.StringIs(it.name, calls[k][1]) {
				return false
			}
			k++
		}
	}
	return k == len(calls) && at == len(said)
}

// outputFor reports whether a kept item is the function_call_output for
// the call.
func outputFor(raw json.RawMessage, callID string) bool {
	typ, _ := wire.Member(raw, "type")
	id, _ := wire.Member(raw, "call_id")
	return wire.StringIs(typ, "function_call_output") && wire.StringIs(id, callID)
}

// upstreamMessage writes a system, developer or user message as a
// message item (nothing for an empty one): its text as input_text parts
// (each as it was written), images as input_image.
func (w *items) upstreamMessage(m wire.Message, i int) error {
	mark, n := len(w.b), w.n
	w.next()
	w.b = append(w.b, `{"type":"message","role":`...)
	w.b = wire.AppendString(w.b, m.Role)
	w.b = append(w.b, `,"content":[`...)
	parts := 0
	if tok, ok := wire.StringToken(m.Content); ok {
		if len(tok) > 2 {
			w.b = append(wire.AppendToken(append(w.b, `{"type":"input_text","text":`...), tok), '}')
			parts++
		}
	} else if len(m.Content) > 0 {
		var err error
		if !wire.EachElement(m.Content, func(k int, p []byte) bool {
			parts, err = w.part(p, parts, i, k)
			return err == nil
		}) && err == nil {
			err = translate.NotParts(fmt.Sprintf("messages[%d].content", i))
		}
		if err != nil {
			return err
		}
	}
	if parts == 0 {
		w.b, w.n = w.b[:mark], n
		return nil
	}
	w.b = append(w.b, "]}"...)
	return nil
}

// part writes content part k of message i (a text, an image) as the
// parts-th part, and returns the parts written.
func (w *items) part(p []byte, parts, i, k int) (int, error) {
	typ, _ := wire.Member(p, "type")
	sep := func() {
		if parts > 0 {
			w.b = append(w.b, ',')
		}
	}
	switch {
	case wire.StringIs(typ, "text"):
		txt, _ := wire.Member(p, "text")
		tok, ok := wire.StringToken(txt)
		if !ok && txt != nil {
			return parts, translate.NotParts(fmt.Sprintf("messages[%d].content", i))
		}
		sep()
		w.b = append(wire.AppendToken(append(w.b, `{"type":"input_text","text":`...), tok), '}')
	case wire.StringIs(typ, "image_url"):
		raw, _ := wire.Member(p, "image_url")
		var u struct {
			URL    string `json:"url"`
			Detail string `json:"detail"`
		}
		if json.Unmarshal(raw, &u) != nil {
			_ = json.Unmarshal(raw, &u.URL)
		}
		if u.Detail == "" {
			u.Detail = "auto"
		}
		sep()
		w.b = wire.AppendString(append(w.b, `{"type":"input_image","image_url":`...), u.URL)
		w.b = append(wire.AppendString(append(w.b, `,"detail":`...), u.Detail), '}')
	default:
		t, _ := wire.String(typ)
		return parts, &wire.ParamError{Param: fmt.Sprintf("messages[%d].content[%d].type", i, k), Msg: fmt.Sprintf("a %q part cannot be sent to a responses upstream here", wire.Clip(t)), Unsupported: true}
	}
	return parts + 1, nil
}

// assistantItems are an assistant turn's items: its text as an assistant
// message, then its calls as function_call items; the reasoning items
// remembered for the turn (or sent back by the client) go back in front
// of the calls they preceded, which then carry their item ids — unless
// another upstream issued them (dropped, counted).
func (w *items) assistantItems(m wire.Message, i int, carriedMember, upstream string, sealer translate.Sealer) (int, error) {
	tok, plain := wire.StringToken(m.Content)
	if !plain && len(m.Content) > 0 {
		if text := translate.ReplyText(m.Content); text != "" {
			tok = wire.AppendString(nil, text)
		}
	}
	if len(tok) > 2 {
		w.next()
		w.b = append(w.b, `{"type":"message","role":"assistant","content":[{"type":"output_text","text":`...)
		w.b = append(wire.AppendToken(w.b, tok), "}]}"...)
	}
	calls := map[string]wire.ToolCall{}
	for _, c := range m.ToolCalls {
		calls[c.ID] = c
	}
	sent := map[string]bool{}
	restored, dropped := restoredItems(m, carriedMember, calls, upstream, sealer)
	for _, it := range restored {
		if it.Type == "reasoning" {
			w.add(it.Reasoning)
			continue
		}
		if err := w.functionCallItem(calls[it.CallID], it.ID, i); err != nil {
			return 0, err
		}
		sent[it.CallID] = true
	}
	for _, c := range m.ToolCalls {
		if sent[c.ID] {
			continue
		}
		if err := w.functionCallItem(c, "", i); err != nil {
			return 0, err
		}
	}
	return dropped, nil
}

// openAll opens each reasoning item's sealed encrypted content for
// upstream, in place; false when any is not sealed for it by s.
func openAll(items []carriedItem, upstream string, s translate.Sealer) bool {
	for k, it := range items {
		if it.Type != "reasoning" {
			continue
		}
		var r item
		if json.Unmarshal(it.Reasoning, &r) != nil {
			return false
		}
		if r.EncryptedContent == "" {
			continue
		}
		enc, ok := open(r.EncryptedContent, upstream, s)
		if !ok {
			return false
		}
		items[k].Reasoning = withEncrypted(it.Reasoning, func(string) string { return enc })
	}
	return true
}

// restoredItems are the turn's remembered items that can go back: each
// reasoning item followed by the function calls it preceded, those the
// turn still holds. A reasoning item none of whose calls is there is left
// out, and so are calls that came before any reasoning. Items a client
// sent back that another upstream issued are left out too, and counted:
// that upstream could not read them.
func restoredItems(m wire.Message, member string, calls map[string]wire.ToolCall, upstream string, s translate.Sealer) ([]carriedItem, int) {
	c, ok := translate.Restored[Carried](m, member)
	if !ok {
		return nil, 0
	}
	if c.Sealed && !openAll(c.Items, upstream, s) {
		n := 0
		for _, it := range c.Items {
			if it.Type == "reasoning" {
				n++
			}
		}
		return nil, n
	}
	var out []carriedItem
	var pending *carriedItem
	for _, it := range c.Items {
		switch {
		case it.Type == "reasoning":
			it := it
			pending = &it
		case it.Type == "function_call" && pending != nil:
			if _, ok := calls[it.CallID]; !ok {
				pending = nil // its following item is gone: neither goes back
				continue
			}
			if pending.Reasoning != nil {
				out = append(out, *pending)
				pending.Reasoning = nil // sent once, before its first call
			}
			out = append(out, it)
		default:
			pending = nil
		}
	}
	return out, 0
}

// functionCallItem writes a function_call item for a chat call (with its
// item id when its reasoning goes back with it).
func (w *items) functionCallItem(c wire.ToolCall, id string, i int) error {
	if c.ID == "" {
		return &wire.ParamError{Param: fmt.Sprintf("messages[%d].tool_calls", i), Msg: "a call without an id cannot be sent to a responses upstream"}
	}
	w.next()
	w.b = append(w.b, `{"type":"function_call","call_id":`...)
	w.b = wire.AppendString(w.b, c.ID)
	if id != "" {
		w.b = wire.AppendString(append(w.b, `,"id":`...), id)
	}
	w.b = wire.AppendString(append(w.b, `,"name":`...), c.Function.Name)
	w.b = append(w.b, `,"arguments":`...)
	switch args := c.Function.Arguments; {
	case len(args) > 2 && args[0] == '"':
		w.b = wire.AppendToken(w.b, args) // a string, as it was written
	case c.Function.ArgumentsText() == "":
		w.b = append(w.b, `"{}"`...)
	default:
		w.b = wire.AppendString(w.b, c.Function.ArgumentsText())
	}
	w.b = append(w.b, '}')
	return nil
}

// upstreamTools translates function tools (strict kept) and tool_choice.
func upstreamTools(req *wire.ChatRequest, b map[string]any) error {
	var tools []map[string]any
	for _, t := range req.Tools {
		var f struct {
			Function struct {
				Name        string          `json:"name"`
				Description string          `json:"description"`
				Parameters  json.RawMessage `json:"parameters"`
				Strict      *bool           `json:"strict"`
			} `json:"function"`
		}
		_ = json.Unmarshal(t.Raw, &f)
		tool := map[string]any{"type": "function", "name": t.Name}
		if f.Function.Description != "" {
			tool["description"] = f.Function.Description
		}
		if len(f.Function.Parameters) > 0 && string(f.Function.Parameters) != "null" {
			tool["parameters"] = f.Function.Parameters
		} else {
			tool["parameters"] = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		tool["strict"] = f.Function.Strict != nil && *f.Function.Strict
		tools = append(tools, tool)
	}
	if len(tools) > 0 {
		b["tools"] = tools
	}
	raw := translate.Member(req, "tool_choice")
	if raw == nil {
		return nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		b["tool_choice"] = s
		return nil
	}
	var f struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if json.Unmarshal(raw, &f) != nil || f.Function.Name == "" {
		return &wire.ParamError{Param: "tool_choice", Msg: "must be auto, none, required or a function"}
	}
	b["tool_choice"] = map[string]string{"type": "function", "name": f.Function.Name}
	return nil
}

// upstreamReasoning maps reasoning_effort (the client's, or the route's
// level) onto reasoning.effort, with its summary asked for: it reaches the
// client as reasoning.
func upstreamReasoning(req *wire.ChatRequest, b map[string]any) error {
	raw := translate.Member(req, "reasoning_effort")
	if raw == nil {
		return nil
	}
	var effort string
	if json.Unmarshal(raw, &effort) != nil {
		return &wire.ParamError{Param: "reasoning_effort", Msg: "must be a string"}
	}
	r := map[string]any{"effort": effort}
	if effort != "none" {
		r["summary"] = "auto"
	}
	b["reasoning"] = r
	return nil
}

// upstreamFormat maps response_format onto text.format.
func upstreamFormat(req *wire.ChatRequest, b map[string]any) error {
	f, err := translate.ResponseFormat(req, "responses")
	if f == nil {
		return err
	}
	format := map[string]any{"type": f.Type}
	if f.Type == "json_schema" {
		format["name"], format["schema"] = f.Name, f.Schema
		if f.Strict != nil {
			format["strict"] = *f.Strict
		}
	}
	b["text"] = map[string]any{"format": format}
	return nil
}

// bodySize is about the length of the body UpstreamRequest writes for
// msgs: the chat messages' (translate.BodySize, the items a message keeps
// for those that keep some) and what an item writes more than chat
// (perItem), and the members the client's request keeps.
func bodySize(req *wire.ChatRequest, msgs []wire.Message) int {
	return translate.BodySize(req, msgs, translate.ItemsMember, perItem, 1) + len(translate.Member(req, translate.ResponsesRequestMember))
}

// perItem is what a message's items write more than the chat message: a
// function_call_output's type; a message item's type and the wrapping
// of its content as parts (a content part's a little longer than
// chat's). An assistant's calls take about what chat's do.
func perItem(m wire.Message) int {
	switch {
	case m.Role == "tool":
		return 16
	case len(m.Content) > 0 && m.Content[0] == '[':
		return 52 + 8*wire.ArrayLen(m.Content)
	case len(m.Content) > 2 && m.Content[0] == '"':
		return 52
	}
	return -24
}
