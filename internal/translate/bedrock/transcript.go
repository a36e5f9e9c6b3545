package bedrock

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/toolgate/toolgate/internal/translate"
	"github.com/toolgate/toolgate/internal/wire"
)

// turn is one Converse message: its role and content blocks (a JSON
// string among them is the text block of that text, appendArray).
type turn struct {
	role    string
	content []json.RawMessage
	// calls: the turn holds toolUse blocks; thought: it starts with a
	// reasoning block.
	calls, thought bool
}

// conversation is a chat transcript translated.
type conversation struct {
	system    []json.RawMessage
	turns     []turn
	dropped   int      // empty turns left out
	toolNames []string // the names the transcript's calls use, first seen first
}

// emptyResult is the text of a tool result that has none: Bedrock refuses
// a blank text block.
const emptyResult = "(no output)"

// transcript turns the chat messages into the Converse API's system
// blocks and alternating turns: tool replies become toolResult blocks of
// the user turn after the calls (repair has paired them), consecutive
// turns of one role are merged, and an empty turn is left out (Bedrock
// refuses one, as Anthropic does: docs/quirks.md C12).
func transcript(msgs []wire.Message, carried string) (conversation, error) {
	var c conversation
	seen := map[string]bool{}
	for i, m := range msgs {
		var t turn
		var err error
		switch m.Role {
		case "system", "developer":
			blocks, err := contentBlocks(m.Content, i, false)
			if err != nil {
				return c, err
			}
			c.system = append(c.system, blocks...)
			continue
		case "user":
			t.role = "user"
			t.content, err = contentBlocks(m.Content, i, true)
		case "assistant":
			t, err = assistantTurn(m, i, carried)
			for _, tc := range m.ToolCalls {
				if !seen[tc.Function.Name] {
					seen[tc.Function.Name] = true
					c.toolNames = append(c.toolNames, tc.Function.Name)
				}
			}
		case "tool":
			t.role = "user"
			t.content, err = toolResult(m, i)
		default:
			return c, &wire.ParamError{Param: fmt.Sprintf("messages[%d].role", i), Msg: fmt.Sprintf("%q has no counterpart in the Converse API", wire.Clip(m.Role)), Unsupported: true}
		}
		if err != nil {
			return c, err
		}
		if len(t.content) == 0 {
			c.dropped++
			continue
		}
		if n := len(c.turns); n > 0 && c.turns[n-1].role == t.role {
			last := &c.turns[n-1]
			last.content = append(last.content, t.content...)
			last.calls = last.calls || t.calls
			continue
		}
		c.turns = append(c.turns, t)
	}
	return c, nil
}

// assistantTurn is an assistant message's blocks: the reasoning blocks
// restored for it first (as Bedrock issued them, signatures and redacted
// content unchanged), then its text, then one toolUse per call.
func assistantTurn(m wire.Message, i int, carried string) (turn, error) {
	t := turn{role: "assistant"}
	translate.Restored(m, carried, &t.content)
	t.thought = len(t.content) > 0
	text, err := contentBlocks(m.Content, i, false)
	if err != nil {
		return t, err
	}
	t.content = append(t.content, text...)
	for k, c := range m.ToolCalls {
		args, err := translate.ObjectArguments(c, i, k, "a bedrock upstream (its toolUse input is one)")
		if err != nil {
			return t, err
		}
		b := make([]byte, 0, len(c.ID)+len(c.Function.Name)+len(args)+56)
		b = wire.AppendString(append(b, `{"toolUse":{"toolUseId":`...), c.ID)
		b = wire.AppendString(append(b, `,"name":`...), c.Function.Name)
		b = append(append(append(b, `,"input":`...), args...), `}}`...)
		t.content = append(t.content, b)
		t.calls = true
	}
	return t, nil
}

// toolResult is a tool reply as a toolResult block; a seal (a call
// nothing answered, docs/spec.md §1.4) is a result with status error and
// its sentence, as Bedrock marks a failed call.
func toolResult(m wire.Message, i int) ([]json.RawMessage, error) {
	var content []json.RawMessage
	status := ""
	if m.Seal != "" {
		content = []json.RawMessage{json.RawMessage(translate.Quote(m.Seal))}
		status = `,"status":"error"`
	} else {
		var err error
		if content, err = contentBlocks(m.Content, i, true); err != nil {
			return nil, err
		}
	}
	if len(content) == 0 {
		content = []json.RawMessage{json.RawMessage(`"` + emptyResult + `"`)}
	}
	n := len(m.ToolCallID) + 64
	for _, c := range content {
		n += len(c) + 10
	}
	b := make([]byte, 0, n)
	b = wire.AppendString(append(b, `{"toolResult":{"toolUseId":`...), m.ToolCallID)
	b = appendArray(append(b, `,"content":`...), content)
	b = append(append(b, status...), `}}`...)
	return []json.RawMessage{b}, nil
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
