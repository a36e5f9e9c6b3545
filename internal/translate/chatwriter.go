package translate

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"

	"github.com/toolgate/toolgate/internal/wire"
)

// ChatWriter writes a chat completions request's messages into one
// buffer, as a client API's translator makes them: Next starts each
// message (its role), Member names each next member, the translator
// writes the values and closes each message with '}'.
//
// With Apart, a long string the client wrote for a message's content is
// not copied: the message names it by its index in Strings
// (wire.KeptContent), which the caller gives wire.DecodeTranslated, and
// the decoded message's content is the client's own bytes. The chat
// request then holds each long text once (the client's request), for an
// upstream translator that reads the decoded messages: not for a chat
// upstream, which is sent the chat messages' bytes.
type ChatWriter struct {
	Buf []byte
	N   int // messages started
	// Strings are the strings put apart, with Apart.
	Strings []json.RawMessage
	Apart   bool
}

// ApartMin is the length from which a string goes apart: a shorter one
// costs about as much named as copied.
const ApartMin = 64

// Apart reports whether the string token tok (a view of the client's
// request) goes apart with ChatWriter.Apart: a long one, ending at its
// closing quote, that is valid UTF-8 (what AppendToken writes as it is).
func Apart(tok []byte) bool {
	return len(tok) >= ApartMin && tok[len(tok)-1] == '"' && utf8.Valid(tok)
}

// Content writes a message's content member whose value is tok, a JSON
// string the client wrote: named by its index in Strings when it goes
// apart (Apart), else as AppendToken writes it. It is for a user's, a
// tool's or a system message's content, never an assistant's: repair
// names an assistant's calls that lack an id from its Raw alone.
func (w *ChatWriter) Content(tok []byte) {
	if w.Apart && Apart(tok) {
		w.Member(wire.KeptContent)
		w.Buf = strconv.AppendInt(w.Buf, int64(len(w.Strings)), 10)
		w.Strings = append(w.Strings, tok)
		return
	}
	w.Member("content")
	w.Buf = wire.AppendToken(w.Buf, tok)
}

// Next starts a message of role, after a comma when one came before.
func (w *ChatWriter) Next(role string) {
	if w.N > 0 {
		w.Buf = append(w.Buf, ',')
	}
	w.N++
	w.Buf = append(w.Buf, `{"role":"`...)
	w.Buf = append(w.Buf, role...)
	w.Buf = append(w.Buf, '"')
}

// Member writes the name of a message's next member.
func (w *ChatWriter) Member(name string) {
	w.Buf = append(w.Buf, ',', '"')
	w.Buf = append(w.Buf, name...)
	w.Buf = append(w.Buf, '"', ':')
}
