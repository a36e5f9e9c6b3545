package bedrock

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/toolgate/toolgate/internal/translate"
	"github.com/toolgate/toolgate/internal/wire"
)

// conversation writes a chat transcript as the Converse API's messages,
// into the body as it reads them, each block where it is sent; it keeps
// the system blocks.
type conversation struct {
	translate.Turns
	system    []json.RawMessage
	dropped   int // empty turns left out
	toolNames []string
	// calls and thought: the last assistant turn holds toolUse blocks; it
	// starts with a reasoning block.
	calls, thought bool
}

// emptyResult is the text of a tool result that has none: Bedrock refuses
// a blank text block.
const emptyResult = "(no output)"

// transcript writes the chat messages as the Converse API's alternating
// turns (the messages member's value) and keeps their system blocks: tool
// replies become toolResult blocks of the user turn after the calls
// (repair has paired them), consecutive turns of one role are merged,
// and an empty turn is left out (Bedrock refuses one, as Anthropic does:
// docs/quirks.md C12). toolNames are the names the calls use, first seen
// first.
func (c *conversation) transcript(msgs []wire.Message, carried string) error {
	seen := map[string]bool{}
	c.Buf = append(c.Buf, '[')
	for i, m := range msgs {
		var err error
		before := len(c.Buf)
		switch m.Role {
		case "system", "developer":
			blocks, err := contentBlocks(m.Content, i, false)
			if err != nil {
				return err
			}
			c.system = append(c.system, blocks...)
			continue
		case "user":
			var blocks []json.RawMessage
			if blocks, err = contentBlocks(m.Content, i, true); err == nil {
				c.each("user", blocks)
			}
		case "assistant":
			err = c.assistant(m, i, carried)
			for _, tc := range m.ToolCalls {
				if !seen[tc.Function.Name] {
					seen[tc.Function.Name] = true
					c.toolNames = append(c.toolNames, tc.Function.Name)
				}
			}
		case "tool":
			err = c.toolResult(m, i)
		default:
			return &wire.ParamError{Param: fmt.Sprintf("messages[%d].role", i), Msg: fmt.Sprintf("%q has no counterpart in the Converse API", wire.Clip(m.Role)), Unsupported: true}
		}
		if err != nil {
			return err
		}
		if len(c.Buf) == before {
			c.dropped++
		}
	}
	c.End()
	return nil
}

// assistant writes an assistant message's blocks: the reasoning blocks
// restored for it first (as Bedrock issued them, signatures and redacted
// content unchanged), then its text, then one toolUse per call.
func (c *conversation) assistant(m wire.Message, i int, carried string) error {
	reasoning, _ := translate.Restored[[]json.RawMessage](m, carried)
	text, err := contentBlocks(m.Content, i, false)
	if err != nil {
		return err
	}
	joins := c.Role == "assistant"
	c.each("assistant", reasoning)
	c.each("assistant", text)
	if len(reasoning) > 0 && !joins {
		c.thought = true // the turn starts with them
	}
	for k, tc := range m.ToolCalls {
		c.open("assistant")
		c.Buf = wire.AppendString(append(c.Buf, `{"toolUse":{"toolUseId":`...), tc.ID)
		c.Buf = wire.AppendString(append(c.Buf, `,"name":`...), tc.Function.Name)
		if c.Buf, err = translate.AppendArguments(append(c.Buf, `,"input":`...), tc, i, k, "a bedrock upstream (its toolUse input is one)"); err != nil {
			return err
		}
		c.Buf = append(c.Buf, `}}`...)
		c.calls = true
	}
	return nil
}

// toolResult writes a tool reply as a toolResult block; a seal (a call
// nothing answered, docs/spec.md §1.4) is a result with status error and
// its sentence, as Bedrock marks a failed call.
func (c *conversation) toolResult(m wire.Message, i int) error {
	var content []json.RawMessage
	seal := m.Seal()
	if seal == "" {
		var err error
		if content, err = contentBlocks(m.Content, i, true); err != nil {
			return err
		}
	}
	c.open("user")
	c.Buf = wire.AppendString(append(c.Buf, `{"toolResult":{"toolUseId":`...), m.ToolCallID)
	c.Buf = append(c.Buf, `,"content":`...)
	switch {
	case seal != "":
		c.Buf = append(wire.AppendString(append(c.Buf, `[{"text":`...), seal), `}],"status":"error"`...)
	case len(content) == 0:
		c.Buf = append(c.Buf, `[{"text":"`+emptyResult+`"}]`...)
	default:
		c.Buf = appendArray(c.Buf, content)
	}
	c.Buf = append(c.Buf, `}}`...)
	return nil
}

// each writes blocks into a turn of role (a JSON string among them is
// the text block of that text, appendArray).
func (c *conversation) each(role string, blocks []json.RawMessage) {
	for _, b := range blocks {
		c.open(role)
		if len(b) > 0 && b[0] == '"' {
			c.Buf = append(append(append(c.Buf, `{"text":`...), b...), '}')
			continue
		}
		c.Buf = append(c.Buf, b...)
	}
}

// open readies the body for a block in a turn of role (translate.Turns),
// a new assistant turn having made no call and not begun with reasoning.
func (c *conversation) open(role string) {
	if c.Open(role) && role == "assistant" {
		c.calls, c.thought = false, false
	}
}

// contentBlocks turns a message's content (a string, or content parts)
// into text, image and document blocks; blank text is left out (Bedrock
// refuses it). A part with cache_control is followed by a cachePoint.
// The parts are read in place and each text goes as it was written.
func contentBlocks(content json.RawMessage, i int, media bool) ([]json.RawMessage, error) {
	if len(content) == 0 || string(content) == "null" {
		return nil, nil
	}
	if content[0] == '"' {
		if blank(content) {
			return nil, nil
		}
		return []json.RawMessage{content}, nil // its text block (appendArray)
	}
	var out []json.RawMessage
	var err error
	if !wire.EachElement(content, func(k int, raw []byte) bool {
		var p part
		if !p.read(raw) {
			err = translate.NotParts(fmt.Sprintf("messages[%d].content", i))
			return false
		}
		var b json.RawMessage
		switch {
		case wire.StringIs(p.typ, "text"):
			if !blank(p.text) {
				b = p.text
			}
		case wire.StringIs(p.typ, "image_url") && media:
			b, err = imageBlock(p.imageURL, i, k)
		case wire.StringIs(p.typ, "file") && media:
			b, err = documentBlock(p.file, i, k)
		default:
			t, _ := wire.String(p.typ)
			err = &wire.ParamError{Param: fmt.Sprintf("messages[%d].content[%d].type", i, k), Msg: fmt.Sprintf("a %q part cannot be sent to a bedrock upstream here", wire.Clip(t)), Unsupported: true}
		}
		if err != nil {
			return false
		}
		if b != nil {
			out = append(out, b)
			if p.cached {
				out = append(out, json.RawMessage(`{"cachePoint":{"type":"default"}}`))
			}
		}
		return true
	}) && err == nil {
		err = translate.NotParts(fmt.Sprintf("messages[%d].content", i))
	}
	return out, err
}

// part is a content part's members the translator reads, as views.
type part struct {
	typ, text, imageURL, file []byte
	cached                    bool
}

// read reads a part's members; false when it is no part (or its text no
// string).
func (p *part) read(raw []byte) bool {
	ok := wire.EachMember(raw, func(key string, v []byte) bool {
		switch key {
		case "type":
			p.typ = v
		case "text":
			p.text = v
		case "image_url":
			p.imageURL = v
		case "file":
			p.file = v
		case "cache_control":
			p.cached = string(v) != "null"
		}
		return true
	})
	return ok && (p.text == nil || p.text[0] == '"' || string(p.text) == "null")
}

// blank reports a JSON string token whose text is empty or only
// whitespace (spaces, and tabs and line ends, escaped or not).
func blank(tok []byte) bool {
	if len(tok) < 2 || tok[0] != '"' {
		return true
	}
	s := tok[1 : len(tok)-1]
	for k := 0; k < len(s); k++ {
		switch s[k] {
		case ' ', '\t', '\n', '\r':
		case '\\':
			if k+1 < len(s) && (s[k+1] == 'n' || s[k+1] == 't' || s[k+1] == 'r') {
				k++
				continue
			}
			return false
		default:
			return false
		}
	}
	return true
}

// imageFormats are the image formats the Converse API takes, by media
// type.
var imageFormats = map[string]string{"image/png": "png", "image/jpeg": "jpeg", "image/jpg": "jpeg", "image/gif": "gif", "image/webp": "webp"}

// imageBlock is an image_url part as an image block of its bytes: a data:
// URL (Bedrock fetches no URL; it reads only bytes and S3 locations).
func imageBlock(imageURL json.RawMessage, i, k int) (json.RawMessage, error) {
	var u struct {
		URL string `json:"url"`
	}
	if json.Unmarshal(imageURL, &u) != nil {
		_ = json.Unmarshal(imageURL, &u.URL) // image_url as a bare string
	}
	mediaType, data, ok := dataURL(u.URL)
	format := imageFormats[mediaType]
	if !ok || format == "" {
		return nil, &wire.ParamError{Param: fmt.Sprintf("messages[%d].content[%d].image_url.url", i, k), Msg: "a bedrock upstream takes an image as a base64 data: URL of a png, jpeg, gif or webp image (it fetches no URL)"}
	}
	return json.RawMessage(`{"image":{"format":"` + format + `","source":{"bytes":` + translate.Quote(data) + `}}}`), nil
}

// documentFormats are the document formats the Converse API takes, by
// media type.
var documentFormats = map[string]string{"application/pdf": "pdf", "text/csv": "csv", "application/msword": "doc",
	"application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx", "application/vnd.ms-excel": "xls",
	"application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": "xlsx", "text/html": "html", "text/plain": "txt", "text/markdown": "md"}

// documentBlock is a file part (file_data, a data: URL) as a document
// block: its format from the media type, its name from the filename with
// only the characters Bedrock allows in one (letters, digits, spaces,
// hyphens, parentheses, brackets).
func documentBlock(file json.RawMessage, i, k int) (json.RawMessage, error) {
	var f struct {
		Filename string `json:"filename"`
		FileData string `json:"file_data"`
	}
	_ = json.Unmarshal(file, &f)
	mediaType, data, ok := dataURL(f.FileData)
	format := documentFormats[mediaType]
	if !ok || format == "" {
		return nil, &wire.ParamError{Param: fmt.Sprintf("messages[%d].content[%d].file.file_data", i, k), Msg: "a bedrock upstream takes a file as a base64 data: URL of a pdf, csv, doc, docx, xls, xlsx, html, txt or md document (a file_id cannot be sent)", Unsupported: true}
	}
	name := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == ' ', r == '-', r == '(', r == ')', r == '[', r == ']':
			return r
		}
		return ' '
	}, strings.TrimSuffix(f.Filename, "."+format))
	if name = strings.Join(strings.Fields(name), " "); name == "" {
		name = fmt.Sprintf("document %d", k+1)
	}
	return json.RawMessage(`{"document":{"format":"` + format + `","name":` + translate.Quote(name) + `,"source":{"bytes":` + translate.Quote(data) + `}}}`), nil
}

// dataURL reads a base64 data: URL.
func dataURL(u string) (mediaType, data string, ok bool) {
	rest, ok := strings.CutPrefix(u, "data:")
	if !ok {
		return "", "", false
	}
	mediaType, data, ok = strings.Cut(rest, ";base64,")
	return strings.ToLower(mediaType), data, ok && data != ""
}
