package responses

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"

	"github.com/toolgate/toolgate/internal/translate"
	"github.com/toolgate/toolgate/internal/wire"
)

// Meta is what a response object repeats besides its output: its id and
// time, the model, and the request's settings.
type Meta struct {
	ID        string
	CreatedAt int64
	Model     string
	// ReasoningField is the chat member the normalized answer carries
	// reasoning in (the route's reasoning output).
	ReasoningField string
	Request        *Request
	// Carried is a whole answer's Carried from a Responses upstream
	// (Upstream): Whole then writes its reasoning items, their encrypted
	// content sealed for Upstream, and the function calls' item ids, so
	// that the client can send them back as they are.
	Carried  []byte
	Upstream string
	// Sealer seals that reasoning for this client's key (seal.go).
	Sealer translate.Sealer
	// Output is a whole answer's output items as a Responses upstream
	// sent them, or nil: Whole writes them as they are (reasoning sealed
	// for Upstream; hosted tools' calls, annotations, item ids kept) while
	// they say what the normalized, judged answer says.
	Output json.RawMessage
}

// OutputOf is the output of a response object a Responses upstream sent,
// or nil.
func OutputOf(object []byte) json.RawMessage {
	var o struct {
		Output json.RawMessage `json:"output"`
	}
	_ = json.Unmarshal(object, &o)
	return o.Output
}

// NewID returns a new id with prefix ("resp", "msg", "fc", "rs").
func NewID(prefix string) string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return prefix + "_" + hex.EncodeToString(b[:])
}

// object is the response object for status, output and usage.
func (m Meta) object(status string, output []json.RawMessage, usage json.RawMessage, extra map[string]any) map[string]any {
	if output == nil {
		output = []json.RawMessage{}
	}
	o := map[string]any{
		"id": m.ID, "object": "response", "created_at": m.CreatedAt, "status": status, "model": m.Model,
		"output": output, "error": nil, "incomplete_details": nil, "usage": usage,
		"parallel_tool_calls": true, "tool_choice": "auto", "tools": []any{}, "metadata": map[string]any{},
		"text": map[string]any{"format": map[string]string{"type": "text"}}, "truncation": "disabled",
	}
	if r := m.Request; r != nil {
		for _, k := range []string{"instructions", "previous_response_id", "parallel_tool_calls", "tool_choice", "tools", "metadata",
			"temperature", "top_p", "max_output_tokens", "reasoning", "text", "user", "store"} {
			if v := r.Echo(k); v != nil {
				o[k] = v
			}
		}
	}
	for k, v := range extra {
		o[k] = v
	}
	return o
}

// usage translates chat usage (nil: none reported).
func usage(u *translate.Usage) json.RawMessage {
	if u == nil {
		return nil
	}
	total := u.TotalTokens
	if total == 0 {
		total = u.PromptTokens + u.CompletionTokens
	}
	b, _ := json.Marshal(map[string]any{
		"input_tokens": u.PromptTokens, "input_tokens_details": map[string]int64{"cached_tokens": u.PromptTokensDetails.CachedTokens},
		"output_tokens": u.CompletionTokens, "output_tokens_details": map[string]int64{"reasoning_tokens": u.CompletionTokensDetails.ReasoningTokens},
		"total_tokens": total,
	})
	return b
}

// finish maps a chat finish reason onto a status and its details.
func finish(reason string) (status string, extra map[string]any) {
	switch reason {
	case "length":
		return "incomplete", map[string]any{"incomplete_details": map[string]string{"reason": "max_output_tokens"}}
	case "content_filter":
		return "incomplete", map[string]any{"incomplete_details": map[string]string{"reason": "content_filter"}}
	}
	return "completed", nil
}

func reasoningItem(id, text string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"type": "reasoning", "id": id, "summary": []map[string]string{{"type": "summary_text", "text": text}}})
	return b
}

func messageItem(id, status, text string) json.RawMessage {
	content := []map[string]any{}
	if status == "completed" {
		content = append(content, textPart(text))
	}
	b, _ := json.Marshal(map[string]any{"type": "message", "id": id, "status": status, "role": "assistant", "content": content})
	return b
}

func textPart(text string) map[string]any {
	return map[string]any{"type": "output_text", "text": text, "annotations": []any{}, "logprobs": []any{}}
}

// callItem is a function_call item; a call of a namespace tool's
// function the request declared names the function and its namespace.
func (m Meta) callItem(id, callID, name, args, status string) json.RawMessage {
	item := map[string]any{"type": "function_call", "id": id, "call_id": callID, "name": name, "arguments": args, "status": status}
	if ns, fn, ok := m.Request.Unflatten(name); ok {
		item["namespace"], item["name"] = ns, fn
	}
	b, _ := json.Marshal(item)
	return b
}

// Whole turns a normalized chat.completion body into the response object;
// output is its output items, for a response store.
func Whole(chat []byte, m Meta) (object []byte, output []json.RawMessage, err error) {
	c, err := translate.ReadCompletion(chat, "a response")
	if err != nil {
		return nil, nil, err
	}
	said := translate.ReadDelta(c.Message, m.ReasoningField)
	status, extra := finish(c.FinishReason)
	if sent := sentItems(m.Output, said, m.Upstream, m.Sealer); sent != nil {
		object, err = json.Marshal(m.object(status, sent, usage(c.Usage), extra))
		return object, sent, err
	}
	var carried Carried
	_ = json.Unmarshal(m.Carried, &carried)
	itemIDs := map[string]string{}
	for _, it := range carried.Items {
		switch {
		case it.Type == "reasoning" && it.Reasoning != nil:
			output = append(output, SealItem(it.Reasoning, m.Upstream, m.Sealer))
		case it.Type == "function_call" && it.ID != "":
			itemIDs[it.CallID] = it.ID
		}
	}
	if said.Reasoning != "" && output == nil {
		output = append(output, reasoningItem(NewID("rs"), said.Reasoning))
	}
	if said.Text != "" {
		output = append(output, messageItem(NewID("msg"), "completed", said.Text))
	}
	for _, tc := range said.Calls {
		id := itemIDs[tc.ID]
		if id == "" {
			id = NewID("fc")
		}
		output = append(output, m.callItem(id, tc.ID, tc.Function.Name, tc.Function.Arguments, "completed"))
	}
	object, err = json.Marshal(m.object(status, output, usage(c.Usage), extra))
	return object, output, err
}

// sentItems are the upstream's output items, reasoning sealed for
// upstream, when they say what the answer says; else nil.
func sentItems(output json.RawMessage, said translate.Said, upstream string, sealer translate.Sealer) []json.RawMessage {
	var items []json.RawMessage
	if len(output) == 0 || json.Unmarshal(output, &items) != nil || len(items) == 0 {
		return nil
	}
	calls := make([][2]string, len(said.Calls))
	for k, c := range said.Calls {
		calls[k] = [2]string{c.ID, c.Function.Name}
	}
	if !itemsSay(items, said.Text, calls) {
		return nil
	}
	for k, raw := range items {
		items[k] = SealItem(raw, upstream, sealer) // a reasoning item's; the others have no encrypted_content
	}
	return items
}

// ErrorObject is the response object of a failed response.
func ErrorObject(m Meta, body wire.ErrorBody) []byte {
	code := ""
	if body.Error.Code != nil {
		code = *body.Error.Code
	}
	b, _ := json.Marshal(m.object("failed", nil, nil, map[string]any{"error": map[string]string{"code": code, "message": body.Error.Message}}))
	return b
}
