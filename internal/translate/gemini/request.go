package gemini

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	"github.com/toolgate/toolgate/internal/translate"
	"github.com/toolgate/toolgate/internal/wire"
)

// Translator is the Gemini API's translate.Outbound.
var Translator translate.Outbound = translate.Functions{RequestFunc: Request, WholeFunc: Whole,
	StreamFunc: func(translate.StreamOptions) translate.Events { return NewStream() }}

// SkipSignature is the value Gemini documents for a function call whose
// thought signature is not known (a call from another model, one a
// client made up, one the gateway no longer remembers): the API then
// skips the check instead of refusing the request.
const SkipSignature = "skip_thought_signature_validator"

type part struct {
	Text string `json:"text,omitempty"`
	// text, in a request, is Text as the client wrote it (a JSON string
	// token), which appendPart writes in its place.
	text []byte

	InlineData       *blob     `json:"inlineData,omitempty"`
	FunctionCall     *call     `json:"functionCall,omitempty"`
	FunctionResponse *response `json:"functionResponse,omitempty"`
	ThoughtSignature string    `json:"thoughtSignature,omitempty"`
}

type blob struct {
	MimeType string `json:"mimeType"`
	Data     string `json:"data"`
}

type call struct {
	ID   string          `json:"id,omitempty"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

type response struct {
	ID       string          `json:"id,omitempty"`
	Name     string          `json:"name"`
	Response json.RawMessage `json:"response"`
}

type content struct {
	Role  string `json:"role,omitempty"`
	Parts []part `json:"parts"`
}

type body struct {
	Tools            []tools         `json:"tools,omitempty"`
	ToolConfig       json.RawMessage `json:"toolConfig,omitempty"`
	GenerationConfig map[string]any  `json:"generationConfig,omitempty"`
}

type tools struct {
	FunctionDeclarations []declaration `json:"functionDeclarations"`
}

type declaration struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

// Request translates a prepared chat request into a Gemini API request:
// its body, and its path below the API's base URL (the model's
// generateContent, or streamGenerateContent with alt=sse for a stream).
// The thought signatures restored for a turn are read from
// o.CarriedMember; Placeholders counts the turns whose first call was
// sent with SkipSignature.
func Request(req *wire.ChatRequest, o translate.Options) (translate.Request, error) {
	var r translate.Request
	if err := translate.Unsupported(req, "gemini"); err != nil {
		return r, err
	}
	t := contents{Turns: translate.Turns{Buf: make([]byte, 0, bodySize(req)), Member: "parts"}}
	if err := t.transcript(req.Messages, o.CarriedMember); err != nil {
		return r, err
	}
	r.Placeholders, r.DroppedEmpty = t.placeholders, t.dropped
	var b body
	var err error
	if b.Tools, err = declarations(req.Tools); err != nil {
		return r, err
	}
	if b.ToolConfig, err = toolConfig(req, len(b.Tools) > 0); err != nil {
		return r, err
	}
	if b.GenerationConfig, err = generation(req); err != nil {
		return r, err
	}
	r.Path = "/models/" + url.PathEscape(o.Model) + ":generateContent"
	if req.Stream {
		r.Path = "/models/" + url.PathEscape(o.Model) + ":streamGenerateContent?alt=sse"
	}
	r.Body, err = b.appendJSON(t.Buf, t.system)
	return r, err
}

// bodySize is about the length of the body Request writes: the chat
// messages' (translate.BodySize) and what Gemini writes more for each
// (perMessage).
func bodySize(req *wire.ChatRequest) int {
	return translate.BodySize(req, req.Messages, "", perMessage, 1)
}

// perMessage is what Gemini writes more than chat for a message: its
// parts' wrapping (but a content part's is shorter than chat's: a text's
// by 14 bytes, an image's or an audio clip's, inline data, by 10 or
// more), and for each call a thought signature (SkipSignature, for one
// that has none) and its function's name again in the functionResponse
// of its reply, whose wrapping is longer than a tool message's.
func perMessage(m wire.Message) int {
	n := 10
	if len(m.Content) > 0 && m.Content[0] == '[' {
		n -= 14 * wire.ArrayLen(m.Content)
	}
	for _, c := range m.ToolCalls {
		n += 32 + len(c.Function.Name)
	}
	return n
}

// appendJSON finishes the body whose contents are written: its system
// instruction part by part (each text as the client wrote it), then the
// other members, few and small, marshalled.
func (b *body) appendJSON(out []byte, system *content) ([]byte, error) {
	rest, err := json.Marshal(struct {
		Tools            []tools         `json:"tools,omitempty"`
		ToolConfig       json.RawMessage `json:"toolConfig,omitempty"`
		GenerationConfig map[string]any  `json:"generationConfig,omitempty"`
	}{b.Tools, b.ToolConfig, b.GenerationConfig})
	if err != nil {
		return nil, err
	}
	if system != nil {
		out = appendContent(append(out, `,"systemInstruction":`...), *system)
	}
	if len(rest) > 2 {
		out = append(append(out, ','), rest[1:len(rest)-1]...)
	}
	return append(out, '}'), nil
}

// appendContent writes a content (a turn, or the system instruction).
func appendContent(out []byte, c content) []byte {
	out = append(out, '{')
	if c.Role != "" {
		out = append(wire.AppendString(append(out, `"role":`...), c.Role), ',')
	}
	out = append(out, `"parts":[`...)
	for k, p := range c.Parts {
		if k > 0 {
			out = append(out, ',')
		}
		out = appendPart(out, p)
	}
	return append(out, "]}"...)
}

// appendPart writes a part as json.Marshal would (its members in the
// struct's order, the empty ones left out), a text as the client wrote it.
func appendPart(out []byte, p part) []byte {
	out = append(out, '{')
	sep := func() {
		if out[len(out)-1] != '{' {
			out = append(out, ',')
		}
	}
	switch {
	case len(p.text) > 2:
		out = wire.AppendToken(append(out, `"text":`...), p.text)
	case p.Text != "":
		out = wire.AppendString(append(out, `"text":`...), p.Text)
	}
	if d := p.InlineData; d != nil {
		sep()
		out = wire.AppendString(append(out, `"inlineData":{"mimeType":`...), d.MimeType)
		out = append(wire.AppendString(append(out, `,"data":`...), d.Data), '}')
	}
	if c := p.FunctionCall; c != nil {
		sep()
		out = append(out, `"functionCall":{`...)
		if c.ID != "" {
			out = append(wire.AppendString(append(out, `"id":`...), c.ID), ',')
		}
		out = wire.AppendString(append(out, `"name":`...), c.Name)
		out = append(appendRaw(append(out, `,"args":`...), c.Args), '}')
	}
	if r := p.FunctionResponse; r != nil {
		sep()
		out = append(out, `"functionResponse":{`...)
		if r.ID != "" {
			out = append(wire.AppendString(append(out, `"id":`...), r.ID), ',')
		}
		out = wire.AppendString(append(out, `"name":`...), r.Name)
		out = append(appendRaw(append(out, `,"response":`...), r.Response), '}')
	}
	if p.ThoughtSignature != "" {
		sep()
		out = wire.AppendString(append(out, `"thoughtSignature":`...), p.ThoughtSignature)
	}
	return append(out, '}')
}

// appendRaw writes a JSON value the translation checked, null for none.
func appendRaw(out, v []byte) []byte {
	if len(v) == 0 {
		return append(out, "null"...)
	}
	return append(out, v...)
}

// declarations turns the function tools into one functionDeclarations
// tool, each schema mapped onto the subset Gemini takes.
func declarations(ts []wire.Tool) ([]tools, error) {
	if len(ts) == 0 {
		return nil, nil
	}
	var out tools
	for i, t := range ts {
		d := declaration{Name: t.Name, Description: translate.ToolDescription(t.Raw)}
		if len(t.Parameters) > 0 && string(t.Parameters) != "null" {
			p, err := Schema(t.Parameters, fmt.Sprintf("tools[%d].function.parameters", i))
			if err != nil {
				return nil, err
			}
			d.Parameters = p
		}
		out.FunctionDeclarations = append(out.FunctionDeclarations, d)
	}
	return []tools{out}, nil
}

// toolConfig maps tool_choice onto functionCallingConfig: auto → AUTO,
// none → NONE, required → ANY, a function → ANY with that name allowed.
func toolConfig(req *wire.ChatRequest, haveTools bool) (json.RawMessage, error) {
	raw := translate.Member(req, "tool_choice")
	if raw == nil || !haveTools {
		return nil, nil
	}
	var mode string
	var names []string
	var s string
	if json.Unmarshal(raw, &s) == nil {
		m, ok := map[string]string{"auto": "AUTO", "none": "NONE", "required": "ANY"}[s]
		if !ok {
			return nil, &wire.ParamError{Param: "tool_choice", Msg: fmt.Sprintf("%q has no counterpart for a gemini upstream", wire.Clip(s))}
		}
		mode = m
	} else {
		var f struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		}
		if json.Unmarshal(raw, &f) != nil || f.Function.Name == "" {
			return nil, &wire.ParamError{Param: "tool_choice", Msg: "must be auto, none, required or a function"}
		}
		mode, names = "ANY", []string{f.Function.Name}
	}
	cfg := map[string]any{"mode": mode}
	if names != nil {
		cfg["allowedFunctionNames"] = names
	}
	return json.Marshal(map[string]any{"functionCallingConfig": cfg})
}

// generation is the generationConfig: output limit, sampling, stop
// sequences, the response format, the thinking configuration.
func generation(req *wire.ChatRequest) (map[string]any, error) {
	g := map[string]any{}
	if n, ok := translate.IntMember(req, "max_completion_tokens", "max_tokens"); ok {
		g["maxOutputTokens"] = n
	}
	for chat, gem := range map[string]string{"temperature": "temperature", "top_p": "topP", "seed": "seed",
		"presence_penalty": "presencePenalty", "frequency_penalty": "frequencyPenalty"} {
		if v := translate.Member(req, chat); v != nil {
			g[gem] = v
		}
	}
	if stop := translate.Member(req, "stop"); stop != nil {
		if stop[0] == '"' {
			stop = append(append([]byte{'['}, stop...), ']')
		}
		g["stopSequences"] = stop
	}
	if err := responseFormat(req, g); err != nil {
		return nil, err
	}
	if err := thinking(req, g); err != nil {
		return nil, err
	}
	if len(g) == 0 {
		return nil, nil
	}
	return g, nil
}

// responseFormat maps response_format: json_schema → JSON with its
// schema, json_object → JSON.
func responseFormat(req *wire.ChatRequest, g map[string]any) error {
	f, err := translate.ResponseFormat(req, "gemini")
	if f == nil {
		return err
	}
	g["responseMimeType"] = "application/json"
	if f.Type == "json_schema" && len(f.Schema) > 0 {
		g["responseJsonSchema"] = f.Schema
	}
	return nil
}

// thinking maps the request's reasoning members onto thinkingConfig:
// reasoning_effort (the route's level as reasoning-effort writes it) →
// thinkingLevel, a thinking member with budget_tokens (thinking-budget)
// → thinkingBudget; thoughts are asked for whenever thinking is on, and
// reach the client as its reasoning.
func thinking(req *wire.ChatRequest, g map[string]any) error {
	cfg := map[string]any{}
	if raw := translate.Member(req, "reasoning_effort"); raw != nil {
		var effort string
		if json.Unmarshal(raw, &effort) != nil {
			return &wire.ParamError{Param: "reasoning_effort", Msg: "must be a string"}
		}
		level, ok := map[string]string{"none": "minimal", "minimal": "minimal", "low": "low", "medium": "medium", "high": "high", "xhigh": "high"}[effort]
		if !ok {
			return &wire.ParamError{Param: "reasoning_effort", Msg: fmt.Sprintf("%q has no gemini thinking level; send none, minimal, low, medium or high", wire.Clip(effort))}
		}
		cfg["thinkingLevel"] = level
		cfg["includeThoughts"] = level != "minimal"
	}
	if raw := translate.Member(req, "thinking"); raw != nil {
		var t struct {
			Type   string `json:"type"`
			Budget int    `json:"budget_tokens"`
		}
		if json.Unmarshal(raw, &t) != nil {
			return &wire.ParamError{Param: "thinking", Msg: `must be {"type":"enabled","budget_tokens":N} or {"type":"disabled"}`}
		}
		if t.Type != "enabled" {
			t.Budget = 0
		}
		delete(cfg, "thinkingLevel")
		cfg["thinkingBudget"] = t.Budget
		cfg["includeThoughts"] = t.Budget > 0
	}
	if len(cfg) > 0 {
		g["thinkingConfig"] = cfg
	}
	return nil
}

// imagePart turns an image_url into inline data; Gemini fetches no URL
// here, so only a data: URL is taken.
func imagePart(raw json.RawMessage, param string) (part, error) {
	var u struct {
		URL string `json:"url"`
	}
	if json.Unmarshal(raw, &u) != nil {
		_ = json.Unmarshal(raw, &u.URL) // image_url as a bare string
	}
	rest, ok := strings.CutPrefix(u.URL, "data:")
	mime, data, based := strings.Cut(rest, ";base64,")
	if !ok || !based {
		return part{}, &wire.ParamError{Param: param, Msg: "must be a base64 data: URL (data:<media type>;base64,<data>) for a gemini upstream, which fetches no URL", Unsupported: true}
	}
	return part{InlineData: &blob{MimeType: mime, Data: data}}, nil
}
