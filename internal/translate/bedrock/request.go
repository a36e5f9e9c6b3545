package bedrock

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/toolgate/toolgate/internal/translate"
	"github.com/toolgate/toolgate/internal/wire"
)

// Translator is the Converse API's translate.Outbound.
var Translator translate.Outbound = translate.Functions{RequestFunc: Request, WholeFunc: Whole,
	StreamFunc: func(o translate.StreamOptions) translate.Events { return NewStream(o) }, SetupFunc: Setup}

// Setup is what every request to the Converse API carries: the configured
// headers, and the output limit sent when the request sets none (the
// upstream's default_max_tokens), so that what the gateway reserves for a
// request is what the model may spend.
func Setup(c translate.UpstreamConfig) translate.Setup {
	return translate.Setup{Headers: c.Headers, MaxTokens: c.DefaultMaxTokens}
}

// Path is the endpoint of a model (a model id, an inference profile or
// an ARN) below the runtime's URL: converse, or converse-stream. The id
// is escaped as AWS's SDKs escape it, its colons too
// (us.anthropic.claude-…-v1%3A0), so that the path signed is the path
// Bedrock checks.
func Path(model string, stream bool) string {
	var b strings.Builder
	b.WriteString("/model/")
	for i := 0; i < len(model); i++ {
		c := model[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~' {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	if stream {
		b.WriteString("/converse-stream")
	} else {
		b.WriteString("/converse")
	}
	return b.String()
}

// Request translates a prepared chat request (repaired, its reasoning
// level written as thinking-budget's thinking member) into a Converse
// request: its body, and its path (Path). The reasoning blocks restored
// for a turn are read from o.CarriedMember. The report says when
// thinking was turned off (the conversation's last tool turn has no
// reasoning block: Claude refuses that with thinking on) and how many
// empty turns were left out.
func Request(req *wire.ChatRequest, o translate.Options) (translate.Request, error) {
	var r translate.Request
	if err := translate.NoResponseFormat(req, "a bedrock upstream"); err != nil {
		return r, err
	}
	if err := translate.Unsupported(req, "bedrock"); err != nil {
		return r, err
	}
	c := conversation{Turns: translate.Turns{Buf: append(make([]byte, 0, bodySize(req)), `{"messages":`...), Member: "content"}}
	if err := c.transcript(req.Messages, o.CarriedMember); err != nil {
		return r, err
	}
	r.DroppedEmpty = c.dropped
	b := body{system: c.system}
	var err error
	maxTokens := o.DefaultMaxTokens
	if n, ok := translate.IntMember(req, "max_tokens", "max_completion_tokens"); ok {
		maxTokens = n
	}
	if b.toolConfig, err = toolConfig(req, c.toolNames); err != nil {
		return r, err
	}
	if b.thinking, r.ThinkingOff, err = thinking(req, maxTokens, c.calls && !c.thought); err != nil {
		return r, err
	}
	b.inference = inference(req, maxTokens, b.thinking != nil)
	if k := translate.Member(req, "top_k"); k != nil && string(k) != "null" && b.thinking == nil {
		b.topK = k
	}
	r.Path = Path(o.Model, req.Stream)
	r.Body = b.appendJSON(c.Buf)
	return r, nil
}

// body is a Converse request, its parts as JSON the translator built or
// checked.
type body struct {
	system     []json.RawMessage
	inference  []byte // the inferenceConfig object, or nil
	toolConfig []byte
	thinking   json.RawMessage // Claude's thinking object, in additionalModelRequestFields
	topK       json.RawMessage
}

// appendJSON ends the body after its messages (out): the system blocks
// and the other members, each as the translator built or checked it.
func (b *body) appendJSON(out []byte) []byte {
	if len(b.system) > 0 {
		out = appendArray(append(out, `,"system":`...), b.system)
	}
	if b.inference != nil {
		out = append(append(out, `,"inferenceConfig":`...), b.inference...)
	}
	if b.toolConfig != nil {
		out = append(append(out, `,"toolConfig":`...), b.toolConfig...)
	}
	if b.thinking != nil || b.topK != nil {
		out = append(out, `,"additionalModelRequestFields":{`...)
		if b.thinking != nil {
			out = append(append(out, `"thinking":`...), b.thinking...)
		}
		if b.topK != nil {
			if b.thinking != nil {
				out = append(out, ',')
			}
			out = append(append(out, `"top_k":`...), b.topK...)
		}
		out = append(out, '}')
	}
	return append(out, '}')
}

// appendArray writes blocks as an array: a JSON string among them is the
// text block of that text (translate.AppendBlocks).
func appendArray(b []byte, vs []json.RawMessage) []byte {
	return translate.AppendBlocks(b, vs, `{"text":`)
}

// inference is the inferenceConfig: maxTokens (0: none), temperature and
// topP (left out while thinking: Claude refuses them then), and
// stopSequences; nil when it has none of them.
func inference(req *wire.ChatRequest, maxTokens int, thinking bool) []byte {
	var b []byte
	add := func(name string, v []byte) {
		if v == nil || string(v) == "null" {
			return
		}
		if b == nil {
			b = append(b, '{')
		} else {
			b = append(b, ',')
		}
		b = append(append(append(append(b, '"'), name...), `":`...), v...)
	}
	if maxTokens > 0 {
		add("maxTokens", strconv.AppendInt(nil, int64(maxTokens), 10))
	}
	if !thinking {
		add("temperature", translate.Member(req, "temperature"))
		add("topP", translate.Member(req, "top_p"))
	}
	if stop := translate.Member(req, "stop"); len(stop) > 0 && stop[0] == '"' {
		add("stopSequences", append(append([]byte{'['}, stop...), ']'))
	} else {
		add("stopSequences", stop)
	}
	if b == nil {
		return nil
	}
	return append(b, '}')
}

// toolConfig is the toolConfig: the declared tools as toolSpecs and the
// tool_choice (auto, required, a named function → auto, any, tool). The
// Converse API has no "none": tool_choice none sends no toolConfig —
// unless the transcript holds tool blocks, which Bedrock refuses without
// one; the tools then go with the default choice. A transcript with tool
// blocks and no tools declared gets a tool of each name it calls, its
// input any object, as Bedrock requires a toolConfig for them.
func toolConfig(req *wire.ChatRequest, history []string) ([]byte, error) {
	choice, err := toolChoice(req)
	if err != nil {
		return nil, err
	}
	if len(req.Tools) == 0 && len(history) == 0 || choice == "none" && len(history) == 0 {
		return nil, nil
	}
	b := []byte(`{"tools":[`)
	for i, t := range req.Tools {
		if i > 0 {
			b = append(b, ',')
		}
		schema := t.Parameters
		if len(schema) == 0 || string(schema) == "null" {
			schema = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		b = wire.AppendString(append(b, `{"toolSpec":{"name":`...), t.Name)
		if d := translate.ToolDescription(t.Raw); d != "" {
			b = wire.AppendString(append(b, `,"description":`...), d)
		}
		b = append(append(append(b, `,"inputSchema":{"json":`...), schema...), `}}}`...)
	}
	if len(req.Tools) == 0 {
		for i, name := range history {
			if i > 0 {
				b = append(b, ',')
			}
			b = wire.AppendString(append(b, `{"toolSpec":{"name":`...), name)
			b = append(b, `,"inputSchema":{"json":{"type":"object"}}}}`...)
		}
	}
	b = append(b, ']')
	if choice != "" && choice != "none" && len(req.Tools) > 0 {
		b = append(append(b, `,"toolChoice":`...), choice...)
	}
	return append(b, '}'), nil
}

// toolChoice is the Converse toolChoice of the request's tool_choice
// ("" for the default, "none" for none).
func toolChoice(req *wire.ChatRequest) (string, error) {
	raw := translate.Member(req, "tool_choice")
	if raw == nil || string(raw) == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		switch s {
		case "auto":
			return `{"auto":{}}`, nil
		case "none":
			return "none", nil
		case "required":
			return `{"any":{}}`, nil
		}
		return "", &wire.ParamError{Param: "tool_choice", Msg: fmt.Sprintf("%q is not a tool_choice", wire.Clip(s))}
	}
	var f struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if json.Unmarshal(raw, &f) != nil || f.Function.Name == "" {
		return "", &wire.ParamError{Param: "tool_choice", Msg: `must be "none", "auto", "required" or {"type":"function","function":{"name":"…"}}`}
	}
	return `{"tool":{"name":` + translate.Quote(f.Function.Name) + `}}`, nil
}

// thinking checks the thinking member (Claude's, in
// additionalModelRequestFields) against Claude's bounds — a budget of at
// least 1024 tokens, below maxTokens — and turns it off when unthought:
// the final assistant turn made calls and does not start with its
// reasoning block.
func thinking(req *wire.ChatRequest, maxTokens int, unthought bool) (json.RawMessage, bool, error) {
	raw := translate.Member(req, "thinking")
	if raw == nil || string(raw) == "null" {
		return nil, false, nil
	}
	var t struct {
		Type   string `json:"type"`
		Budget int    `json:"budget_tokens"`
	}
	if json.Unmarshal(raw, &t) != nil {
		return nil, false, &wire.ParamError{Param: "thinking", Msg: `must be {"type":"enabled","budget_tokens":N} or {"type":"disabled"}`}
	}
	if t.Type != "enabled" {
		return nil, false, nil
	}
	switch {
	case t.Budget < 1024:
		return nil, false, &wire.ParamError{Param: "thinking.budget_tokens", Msg: fmt.Sprintf("the thinking budget (%d tokens) must be at least 1024 for a bedrock upstream; raise the route's reasoning budget", t.Budget)}
	case maxTokens > 0 && t.Budget >= maxTokens:
		return nil, false, &wire.ParamError{Param: "max_tokens", Msg: fmt.Sprintf("the thinking budget (%d tokens) must be smaller than max_tokens (%d); raise max_tokens or lower the reasoning level", t.Budget, maxTokens)}
	}
	if unthought {
		return nil, true, nil
	}
	return raw, false, nil
}

// bodySize is about the length of the body Request writes: the chat
// messages' (translate.BodySize), and what Bedrock writes more for each
// (perMessage).
func bodySize(req *wire.ChatRequest) int {
	return translate.BodySize(req, req.Messages, "", perMessage, 1)
}

// perMessage is what Bedrock writes more than chat for a message: 16
// bytes (its content a list of blocks), but a content part's wrapping is
// shorter than chat's, and a call's (a toolUse block's by at least 16
// bytes, its input not a string).
func perMessage(m wire.Message) int {
	n := 16 - 16*len(m.ToolCalls)
	if len(m.Content) > 0 && m.Content[0] == '[' {
		n -= 14 * wire.ArrayLen(m.Content)
	}
	return n
}
