package wire

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"
)

// ReasoningSource says where an upstream puts reasoning in its responses
// (QUIRKS A29, A30): configured per upstream, never guessed.
type ReasoningSource uint8

// Reasoning sources.
const (
	ReasoningContent ReasoningSource = iota // a "reasoning_content" member
	ReasoningField                          // a "reasoning" member
	ReasoningThink                          // inline <think>…</think> in the text
)

// Options configure a Normalizer; a route resolves them once.
type Options struct {
	// Upstream names the upstream in errors.
	Upstream string
	// Quirks are the normalizations switched on.
	Quirks Quirks
	// ReasoningIn is where the upstream puts reasoning; ReasoningOut the
	// member the client gets it in ("" is reasoning_content).
	ReasoningIn  ReasoningSource
	ReasoningOut string
	// Buffer holds every tool-call fragment, and the chunk that finishes a
	// response with calls, until Flush: the client sees the calls only once
	// they are complete (and judged). Text is never held.
	Buffer bool
	// KeepText keeps choice 0's text and reasoning (Result.Text,
	// Result.Reasoning), for a judge that reads the text, a reasoning
	// store, or a text limit.
	KeepText bool
	// LimitText caps choice 0's text at TextLimit characters (runes; it
	// implies KeepText): the chunk that passes it is cut to fit and the
	// response ends there (Cut).
	LimitText bool
	TextLimit int
	// SingleChoice says the request asked for one choice.
	SingleChoice bool
	// ClientUsage says the client asked for usage
	// (stream_options.include_usage); without it, or with the Usage quirk,
	// usage is taken out of the chunks and UsageChunk gives it back once.
	ClientUsage bool
}

// Normalizer turns one upstream response into the canonical one (SPEC §2,
// QUIRKS section A): streamed chunk by chunk (Chunk), or whole (Whole).
// Streamed and whole responses go through the same collector and the same
// quirk code. Each chunk is parsed once, into spans of its bytes; a chunk
// nothing changes — every ordinary text delta — is passed on as its own
// bytes, and a changed one is written with an append-style encoder into a
// buffer the Normalizer reuses.
//
// Decisions: one collector serves every choice of a response (responses
// with tools and n > 1 are not supported upstream-side anyway); a chunk
// whose only content was tool-call fragments that are held back is dropped
// rather than sent empty; a second terminal finish reason is dropped, not
// merged.
//
// A Normalizer is created per response and is not safe for concurrent use.
type Normalizer struct {
	opts      Options
	collector Collector
	fixes     Fixes
	hold      bool // usage is taken out of the chunks
	keepText  bool
	out       string // the client's reasoning member

	head     []byte // `"id":…,"object":…,"created":…,"model":…` of the first chunk with an id
	headID   []byte // that id's raw value, within head
	model    []byte // the model the upstream reported: its raw value, within head (or a whole body)
	seen     bool
	roleSeen bool
	finished []bool // per choice index: a terminal finish reason went out
	finish   string // choice 0's last finish reason

	usage     Usage
	usageSeen bool
	usageRaw  []byte

	think     ThinkSplitter
	text      strings.Builder
	reasoning strings.Builder
	textChars int
	cut       bool

	protocol error // what made a whole response unusable, for Result

	heldFinishes []heldFinish // PostFinish: finish reasons held to the end

	pending []pendingCall // Buffer: one merged fragment per call, by canonical index
	final   [][]byte      // Buffer: held finishing chunks
	flushed bool

	tmpl         template // the last chunk, when the next may reuse it (template.go)
	fullPathOnly bool     // tests: no template

	// Per-chunk scratch, reused.
	top, choice, delta []member
	elems              []span
	out1, cbuf, dbuf   []byte
	tbuf               []byte
}

type span struct {
	omit    bool   // the choice goes out no more (PostFinish)
	b       []byte // the element as received, when rewritten is false
	start   int    // the rewritten element's bytes in cbuf
	end     int
	rewrite bool
}

type pendingCall struct {
	id, name string
	args     []byte
	extra    []member
}

// NewNormalizer returns a Normalizer for one response.
func NewNormalizer(opts Options) *Normalizer {
	n := &Normalizer{opts: opts, out: opts.ReasoningOut}
	if n.out == "" {
		n.out = "reasoning_content"
	}
	n.collector = Collector{quirks: opts.Quirks, fixes: &n.fixes}
	n.hold = !opts.ClientUsage || opts.Quirks.Usage
	n.keepText = opts.KeepText || opts.LimitText
	return n
}

// IncompleteError is an upstream response that broke off or could not be
// used: a stream without its end marker, a cut or oversized body, an
// unparseable response, or an error object sent mid-response (QUIRKS A20,
// A38). It is never a success.
type IncompleteError struct {
	Upstream string
	// Message is the upstream's own message when it sent an error object.
	Message string
	Err     error
}

func (e *IncompleteError) Error() string {
	if e.Message != "" {
		return "upstream " + e.Upstream + " sent an error mid-response: " + e.Message
	}
	return "upstream " + e.Upstream + ": response incomplete: " + e.Err.Error()
}

func (e *IncompleteError) Unwrap() error { return e.Err }

// ErrNoDone is the cause of a stream that ended without its end marker.
var ErrNoDone = errors.New("the stream ended without data: [DONE]")

var errErrorObject = errors.New("error object")

// Chunk returns the payload to send for one upstream data payload: the
// payload itself when nothing changed, else its canonical form in a buffer
// valid until the next call. send is false when nothing is to be sent for
// it. An error is a *ProtocolError (a payload that is not a JSON object
// included) or an *IncompleteError (an error object, A38).
func (n *Normalizer) Chunk(data []byte) (out []byte, send bool, err error) {
	if n.tmpl.kind != noTemplate {
		if out, ok := n.fromTemplate(data); ok {
			return out, true, nil
		}
		n.tmpl.kind = noTemplate
	}
	before := n.state()
	if out, send, err = n.chunk(data); send && !n.fullPathOnly {
		n.noteTemplate(data, out, before)
	}
	return out, send, err
}

// chunk is Chunk's full path: the chunk parsed, every fix applied.
func (n *Normalizer) chunk(data []byte) (out []byte, send bool, err error) {
	switch first := firstByte(data); {
	case first == ':':
		// A keep-alive sent as data (QUIRKS A34, `data: : keepalive`).
		n.fixes[FixKeepaliveData]++
		return nil, false, nil
	case first != '{':
		return nil, false, notObject(data)
	}
	if n.top, err = parseMembers(n.top, data); err != nil {
		return nil, false, notObject(data)
	}
	if v := lookup(n.top, "error"); !isNull(v) {
		return nil, false, n.errorObject(data)
	}
	if !n.seen {
		n.noteHead(n.top)
	}
	e, drop := n.chunkFixes()
	if drop {
		return nil, false, nil
	}
	changed := e.replaceID || e.dropNullError || e.dropUsage
	held := false
	if choices := lookup(n.top, "choices"); len(choices) > 0 && choices[0] == '[' {
		rewrite, heldOnly, drop, err := n.choices(choices)
		if err != nil || drop {
			return nil, false, err
		}
		changed, held = changed || rewrite, heldOnly
	} else if !isNull(choices) {
		return nil, false, &ProtocolError{Index: -1, Msg: "choices must be an array"}
	}
	if held && !(e.usage && !e.dropUsage) {
		return nil, false, nil // only held fragments, nothing else to say
	}
	out = data
	if changed {
		out = n.encodeChunk(e)
	}
	if n.opts.Buffer && n.collector.Calls() > 0 && n.finish != "" && !n.flushed {
		// The chunk that finishes a response with calls waits for them.
		n.final = append(n.final, bytes.Clone(out))
		return nil, false, nil
	}
	return out, true, nil
}

// chunkEdit is what the chunk-level fixes change in one chunk.
type chunkEdit struct {
	usage         bool // the chunk carries a usage object
	replaceID     bool // its id becomes the first chunk's (A24)
	dropNullError bool // its "error": null goes (A40)
	dropUsage     bool // its usage goes, held for the end (A22)
}

// chunkFixes applies the chunk-level fixes and takes the usage; drop
// reports a chunk to leave out (a placeholder, or usage alone).
func (n *Normalizer) chunkFixes() (e chunkEdit, drop bool) {
	choices, usage := lookup(n.top, "choices"), lookup(n.top, "usage")
	e.usage = len(usage) > 0 && usage[0] == '{'
	if n.opts.Quirks.Chunks {
		id := lookup(n.top, "id")
		if emptyArray(choices) && !e.usage && (len(id) == 0 || string(id) == `""`) {
			n.fixes[FixPlaceholderChunk]++ // A23
			return e, true
		}
		if n.headID != nil && !bytes.Equal(id, n.headID) {
			n.fixes[FixChunkID]++ // A24
			e.replaceID = true
		}
		if v := lookup(n.top, "error"); v != nil { // null, or it would have ended the stream
			n.fixes[FixNullError]++ // A40: clients that test for the key would see an error
			e.dropNullError = true
		}
	}
	if e.usage {
		n.takeUsage(usage)
		if n.hold {
			if emptyArray(choices) {
				return e, true // a usage-only chunk (A22): sent once, at the end
			}
			e.dropUsage = true
		}
	}
	return e, false
}

// choices normalizes a chunk's choices in place in n.elems. held reports
// that every choice's only content was held fragments.
func (n *Normalizer) choices(raw []byte) (rewrite, held, drop bool, err error) {
	var ok bool
	if n.elems, ok = n.elements(raw); !ok {
		return false, false, false, &ProtocolError{Index: -1, Msg: "choices must be an array"}
	}
	n.cbuf = n.cbuf[:0]
	held = len(n.elems) > 0
	for k := range n.elems {
		r, heldOnly, drop, err := n.chunkChoice(k, len(n.elems))
		if err != nil || drop {
			return false, false, drop, err
		}
		held = held && heldOnly
		rewrite = rewrite || r
	}
	return rewrite, held, false, nil
}

// modelName is a reported model's name: the JSON string raw's text
// (clipped), "" for anything else.
func modelName(raw []byte) string {
	if len(raw) < 2 || raw[0] != '"' {
		return ""
	}
	return Clip(stringValue(raw, 0, len(raw), bytes.IndexByte(raw, '\\') >= 0))
}

// noteHead keeps the id, object, created and model of the first chunk
// with a non-empty string id: every chunk the Normalizer makes carries
// them, and with the Chunks quirk every chunk gets that id (A24).
func (n *Normalizer) noteHead(top []member) {
	id := lookup(top, "id")
	if len(id) <= 2 || id[0] != '"' {
		return
	}
	n.seen = true
	n.collector.seed = string(id)
	for _, k := range [...]string{"id", "object", "created", "model"} {
		i := index(top, k)
		if i < 0 {
			continue
		}
		if len(n.head) > 0 {
			n.head = append(n.head, ',')
		}
		n.head = top[i].appendKey(n.head)
		n.head = append(n.head, ':')
		start := len(n.head)
		n.head = append(n.head, top[i].value...)
		switch k {
		case "id":
			n.headID = n.head[start:len(n.head):len(n.head)]
		case "model":
			n.model = n.head[start:len(n.head):len(n.head)]
		}
	}
}

// Model is the model the upstream reported ("" when it named none), for
// the trace: decoded only when asked for.
func (n *Normalizer) Model() string { return modelName(n.model) }

// elements splits a choices array into n.elems.
func (n *Normalizer) elements(raw []byte) ([]span, bool) {
	elems := n.elems[:0]
	r := readArray(raw, skipSpace(raw, 0))
	for {
		more, err := r.more()
		if err != nil {
			return elems, false
		}
		if !more {
			return elems, true
		}
		end, err := skipValue(raw, r.i, 1)
		if err != nil {
			return elems, false
		}
		elems = append(elems, span{b: raw[r.i:end]})
		r.i = end
	}
}

// chunkChoice normalizes choice k of count, in place in n.elems (its
// rewritten bytes go to n.cbuf). heldOnly reports a choice whose only
// content was tool-call fragments held back; drop, a chunk to leave out
// altogether (a cut left nothing).
func (n *Normalizer) chunkChoice(k, count int) (rewrite, heldOnly, drop bool, err error) {
	raw := n.elems[k].b
	if n.choice, err = parseMembers(n.choice, raw); err != nil {
		return false, false, false, &ProtocolError{Index: -1, Msg: "a choice must be an object"}
	}
	q := n.opts.Quirks
	idx, idxPos := 0, index(n.choice, "index")
	if idxPos >= 0 {
		idx, _ = strconv.Atoi(string(n.choice[idxPos].value))
	}
	setIndex := q.Chunks && n.opts.SingleChoice && count == 1 && (idxPos < 0 || idx != 0)
	if setIndex {
		n.fixes[FixChoiceIndex]++ // A27: missing, non-zero or incrementing
		idx = 0
	}
	addRole := false
	if q.Chunks && !n.roleSeen {
		n.roleSeen = true
		addRole = k == 0
	}
	d := delta{}
	dPos := index(n.choice, "delta")
	if dPos >= 0 && !isNull(n.choice[dPos].value) {
		if d, err = n.streamDelta(n.choice[dPos].value, idx, addRole); err != nil {
			return false, false, false, err
		}
	}
	fPos := index(n.choice, "finish_reason")
	finish, omit, drop := n.choiceFinish(idx, count, fPos, dPos, &d)
	switch {
	case drop:
		return false, false, true, nil // nothing of it fits, and it says nothing else
	case omit:
		n.elems[k] = span{omit: true}
		return true, true, false, nil
	}
	if !setIndex && !d.rewrite && finish == nil {
		return false, d.heldOnly, false, nil
	}
	start := len(n.cbuf)
	n.cbuf = n.encodeChoice(n.cbuf, choiceEdit{setIndex: setIndex, idxPos: idxPos, dPos: dPos, rewriteDelta: d.rewrite, fPos: fPos, finish: finish})
	n.elems[k] = span{start: start, end: len(n.cbuf), rewrite: true}
	return true, d.heldOnly, false, nil
}

// choiceFinish applies the finish-reason fixes to the current choice and,
// with the PostFinish quirk, holds a terminal finish to the end of the
// stream, or folds a later chunk of a finished choice into the held
// finish. It returns the finish_reason to write (nil: as it came), omit
// for a choice that goes out no more, drop for a chunk the text limit
// left empty.
func (n *Normalizer) choiceFinish(idx, count, fPos, dPos int, d *delta) (finish []byte, omit, drop bool) {
	post := n.opts.Quirks.PostFinish && !n.opts.Buffer
	if fPos < 0 || isNull(n.choice[fPos].value) {
		if d.cut && d.cutEmpty && count == 1 && !d.calls {
			return nil, false, true
		}
		if post && idx < len(n.finished) && n.finished[idx] {
			n.fixes[FixPostFinish]++
			if !n.choiceSays(dPos, d) {
				n.held(idx).fold(n.choice)
				return nil, true, false
			}
		}
		return nil, false, false
	}
	fRaw := n.choice[fPos].value
	if d.cut {
		finish, fRaw = []byte(`"length"`), []byte(`"length"`) // the text limit ends it
	}
	replace, dropChoice := n.finishReason(fRaw, idx, *d)
	if replace != nil {
		finish = replace
	}
	d.heldOnly = d.heldOnly || dropChoice
	final := finish
	if final == nil {
		final = fRaw
	}
	if !post || dropChoice || string(final) == "null" || idx >= maxHeldFinish {
		return finish, false, false
	}
	h := n.held(idx)
	h.reason = append(h.reason[:0], final...)
	if !n.choiceSays(dPos, d) {
		h.fold(n.choice) // the choice goes no more: its other members go with its finish
		return nil, true, false
	}
	return []byte("null"), false, false
}

// heldFinish is a choice's finish reason held to the end of the stream
// (the PostFinish quirk), with the members of its chunks that had nothing
// else to say.
type heldFinish struct {
	index  int
	reason []byte
	extra  []member
}

// maxHeldFinish bounds the choices whose finish is held.
const maxHeldFinish = 1024

// held returns choice idx's held finish, made when missing.
func (n *Normalizer) held(idx int) *heldFinish {
	for i := range n.heldFinishes {
		if n.heldFinishes[i].index == idx {
			return &n.heldFinishes[i]
		}
	}
	n.heldFinishes = append(n.heldFinishes, heldFinish{index: idx})
	return &n.heldFinishes[len(n.heldFinishes)-1]
}

// fold keeps a choice's members other than its index, delta and finish
// reason (Azure's content_filter_results, logprobs), each by its name.
func (h *heldFinish) fold(choice []member) {
	for _, m := range choice {
		switch m.key {
		case "index", "delta", "finish_reason":
			continue
		}
		if i := index(h.extra, m.key); i >= 0 {
			h.extra[i].value = append([]byte(nil), m.value...)
			continue
		}
		h.extra = append(h.extra, m.clone())
	}
}

// choiceSays reports whether the current choice's delta says anything.
func (n *Normalizer) choiceSays(dPos int, d *delta) bool {
	if d.rewrite {
		return !d.empty
	}
	if dPos < 0 {
		return false
	}
	v := n.choice[dPos].value
	return !isNull(v) && string(v) != "{}"
}

// heldFinishChunks are the chunks that send the held finish reasons, one
// per choice, in the order the choices finished.
func (n *Normalizer) heldFinishChunks() [][]byte {
	var out [][]byte
	for _, h := range n.heldFinishes {
		b := []byte(`[{"index":`)
		b = strconv.AppendInt(b, int64(h.index), 10)
		b = append(b, `,"delta":{},"finish_reason":`...)
		b = append(b, h.reason...)
		for i := range h.extra {
			b = append(b, ',')
			b = h.extra[i].appendKey(b)
			b = append(b, ':')
			b = append(b, h.extra[i].value...)
		}
		out = append(out, n.made(string(append(b, "}]"...))))
	}
	n.heldFinishes = nil
	return out
}

// choiceEdit is what chunkChoice changes in one choice.
type choiceEdit struct {
	setIndex     bool
	idxPos       int
	dPos         int
	rewriteDelta bool // the delta is n.dbuf
	fPos         int
	finish       []byte // the new finish_reason, or nil
}

// encodeChoice appends the current choice with its changes to b.
func (n *Normalizer) encodeChoice(b []byte, e choiceEdit) []byte {
	b = append(b, '{')
	for i := range n.choice {
		if i > 0 {
			b = append(b, ',')
		}
		m := &n.choice[i]
		b = m.appendKey(b)
		b = append(b, ':')
		switch {
		case i == e.idxPos && e.setIndex:
			b = append(b, '0')
		case i == e.dPos && e.rewriteDelta:
			b = append(b, n.dbuf...)
		case i == e.fPos && e.finish != nil:
			b = append(b, e.finish...)
		default:
			b = append(b, m.value...)
		}
	}
	if e.setIndex && e.idxPos < 0 {
		b = append(b, `,"index":0`...)
	}
	return append(b, '}')
}

// delta is what streamDelta did to one delta.
type delta struct {
	rewrite  bool // n.dbuf holds the new delta
	heldOnly bool // its only content was held tool-call fragments
	calls    bool // it carried tool-call fragments
	cut      bool // the text limit was reached in it
	cutEmpty bool // ... and none of its text fit
	empty    bool // it says nothing (after the rewrite)
}

// deltaEdit is what streamDelta changes in one delta: positions of its
// members (-1: none), and their new values.
type deltaEdit struct {
	addRole   bool
	blocks    bool   // the content was typed blocks, now e.content (A31)
	cPos      int    // content
	content   []byte // its new value, or nil
	renamePos int    // the upstream's reasoning member, moved to the client's
	moved     []byte // reasoning to add as the client's member, or nil
	tPos      int    // tool_calls
	sendCalls int    // canonical fragments in n.tbuf
}

// streamDelta normalizes one choice's delta into n.dbuf: the role the
// first delta lacks (A26), reasoning moved to the client's member (A29,
// A30), choice 0's text kept and limited, tool-call fragments made
// canonical (SPEC §2) or held.
func (n *Normalizer) streamDelta(raw []byte, idx int, addRole bool) (d delta, err error) {
	if raw[0] != '{' {
		return d, &ProtocolError{Index: -1, Msg: "a delta must be an object"}
	}
	if n.delta, err = parseMembers(n.delta, raw); err != nil {
		return d, &ProtocolError{Index: -1, Msg: "a delta must be an object"}
	}
	e := deltaEdit{addRole: addRole && index(n.delta, "role") < 0, cPos: index(n.delta, "content"), renamePos: -1, tPos: index(n.delta, "tool_calls")}
	if e.addRole {
		n.fixes[FixMissingRole]++
	}
	if e.cPos >= 0 && n.opts.Quirks.ContentBlocks && firstByte(n.delta[e.cPos].value) == '[' {
		n.flattenContent(&e, idx)
	}
	n.deltaReasoning(&e, idx)
	if n.keepText && idx == 0 && n.opts.ReasoningIn != ReasoningThink {
		n.deltaText(&e, &d)
	}
	if e.tPos >= 0 {
		d.calls = !isNull(n.delta[e.tPos].value) && string(n.delta[e.tPos].value) != "[]"
		n.tbuf = append(n.tbuf[:0], '[')
		if n.opts.Buffer {
			err = n.holdFragments(n.delta[e.tPos].value)
		} else {
			n.tbuf, e.sendCalls, err = n.collector.appendFragments(n.tbuf, n.delta[e.tPos].value, false)
		}
		if err != nil {
			return d, err
		}
		n.tbuf = append(n.tbuf, ']')
	}
	if !e.addRole && e.content == nil && e.moved == nil && e.renamePos < 0 && e.tPos < 0 && !e.blocks {
		return d, nil
	}
	n.encodeDelta(&e, &d)
	return d, nil
}

// deltaReasoning moves a delta's reasoning to the client's member:
// renamed, or split out of <think> tags in its content (kept, for choice
// 0, with KeepText).
func (n *Normalizer) deltaReasoning(e *deltaEdit, idx int) {
	switch n.opts.ReasoningIn {
	case ReasoningThink:
		if e.blocks || e.cPos < 0 || len(n.delta[e.cPos].value) <= 2 || n.delta[e.cPos].value[0] != '"' {
			return
		}
		r, c := n.think.Split(stringOf2(n.delta[e.cPos].value))
		if n.keepText && idx == 0 {
			n.text.WriteString(c)
			n.textChars += utf8.RuneCountInString(c)
			n.reasoning.WriteString(r)
		}
		e.content = appendString(nil, c)
		if r != "" {
			e.moved = appendString(nil, r)
		}
	case ReasoningField:
		if n.out != "reasoning" {
			e.renamePos = index(n.delta, "reasoning")
		}
	case ReasoningContent:
		if n.out != "reasoning_content" {
			e.renamePos = index(n.delta, "reasoning_content")
		}
	}
}

// deltaText keeps choice 0's text and reasoning, and cuts the text at the
// limit (the content then becomes what fits).
func (n *Normalizer) deltaText(e *deltaEdit, d *delta) {
	if e.cPos >= 0 {
		content := n.delta[e.cPos].value
		if e.blocks {
			content = e.content
		}
		if text, ok := stringViewOf(content); ok {
			chars := utf8.RuneCountInString(text)
			if n.opts.LimitText && n.textChars+chars > n.opts.TextLimit {
				kept := cutRunes(text, max(n.opts.TextLimit-n.textChars, 0))
				n.cut, d.cut, d.cutEmpty = true, true, kept == ""
				text, chars = kept, utf8.RuneCountInString(kept)
				e.content = appendString(nil, kept)
			}
			n.text.WriteString(text)
			n.textChars += chars
		}
	}
	in := "reasoning_content"
	if n.opts.ReasoningIn == ReasoningField {
		in = "reasoning"
	}
	if v, ok := stringViewOf(lookup(n.delta, in)); ok {
		n.reasoning.WriteString(v)
	}
}

// encodeDelta writes the edited delta into n.dbuf.
func (n *Normalizer) encodeDelta(e *deltaEdit, d *delta) {
	d.rewrite = true
	says := false // the new delta carries something other than null or ""
	b := append(n.dbuf[:0], '{')
	if e.addRole {
		b = append(b, `"role":"assistant"`...)
		says = true
	}
	for i := range n.delta {
		if i == e.renamePos || i == e.tPos && e.sendCalls == 0 {
			continue
		}
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = n.delta[i].appendKey(b)
		b = append(b, ':')
		v := n.delta[i].value
		switch {
		case i == e.cPos && e.content != nil:
			v = e.content
		case i == e.tPos:
			v = n.tbuf
		}
		b = append(b, v...)
		says = says || string(v) != "null" && string(v) != `""`
	}
	moved := e.moved
	if e.renamePos >= 0 {
		moved = n.delta[e.renamePos].value
	}
	if moved != nil {
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = appendString(b, n.out)
		b = append(b, ':')
		b = append(b, moved...)
		says = says || string(moved) != "null" && string(moved) != `""`
	}
	n.dbuf = append(b, '}')
	d.empty = len(n.dbuf) == 2
	d.heldOnly = e.tPos >= 0 && e.sendCalls == 0 && !says
}

// holdFragments keeps a delta's fragments in Buffer mode: merged into one
// pending fragment per call, sent by Flush.
func (n *Normalizer) holdFragments(toolCalls []byte) error {
	_, err := n.collector.each(toolCalls, false, func(f out1) {
		for len(n.pending) <= f.index {
			n.pending = append(n.pending, pendingCall{})
		}
		p := &n.pending[f.index]
		if f.id != "" {
			p.id, p.name = f.id, f.name
		}
		if text, ok := stringOf(f.args); ok {
			p.args = append(p.args, text...)
		}
		for _, m := range f.extra {
			p.extra = append(p.extra, m.clone())
		}
	})
	return err
}

// finishReason applies the finish-reason fixes to one choice's finish
// (A15, A16, A18) and records it; it returns the value to write instead,
// or nil, and whether the choice has nothing left to say.
func (n *Normalizer) finishReason(raw []byte, idx int, d delta) (replace []byte, dropChoice bool) {
	reason, _ := stringOf(raw)
	for len(n.finished) <= idx && idx < 1024 {
		n.finished = append(n.finished, false)
	}
	finished := idx < len(n.finished) && n.finished[idx]
	if n.opts.Quirks.FinishReason {
		switch {
		case finished:
			// A second terminal finish: dropped, and the choice with it
			// when it says nothing else (clients keep the last finish).
			n.fixes[FixSecondFinishReason]++
			return []byte("null"), !d.rewrite && n.choiceSaysNothing() || d.rewrite && d.empty
		case reason == "":
			n.fixes[FixEmptyFinishReason]++ // A18: no finish reason, not a terminal one
			return []byte("null"), false
		case reason == "stop" && n.collector.Calls() > 0:
			n.fixes[FixFinishReason]++
			reason, replace = "tool_calls", []byte(`"tool_calls"`)
		}
	}
	if idx < len(n.finished) {
		n.finished[idx] = true
	}
	if idx == 0 {
		n.finish = reason
	}
	return replace, false
}

// choiceSaysNothing reports whether the current choice's delta is absent,
// null or {}.
func (n *Normalizer) choiceSaysNothing() bool {
	v := lookup(n.choice, "delta")
	return len(v) == 0 || string(v) == "{}" || string(v) == "null"
}

// encodeChunk writes the chunk with its rewritten members into n.out1.
func (n *Normalizer) encodeChunk(e chunkEdit) []byte {
	replaceID, dropNullError, dropUsage := e.replaceID, e.dropNullError, e.dropUsage
	b := append(n.out1[:0], '{')
	hadID := false
	for i := range n.top {
		m := &n.top[i]
		switch {
		case m.key == "error" && dropNullError, m.key == "usage" && dropUsage:
			continue
		}
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = m.appendKey(b)
		b = append(b, ':')
		switch {
		case m.key == "id" && replaceID:
			hadID = true
			b = append(b, n.headID...)
		case m.key == "choices" && len(m.value) > 0 && m.value[0] == '[':
			b = append(b, '[')
			first := true
			for _, e := range n.elems {
				if e.omit {
					continue
				}
				if !first {
					b = append(b, ',')
				}
				first = false
				if e.rewrite {
					b = append(b, n.cbuf[e.start:e.end]...)
				} else {
					b = append(b, e.b...)
				}
			}
			b = append(b, ']')
		default:
			b = append(b, m.value...)
		}
	}
	if replaceID && !hadID {
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = append(b, `"id":`...)
		b = append(b, n.headID...)
	}
	n.out1 = append(b, '}')
	return n.out1
}

// takeUsage records a chunk's usage as a snapshot (A25).
func (n *Normalizer) takeUsage(raw []byte) {
	if u, ok := ParseUsage(raw); ok {
		n.usage.snapshot(u)
		n.usageSeen = true
		n.usageRaw = append(n.usageRaw[:0], raw...)
	}
}

func (n *Normalizer) errorObject(data []byte) error {
	msg := UpstreamMessage(data)
	if msg == "" {
		msg = "an unspecified error"
	}
	return &IncompleteError{Upstream: n.opts.Upstream, Message: Clip(msg), Err: errErrorObject}
}

func notObject(data []byte) error {
	return &ProtocolError{Index: -1, Msg: "a stream event is not a JSON object: " + truncate(string(data), 80)}
}

// emptyArray reports whether a choices value is absent, null or [].
func emptyArray(v []byte) bool {
	if isNull(v) {
		return true
	}
	if v[0] != '[' {
		return false
	}
	return skipSpace(v, 1) < len(v) && v[skipSpace(v, 1)] == ']'
}

// cutRunes returns the first n runes of s.
func cutRunes(s string, n int) string {
	for i := range s {
		if n == 0 {
			return s[:i]
		}
		n--
	}
	return s
}

// stringViewOf is stringOf without a copy when the string has no escapes:
// the view shares raw's bytes, and lives as long as they do.
func stringViewOf(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' {
		return "", false
	}
	end, escaped, err := skipString(raw, 0)
	if err != nil || end != len(raw) {
		return "", false
	}
	return stringView(raw, 0, end, escaped), true
}

// stringOf2 decodes a JSON string value known to be one.
func stringOf2(raw []byte) string {
	s, _ := stringOf(raw)
	return s
}

// Finished says how a stream ended, for the judge: Done is whether it is
// complete (its [DONE], a finish reason from an upstream that sends no
// [DONE], or the text limit reached).
type Finished struct {
	Done bool
	// Tail holds the chunks to send after the response is judged
	// acceptable, after Flush's: the text a <think> splitter still held, a
	// synthesized finish reason (A17), the usage chunk (A22).
	Tail [][]byte
}

// Finish ends a stream that reached its end (sawDone: its [DONE]) or a
// clean EOF, and returns what the caller needs to judge and end it.
func (n *Normalizer) Finish(sawDone bool) Finished {
	f := Finished{Done: sawDone || n.cut}
	q := n.opts.Quirks
	if !f.Done && n.finish != "" && q.NoDone {
		f.Done = true // QUIRKS A21: this upstream ends with a finish reason and no [DONE]
		n.fixes[FixNoDone]++
	}
	if t := n.thinkTail(); t != nil {
		f.Tail = append(f.Tail, t)
	}
	if f.Done {
		f.Tail = append(f.Tail, n.heldFinishChunks()...)
	}
	if f.Done && !n.cut && n.finish == "" && q.MissingFinishReason {
		f.Tail = append(f.Tail, n.finishChunk())
	}
	if u := n.UsageChunk(); u != nil && n.opts.ClientUsage && n.hold {
		f.Tail = append(f.Tail, u) // once, last, as OpenAI sends it (QUIRKS A22, A25)
	}
	return f
}

// Cut reports whether the text limit was reached: the caller ends the
// stream there, with LengthChunk when no finish reason went out.
func (n *Normalizer) Cut() bool { return n.cut }

// Result is what a response came to, for the judge and the record.
type Result struct {
	Calls    []CollectedCall
	CallsErr error // the collector's *ProtocolError, if any
	// FinishReason is choice 0's finish reason after normalization.
	FinishReason string
	// Text and Reasoning are choice 0's, kept with Options.KeepText.
	Text, Reasoning string
	Usage           Usage
	UsageSeen       bool
	Fixes           Fixes
}

// Result returns what the response came to so far; protocol is the
// error a chunk ended the response with, if any (it wins over the
// collector's).
func (n *Normalizer) Result(protocol error) Result {
	r := Result{FinishReason: n.finish, Text: n.text.String(), Reasoning: n.reasoning.String(),
		Usage: n.usage, UsageSeen: n.usageSeen, Fixes: n.fixes}
	r.Calls, r.CallsErr = n.collector.Finish()
	if protocol == nil {
		protocol = n.protocol
	}
	if protocol != nil {
		r.CallsErr = protocol
	}
	return r
}

// Fixes returns the normalizations applied so far.
func (n *Normalizer) Fixes() Fixes { return n.fixes }

// Usage is the usage reported so far, and FinishReason choice 0's finish
// reason: what Result says of them, without collecting the calls.
func (n *Normalizer) Usage() Usage         { return n.usage }
func (n *Normalizer) FinishReason() string { return n.finish }

// Flush returns, in Buffer mode, the chunks held back: one chunk carrying
// every call whole, then the finishing chunk(s). Call it once the response
// has been judged acceptable; it returns nothing when nothing is held.
func (n *Normalizer) Flush() [][]byte {
	if n.flushed || len(n.pending) == 0 && len(n.final) == 0 {
		return nil
	}
	n.flushed = true
	var out [][]byte
	if len(n.pending) > 0 {
		calls := []byte{'['}
		for k, p := range n.pending {
			if k > 0 {
				calls = append(calls, ',')
			}
			calls = out1{index: k, id: p.id, name: p.name, args: appendString(nil, string(p.args)), extra: p.extra}.append(calls)
		}
		calls = append(calls, ']')
		out = append(out, n.made(`[{"index":0,"delta":{"tool_calls":`+string(calls)+`},"finish_reason":null}]`))
	}
	return append(out, n.final...)
}

// made is a chunk the Normalizer makes: the first chunk's id, object,
// created and model, then choices.
func (n *Normalizer) made(choices string) []byte {
	b := make([]byte, 0, len(n.head)+len(choices)+16)
	b = append(b, '{')
	b = append(b, n.head...)
	if len(n.head) > 0 {
		b = append(b, ',')
	}
	b = append(b, `"choices":`...)
	b = append(b, choices...)
	return append(b, '}')
}

// LengthChunk returns a chunk that ends choice 0 with finish_reason
// "length", for a stream cut at its output budget.
func (n *Normalizer) LengthChunk() []byte {
	n.finish = "length"
	return n.made(`[{"index":0,"delta":{},"finish_reason":"length"}]`)
}

// finishChunk is the finish reason for an upstream that ended with [DONE]
// but never sent one (A17): "tool_calls" when calls were made, else
// "stop".
func (n *Normalizer) finishChunk() []byte {
	reason := "stop"
	if n.collector.Calls() > 0 {
		reason = "tool_calls"
	}
	n.finish = reason
	n.fixes[FixMissingFinishReason]++
	return n.made(`[{"index":0,"delta":{},"finish_reason":"` + reason + `"}]`)
}

// thinkTail is a chunk with the text the <think> splitter still holds at
// the end of a stream, or nil.
func (n *Normalizer) thinkTail() []byte {
	r, c := n.think.Flush()
	if r == "" && c == "" {
		return nil
	}
	d := []byte{'{'}
	if c != "" {
		d = append(d, `"content":`...)
		d = appendString(d, c)
	}
	if r != "" {
		if len(d) > 1 {
			d = append(d, ',')
		}
		d = appendString(d, n.out)
		d = append(d, ':')
		d = appendString(d, r)
	}
	d = append(d, '}')
	return n.made(`[{"index":0,"delta":` + string(d) + `,"finish_reason":null}]`)
}

// UsageChunk returns the one usage chunk to send at the end of a stream
// whose usage was held, nil when the upstream reported none: the last
// usage object the upstream sent, its token counts the largest reported,
// with "choices": [] (what OpenAI sends for stream_options.include_usage).
func (n *Normalizer) UsageChunk() []byte {
	if !n.usageSeen {
		return nil
	}
	u, _ := ParseObject(bytes.Clone(n.usageRaw))
	u.Set("prompt_tokens", strconv.AppendInt(nil, n.usage.PromptTokens, 10))
	u.Set("completion_tokens", strconv.AppendInt(nil, n.usage.CompletionTokens, 10))
	u.Set("total_tokens", strconv.AppendInt(nil, n.usage.TotalTokens, 10))
	b := n.made(`[]`)
	b = append(b[:len(b)-1], `,"usage":`...)
	b = append(b, u.JSON()...)
	return append(b, '}')
}

// view returns s's bytes without copying; they must not be modified.
func view(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

func firstByte(b []byte) byte {
	for i := 0; i < len(b); i++ {
		if !isSpace(b[i]) {
			return b[i]
		}
	}
	return 0
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
