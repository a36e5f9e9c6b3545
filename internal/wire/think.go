package wire

import "strings"

// ThinkSplitter separates reasoning inlined in text as <think>…</think>
// (docs/quirks.md A30) from the answer, across chunks: a tag split between two
// chunks is recognized, and text is held back only while it could still be
// the start of a tag (at most len("</think>")-1 bytes).
//
// A ThinkSplitter is per response and not safe for concurrent use.
type ThinkSplitter struct {
	in      bool   // inside <think>
	pending string // a possible tag prefix held from the last chunk
}

const (
	openTag  = "<think>"
	closeTag = "</think>"
)

// Split takes the next piece of text and returns the reasoning and the
// answer text it contains, tags removed.
func (t *ThinkSplitter) Split(s string) (reasoning, text string) {
	s = t.pending + s
	t.pending = ""
	var r, c strings.Builder
	for s != "" {
		tag := openTag
		if t.in {
			tag = closeTag
		}
		out := &c
		if t.in {
			out = &r
		}
		if i := strings.Index(s, tag); i >= 0 {
			out.WriteString(s[:i])
			s = s[i+len(tag):]
			t.in = !t.in
			continue
		}
		// Hold a suffix that could be the start of the tag.
		keep := 0
		for k := min(len(tag)-1, len(s)); k > 0; k-- {
			if strings.HasPrefix(tag, s[len(s)-k:]) {
				keep = k
				break
			}
		}
		out.WriteString(s[:len(s)-keep])
		t.pending = s[len(s)-keep:]
		break
	}
	return r.String(), c.String()
}

// Flush returns what was held back at the end of the response.
func (t *ThinkSplitter) Flush() (reasoning, text string) {
	p := t.pending
	t.pending = ""
	if t.in {
		return p, ""
	}
	return "", p
}
