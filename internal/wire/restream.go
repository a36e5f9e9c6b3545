package wire

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Restream turns an upstream's chat.completion.chunk payloads into
// canonical ones (SPEC §2): tool-call fragments go through the Collector,
// finish reasons are made consistent, and everything else in a chunk keeps
// its bytes. A chunk with neither tool calls nor a finish reason — every
// text delta — is passed on as it came, without being decoded.
//
// Decisions: one Collector serves every choice of the response (responses
// with tools and n > 1 are not supported upstream-side anyway); a chunk
// whose only content was tool-call fragments that are held back is dropped
// rather than sent empty.
//
// A Restream is created per response and is not safe for concurrent use.
type Restream struct {
	Collector *Collector
	// FixFinishReason applies A15, A16 and A18: "stop" (or "") after tool
	// calls becomes "tool_calls", "" becomes null, and a second terminal
	// finish reason for a choice is dropped.
	FixFinishReason bool
	// FixChunks applies the chunk-level fixes: a placeholder chunk with no
	// id and no choice is dropped (A23), every chunk carries the first
	// chunk's id (A24), the first delta says role "assistant" (A26), and an
	// "error": null member is removed (A40).
	FixChunks bool
	// SingleChoice tells the chunk-level fixes that the request asked for
	// one choice, so a lone choice with another index is choice 0 (A27).
	SingleChoice bool
	// ReasoningIn is where this upstream puts reasoning: "" or
	// "reasoning_content" (as is), "reasoning", or "think" (inline <think>
	// tags in content). ReasoningOut is the field the client gets it in
	// ("" means reasoning_content). Text never carries the tags after
	// extraction.
	ReasoningIn, ReasoningOut string
	think                     ThinkSplitter
	// Buffer holds every tool-call fragment, and the chunk that finishes a
	// response with calls, until Flush: the client sees the calls only once
	// they are complete (and judged). Text is never held.
	Buffer bool

	// KeepText makes the Restream keep choice 0's text content (in Text),
	// for a judge that must read it (response_format json_schema). It costs
	// decoding every chunk.
	KeepText bool
	// Text is choice 0's text content so far, when KeepText is set (tags
	// removed for an upstream that inlines <think>).
	Text strings.Builder
	// Reasoning is choice 0's reasoning so far, when KeepText is set.
	Reasoning strings.Builder
	// TextChars counts the characters (runes) of Text.
	TextChars int
	// TextLimit, when LimitText is set (it needs KeepText), caps the text
	// content of choice 0: the chunk that would pass it is cut to fit (its
	// finish_reason, if any, becomes "length") and TextCut is set; the
	// caller then ends the stream. Text that exactly fits is not cut.
	LimitText bool
	TextLimit int
	TextCut   bool

	// FinishReason is the last finish reason sent (choice 0), "" if none.
	FinishReason string

	// Usage is the token usage the upstream reported (the largest value of
	// each field, QUIRKS A25); UsageSeen says whether it reported any.
	Usage     Usage
	UsageSeen bool
	// HoldUsage takes usage out of the stream: a usage-only chunk is not
	// sent and a usage member is removed from other chunks (A22, A25).
	// UsageChunk then gives the one usage chunk to send at the end, for a
	// client that asked for it.
	HoldUsage bool
	usageRaw  []byte

	finished map[int]bool
	scratch  []json.RawMessage
	pending  []Fragment // Buffer: one merged fragment per call, by canonical index
	final    []string   // Buffer: held finishing chunks
	head     []member   // id, object, created, model of the first chunk with an id
	seen     bool
	idNeedle string // `"id":"<first id>"`
	roleSeen bool
	flushed  bool
}

// NewRestream returns a Restream with a Collector applying q.
func NewRestream(q Quirks, fixFinishReason bool) *Restream {
	return &Restream{Collector: NewCollector(q), FixFinishReason: fixFinishReason, finished: map[int]bool{}}
}

// Chunk returns the payload to send for one upstream data payload, or
// ok == false when nothing is to be sent for it. An error is a
// *ProtocolError (including a payload that is not a JSON object).
func (s *Restream) Chunk(data string) (out string, ok bool, err error) {
	switch first := firstByte(data); {
	case first == ':':
		// A keep-alive sent as data (QUIRKS A34, `data: : keepalive`).
		s.Collector.fixes["keepalive_data"]++
		return "", false, nil
	case first != '{' || !validString(data):
		// Non-JSON data (A39), or a truncated or malformed chunk: a client
		// would fail to parse it.
		return "", false, &ProtocolError{Index: -1, Msg: "a stream event is not a JSON object: " + truncate(data, 80)}
	}
	if !s.seen {
		if o, err := ParseObject([]byte(data)); err == nil {
			if id, _ := o.Get("id"); len(id) > 2 && id[0] == '"' {
				s.seen = true
				s.idNeedle = `"id":` + string(id)
				for _, k := range []string{"id", "object", "created", "model"} {
					if v, ok := o.Get(k); ok {
						s.head = append(s.head, member{key: k, value: v})
					}
				}
			}
		}
	}
	if s.FixChunks && (!s.roleSeen || s.idNeedle != "" && !strings.Contains(data, s.idNeedle) || strings.Contains(data, `"error":null`) ||
		s.SingleChoice && strings.Contains(data, `"choices":[{`) && !strings.Contains(data, `"index":0`) && !strings.Contains(data, `"tool_calls"`)) {
		var drop bool
		if data, drop = s.fixChunk(data); drop {
			return "", false, nil
		}
	}
	if hasUsage(data) {
		var drop bool
		if data, drop = s.takeUsage(data); drop {
			return "", false, nil
		}
	}
	if s.KeepText {
		var drop bool
		if data, drop = s.keepText(data); drop {
			return "", false, nil
		}
	}
	if !s.reasoningIn(data) && !strings.Contains(data, `"tool_calls"`) && !strings.Contains(data, `"finish_reason":"`) && !strings.Contains(data, `"finish_reason": "`) {
		return data, true, nil
	}
	chunk, err := ParseObject([]byte(data))
	if err != nil {
		return "", false, &ProtocolError{Index: -1, Msg: "a stream event is not a JSON object"}
	}
	rawChoices, _ := chunk.Get("choices")
	var choices []json.RawMessage
	if len(rawChoices) > 0 && string(rawChoices) != "null" {
		var ok bool
		if choices, ok = elements(rawChoices, s.scratch[:0]); !ok {
			return "", false, &ProtocolError{Index: -1, Msg: "choices must be an array"}
		}
		s.scratch = choices
	}
	changed, held := false, len(choices) > 0
	for k, rc := range choices {
		c, err := ParseObject(rc)
		if err != nil {
			return "", false, &ProtocolError{Index: -1, Msg: "a choice must be an object"}
		}
		choiceIdx := 0
		if v, ok := c.Get("index"); ok {
			choiceIdx, _ = strconv.Atoi(string(v))
		}
		if s.FixChunks && s.SingleChoice && len(choices) == 1 && choiceIdx != 0 {
			// A27 on a chunk that carries tool calls (text chunks are fixed
			// in fixChunk).
			c.Set("index", json.RawMessage("0"))
			choiceIdx = 0
			s.Collector.fixes["choice_index"]++
			choices[k] = c.JSON()
			changed = true
		}
		heldOnly, cchanged, err := s.choice(&c, choiceIdx)
		if err != nil {
			return "", false, err
		}
		held = held && heldOnly
		if cchanged {
			choices[k] = c.JSON()
			changed = true
		}
	}
	if held && !hasOtherThanChoices(&chunk) {
		return "", false, nil
	}
	if s.Buffer && s.Collector.Calls() > 0 && s.FinishReason != "" && !s.flushed {
		// The chunk that finishes a response with calls waits for them.
		out := data
		if changed {
			out = s.encode(&chunk, choices)
		}
		s.final = append(s.final, out)
		return "", false, nil
	}
	if !changed {
		return data, true, nil
	}
	return s.encode(&chunk, choices), true, nil
}

// encode writes a chunk with its (rewritten) choices.
func (s *Restream) encode(chunk *Object, choices []json.RawMessage) string {
	var buf bytes.Buffer
	buf.WriteByte('[')
	for k, c := range choices {
		if k > 0 {
			buf.WriteByte(',')
		}
		buf.Write(c)
	}
	buf.WriteByte(']')
	chunk.Set("choices", buf.Bytes())
	return string(chunk.JSON())
}

// hold merges fragments into one pending fragment per call (Buffer mode).
func (s *Restream) hold(frags []Fragment) {
	for _, f := range frags {
		for len(s.pending) <= f.Index {
			s.pending = append(s.pending, Fragment{Index: len(s.pending)})
		}
		p := &s.pending[f.Index]
		if f.ID != "" {
			p.ID, p.Name = f.ID, f.Name
		}
		p.Arguments += f.Arguments
		p.Extra.members = append(p.Extra.members, f.Extra.members...)
	}
}

// Flush returns, in Buffer mode, the chunks held back: one chunk carrying
// every call whole, then the finishing chunk(s). Call it once the response
// has been judged acceptable; it returns nothing when nothing is held.
func (s *Restream) Flush() []string {
	if s.flushed || len(s.pending) == 0 && len(s.final) == 0 {
		return nil
	}
	s.flushed = true
	var out []string
	if len(s.pending) > 0 {
		calls := []byte{'['}
		for k, f := range s.pending {
			if k > 0 {
				calls = append(calls, ',')
			}
			b, _ := f.MarshalJSON() // cannot fail
			calls = append(calls, b...)
		}
		calls = append(calls, ']')
		o := Object{members: append([]member(nil), s.head...)}
		o.Set("choices", json.RawMessage(`[{"index":0,"delta":{"tool_calls":`+string(calls)+`},"finish_reason":null}]`))
		out = append(out, string(o.JSON()))
	}
	return append(out, s.final...)
}

// hasOtherThanChoices reports whether a chunk carries something a client
// wants besides its choices (usage, for instance).
func hasOtherThanChoices(o *Object) bool {
	v, ok := o.Get("usage")
	return ok && string(v) != "null"
}

// choice rewrites one choice in place. heldOnly reports a choice whose
// only content was tool-call fragments the collector is holding back (so
// the chunk need not be sent); changed, whether it was rewritten.
func (s *Restream) choice(c *Object, idx int) (heldOnly, changed bool, err error) {
	if d, ok := c.Get("delta"); ok && string(d) != "null" {
		delta, err := ParseObject(d)
		if err != nil {
			return false, false, &ProtocolError{Index: -1, Msg: "a delta must be an object"}
		}
		if s.moveReasoning(&delta) {
			c.Set("delta", delta.JSON())
			changed = true
		}
		if tc, ok := delta.Get("tool_calls"); ok {
			frags, err := s.Collector.Add(tc)
			if err != nil {
				return false, false, err
			}
			if s.Buffer {
				s.hold(frags)
				frags = nil
			}
			if len(frags) == 0 {
				delta.Delete("tool_calls")
				heldOnly = true
				for _, m := range delta.members {
					if string(m.value) != "null" && string(m.value) != `""` {
						heldOnly = false
					}
				}
			} else {
				b := []byte{'['}
				for k, f := range frags {
					if k > 0 {
						b = append(b, ',')
					}
					fb, _ := f.MarshalJSON() // cannot fail
					b = append(b, fb...)
				}
				delta.Set("tool_calls", append(b, ']'))
			}
			c.Set("delta", delta.JSON())
			changed = true
		}
	}
	fr, ok := c.Get("finish_reason")
	if !ok || string(fr) == "null" {
		return heldOnly, changed, nil
	}
	reason, _ := stringOf(fr)
	if s.FixFinishReason {
		switch {
		case s.finished[idx]:
			// A second terminal finish: dropped, and the chunk with it when
			// it says nothing else (clients keep the last finish they see).
			s.Collector.fixes["second_finish_reason"]++
			c.Set("finish_reason", json.RawMessage("null"))
			d, _ := c.Get("delta")
			return heldOnly || len(d) == 0 || string(d) == "{}" || string(d) == "null", true, nil
		case reason == "":
			// A18: "" is no finish reason, not a terminal one.
			s.Collector.fixes["empty_finish_reason"]++
			c.Set("finish_reason", json.RawMessage("null"))
			return heldOnly, true, nil
		case reason == "stop" && s.Collector.Calls() > 0:
			s.Collector.fixes["finish_reason"]++
			reason = "tool_calls"
			c.Set("finish_reason", json.RawMessage(`"tool_calls"`))
			changed = true
		}
	}
	s.finished[idx] = true
	if idx == 0 {
		s.FinishReason = reason
	}
	return false, changed, nil
}

// LengthChunk returns a chunk that ends choice 0 with finish_reason
// "length", for a stream cut at its output budget.
func (s *Restream) LengthChunk() string {
	s.FinishReason = "length"
	o := Object{members: append([]member(nil), s.head...)}
	o.Set("choices", json.RawMessage(`[{"index":0,"delta":{},"finish_reason":"length"}]`))
	return string(o.JSON())
}

// FinishChunk returns a chunk that sets choice 0's finish reason — "tool_calls"
// when calls were made, else "stop" — for an upstream that ended with
// [DONE] but never sent one (QUIRKS A17). It carries the first chunk's id,
// object, created and model.
func (s *Restream) FinishChunk() string {
	reason := "stop"
	if s.Collector.Calls() > 0 {
		reason = "tool_calls"
	}
	s.FinishReason = reason
	s.Collector.fixes["missing_finish_reason"]++
	o := Object{members: append([]member(nil), s.head...)}
	o.Set("choices", json.RawMessage(`[{"index":0,"delta":{},"finish_reason":"`+reason+`"}]`))
	return string(o.JSON())
}

func firstByte(s string) byte {
	for i := 0; i < len(s); i++ {
		if !isSpace(s[i]) {
			return s[i]
		}
	}
	return 0
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// keepText appends choice 0's delta.content of a chunk to Text.
func (s *Restream) keepText(data string) (string, bool) {
	chunk, err := ParseObject([]byte(data))
	if err != nil {
		return data, false
	}
	raw, _ := chunk.Get("choices")
	choices, _ := elements(raw, nil)
	for k, rc := range choices {
		c, err := ParseObject(rc)
		if err != nil {
			continue
		}
		if v, ok := c.Get("index"); ok && string(v) != "0" {
			continue
		}
		d, _ := c.Get("delta")
		delta, err := ParseObject(d)
		if err != nil {
			continue
		}
		if s.ReasoningIn == "think" {
			continue // moveReasoning keeps the split text and reasoning
		}
		if v, ok := delta.Get("content"); ok {
			text, _ := stringOf(v)
			n := utf8.RuneCountInString(text)
			if s.LimitText && s.TextChars+n > s.TextLimit {
				return s.cutText(&chunk, choices, k, &c, &delta, text)
			}
			s.Text.WriteString(text)
			s.TextChars += n
		}
		in := s.ReasoningIn
		if in == "" {
			in = "reasoning_content"
		}
		if v, ok := delta.Get(in); ok {
			text, _ := stringOf(v)
			s.Reasoning.WriteString(text)
		}
	}
	return data, false
}

// cutText rewrites the chunk whose choice k's content passes TextLimit:
// the content keeps what fits and a finish_reason becomes "length". A
// chunk left with nothing but empty content is dropped.
func (s *Restream) cutText(chunk *Object, choices []json.RawMessage, k int, c, delta *Object, text string) (string, bool) {
	s.TextCut = true
	fit := max(s.TextLimit-s.TextChars, 0)
	kept := text
	for i := range text {
		if fit == 0 {
			kept = text[:i]
			break
		}
		fit--
	}
	s.Text.WriteString(kept)
	s.TextChars += utf8.RuneCountInString(kept)
	fr, _ := c.Get("finish_reason")
	if kept == "" && (len(fr) == 0 || string(fr) == "null") && len(choices) == 1 && !strings.Contains(string(delta.JSON()), `"tool_calls"`) {
		return "", true
	}
	b, _ := json.Marshal(kept)
	delta.Set("content", b)
	c.Set("delta", delta.JSON())
	if len(fr) > 0 && string(fr) != "null" {
		c.Set("finish_reason", json.RawMessage(`"length"`))
	}
	out := append([]json.RawMessage(nil), choices...)
	out[k] = c.JSON()
	chunk.Set("choices", joinArray(out))
	return string(chunk.JSON()), false
}

// fixChunk applies the chunk-level fixes (see FixChunks); drop reports a
// placeholder chunk to leave out.
func (s *Restream) fixChunk(data string) (string, bool) {
	o, err := ParseObject([]byte(data))
	if err != nil {
		return data, false
	}
	changed := false
	rawChoices, _ := o.Get("choices")
	choices, _ := elements(rawChoices, nil)
	id, _ := o.Get("id")
	if len(choices) == 0 && !hasOtherThanChoices(&o) && (len(id) == 0 || string(id) == `""`) {
		s.Collector.fixes["placeholder_chunk"]++ // A23
		return "", true
	}
	if s.idNeedle != "" && len(s.head) > 0 && s.head[0].key == "id" && string(id) != string(s.head[0].value) {
		o.Set("id", s.head[0].value) // A24
		s.Collector.fixes["chunk_id"]++
		changed = true
	}
	if v, ok := o.Get("error"); ok && string(v) == "null" {
		o.Delete("error") // A40: clients that test for the key would see an error
		s.Collector.fixes["null_error"]++
		changed = true
	}
	if s.SingleChoice && len(choices) == 1 {
		if c, err := ParseObject(choices[0]); err == nil {
			if v, ok := c.Get("index"); !ok || string(v) != "0" {
				c.Set("index", json.RawMessage("0")) // A27: missing, non-zero or incrementing
				choices[0] = c.JSON()
				o.Set("choices", json.RawMessage(joinArray(choices)))
				s.Collector.fixes["choice_index"]++
				changed = true
			}
		}
	}
	if !s.roleSeen && len(choices) > 0 {
		s.roleSeen = true
		c, err := ParseObject(choices[0])
		d, _ := c.Get("delta")
		delta, derr := ParseObject(d)
		if err == nil && derr == nil {
			if _, ok := delta.Get("role"); !ok { // A26
				delta.members = append([]member{{key: "role", value: json.RawMessage(`"assistant"`)}}, delta.members...)
				c.Set("delta", delta.JSON())
				choices[0] = c.JSON()
				o.Set("choices", json.RawMessage(joinArray(choices)))
				s.Collector.fixes["missing_role"]++
				changed = true
			}
		}
	}
	if !changed {
		return data, false
	}
	return string(o.JSON()), false
}

func joinArray(elems []json.RawMessage) []byte {
	b := []byte{'['}
	for k, e := range elems {
		if k > 0 {
			b = append(b, ',')
		}
		b = append(b, e...)
	}
	return append(b, ']')
}

// out is the client's reasoning field.
func (s *Restream) out() string {
	if s.ReasoningOut == "" {
		return "reasoning_content"
	}
	return s.ReasoningOut
}

// reasoningIn reports whether a chunk may carry reasoning to move.
func (s *Restream) reasoningIn(data string) bool {
	switch s.ReasoningIn {
	case "", s.out():
		return false
	case "think":
		return strings.Contains(data, `"content":"`) && !strings.Contains(data, `"content":""`)
	}
	return strings.Contains(data, `"`+s.ReasoningIn+`"`)
}

// moveReasoning puts a delta's or message's reasoning in the client's
// field; it reports whether it changed o.
func (s *Restream) moveReasoning(o *Object) bool {
	switch s.ReasoningIn {
	case "", s.out():
		return false
	case "think":
		v, ok := o.Get("content")
		text, isString := stringOf(v)
		if !ok || !isString || text == "" {
			return false
		}
		r, c := s.think.Split(text)
		if s.KeepText {
			s.Text.WriteString(c)
			s.TextChars += utf8.RuneCountInString(c)
			s.Reasoning.WriteString(r)
		}
		o.Set("content", appendString(nil, c))
		if r != "" {
			o.Set(s.out(), appendString(nil, r))
		}
		return true
	}
	v, ok := o.Get(s.ReasoningIn)
	if !ok {
		return false
	}
	o.Delete(s.ReasoningIn)
	o.Set(s.out(), v)
	return true
}

// MoveReasoning applies the reasoning move to a whole message (a
// non-streamed response); the think splitter is flushed at its end.
func (s *Restream) MoveReasoning(msg *Object) bool {
	changed := s.moveReasoning(msg)
	if s.ReasoningIn == "think" {
		if r, c := s.think.Flush(); r != "" || c != "" {
			text, _ := stringOf(must0(msg.Get("content")))
			msg.Set("content", appendString(nil, text+c))
			if r != "" {
				prev, _ := stringOf(must0(msg.Get(s.out())))
				msg.Set(s.out(), appendString(nil, prev+r))
			}
			changed = true
		}
	}
	return changed
}

func must0(v json.RawMessage, _ bool) json.RawMessage { return v }

// ThinkTail returns a chunk with the text the think splitter still holds at
// the end of a stream, or "".
func (s *Restream) ThinkTail() string {
	r, c := s.think.Flush()
	if r == "" && c == "" {
		return ""
	}
	delta := Object{}
	if c != "" {
		delta.Set("content", appendString(nil, c))
	}
	if r != "" {
		delta.Set(s.out(), appendString(nil, r))
	}
	o := Object{members: append([]member(nil), s.head...)}
	o.Set("choices", json.RawMessage(`[{"index":0,"delta":`+string(delta.JSON())+`,"finish_reason":null}]`))
	return string(o.JSON())
}
