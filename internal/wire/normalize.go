package wire

import (
	"bytes"
	"errors"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/toolgate/toolgate/internal/enum"
)

// ReasoningSource says where an upstream puts reasoning in its responses
// (docs/quirks.md A29, A30): configured per upstream, never guessed.
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

// Normalizer turns one upstream response into the canonical one (docs/spec.md §2,
// docs/quirks.md section A): streamed chunk by chunk (Chunk), or whole (Whole).
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
	// read counts the upstream's chunks read (Chunk's, and the events Run
	// took); first is the chunk at which each normalization was first
	// applied (FirstChunks).
	read     int
	first    FixChunks
	hold     bool // usage is taken out of the chunks
	keepText bool
	out      string // the client's reasoning member

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

	fullPathOnly bool // tests: no template
	fullPaths    int  // tests: the chunks that took the full path

	// s is the per-chunk scratch: taken from a pool by Chunk and Whole,
	// let go of while the stream waits (Rest); nil then.
	s *scratch
	// tmpl is the last chunk, when the next may reuse it (template.go).
	tmpl template
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

// scratch is a Normalizer's per-chunk working memory. Nothing in it is
// needed from one chunk to the next, so a Normalizer whose stream waits
// for its upstream lets go of it (Rest) and takes a scratch again for its
// next chunk: an idle stream holds its state and its template only.
type scratch struct {
	top, choice, delta, frag, fn []member
	elems                        []span
	out1, cbuf, dbuf, tbuf       []byte
	calls                        []*collecting // emptied calls for the collector (Collector.spare)
}

var scratches = sync.Pool{New: func() any { return new(scratch) }}

// maxPooledScratch bounds the scratch kept for another chunk or stream.
const maxPooledScratch = 64 << 10

// Rest lets go of n's per-chunk scratch while its stream waits for the
// next event: nothing Chunk returned may be used afterwards. The next
// Chunk takes a scratch from the pool (this one, or another stream's).
// The template stays, when it is small (maxRestingTemplate): a stream
// paced by its model, one chunk per read as real providers send them,
// would otherwise take the full path for every chunk.
func (n *Normalizer) Rest() {
	if n.tmpl.size() > maxRestingTemplate {
		n.tmpl = template{}
	}
	s := n.s
	if s == nil {
		return
	}
	n.s = nil
	s.frag, s.fn, s.calls = n.collector.frag[:0], n.collector.fn[:0], n.collector.spare
	n.collector.frag, n.collector.fn, n.collector.spare = nil, nil, nil
	if !s.large() {
		scratches.Put(s)
	}
}

// maxRestingTemplate bounds the template's bytes a waiting stream keeps:
// a chunk and its rewrite, each of a few hundred bytes from every
// provider measured, fit.
const maxRestingTemplate = 2 << 10

// wake takes a scratch for the next chunk.
func (n *Normalizer) wake() {
	s := scratches.Get().(*scratch)
	n.collector.frag, n.collector.fn, n.collector.spare = s.frag[:0], s.fn[:0], s.calls
	s.calls = nil
	n.s = s
}

// large reports scratch grown by a large chunk: left to the garbage
// collector rather than kept in the pool.
func (s *scratch) large() bool {
	return max(cap(s.out1), cap(s.cbuf), cap(s.dbuf), cap(s.tbuf)) > maxPooledScratch ||
		cap(s.top)+cap(s.choice)+cap(s.delta)+cap(s.frag)+cap(s.fn)+cap(s.elems) > maxPooledScratch/64
}

// normalizers are Normalizers released by the streams they served.
var normalizers = sync.Pool{New: func() any { return new(Normalizer) }}

// NewNormalizer returns a Normalizer for one response.
func NewNormalizer(opts Options) *Normalizer {
	n := normalizers.Get().(*Normalizer)
	n.reset(opts)
	return n
}

// reset makes n a new Normalizer for opts, keeping only its buffers
// (emptied) from the response it served before.
func (n *Normalizer) reset(opts Options) {
	*n = Normalizer{opts: opts, out: opts.ReasoningOut, head: n.head[:0], finished: n.finished[:0], tmpl: n.tmpl.emptied()}
	if n.out == "" {
		n.out = "reasoning_content"
	}
	n.collector.quirks, n.collector.fixes = opts.Quirks, &n.fixes
	n.collector.first, n.collector.read = &n.first, &n.read
	n.hold = !opts.ClientUsage || opts.Quirks.Usage
	n.keepText = opts.KeepText || opts.LimitText
}

// Release hands n back for another response once its caller is done with
// it: nothing n returned that is documented as valid until the next call
// (Chunk's output, Whole's) may be used afterwards; Result, Usage, Fixes,
// FinishReason and Model are copies and stay valid. Its scratch goes back
// to its pool (Rest), with its calls emptied for another response to
// fill; a Normalizer that grew large is left to the garbage collector.
func (n *Normalizer) Release() {
	if len(n.collector.calls) > 0 {
		if n.s == nil {
			n.wake()
		}
		n.collector.recycle() // the calls' buffers go with the scratch, for another response
	}
	n.Rest()
	if cap(n.head) > maxPooledScratch || len(n.finished) > maxPooledScratch/64 {
		return
	}
	normalizers.Put(n)
}

// IncompleteError is an upstream response that broke off or could not be
// used: a stream without its end marker, a cut or oversized body, an
// unparseable response, or an error object sent mid-response (docs/quirks.md A20,
// A38). It is never a success.
type IncompleteError struct {
	Upstream string
	// Message is the upstream's own message when it sent an error object,
	// and Type the error type it named there ("" when none).
	Message, Type string
	Err           error
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
	n.read++
	if n.s == nil {
		n.wake()
	}
	keep := false
	if n.tmpl.kind != noTemplate {
		if out, ok := n.fromTemplate(data); ok {
			return out, true, nil
		}
		// A template with a hole for the call's index outlives the chunk
		// that starts the next call, to fit that call's fragments.
		if keep = n.tmpl.hole.n > 0; !keep {
			n.tmpl.kind = noTemplate
		}
	}
	before := n.state()
	n.fullPaths++
	out, send, err = n.chunk(data)
	note := send && !n.fullPathOnly
	if !keep && !note {
		return out, send, err
	}
	after := n.state()
	if keep && (err != nil || !callsAdded(before, after)) {
		n.tmpl.kind = noTemplate
	}
	if note {
		n.noteTemplate(data, out, before, after)
	}
	return out, send, err
}

// chunk is Chunk's full path: the chunk parsed, every fix applied.
func (n *Normalizer) chunk(data []byte) (out []byte, send bool, err error) {
	switch first := firstByte(data); {
	case first == ':':
		// A keep-alive sent as data (docs/quirks.md A34, `data: : keepalive`).
		n.fix(FixKeepaliveData)
		return nil, false, nil
	case first != '{':
		return nil, false, notObject(data)
	}
	if n.s.top, err = parseMembers(n.s.top, data); err != nil {
		return nil, false, notObject(data)
	}
	if v := lookup(n.s.top, "error"); !isNull(v) {
		return nil, false, n.errorObject(data)
	}
	if !n.seen {
		n.noteHead(n.s.top)
	}
	e, drop := n.chunkFixes()
	if drop {
		return nil, false, nil
	}
	changed := e.replaceID || e.dropNullError || e.dropUsage
	held := false
	if choices := lookup(n.s.top, "choices"); len(choices) > 0 && choices[0] == '[' {
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

var reasoningSourceNames = []string{"reasoning_content", "reasoning", "think"}

func (r ReasoningSource) String() string { return reasoningSourceNames[r] }

// Names are the configured names of the sources.
func (ReasoningSource) Names() []string { return append([]string(nil), reasoningSourceNames...) }

// Parse reads a configured source: reasoning_content, reasoning or think.
func (ReasoningSource) Parse(s string) (ReasoningSource, error) {
	return enum.Parse[ReasoningSource](reasoningSourceNames, s)
}

// ReasoningMember is the member of a chat message that carries reasoning
// to a client: reasoning_content or reasoning.
type ReasoningMember uint8

var reasoningMemberNames = []string{"reasoning_content", "reasoning"}

// String is the member's name.
func (m ReasoningMember) String() string { return reasoningMemberNames[m] }

// Names are the configured names of the members.
func (ReasoningMember) Names() []string { return append([]string(nil), reasoningMemberNames...) }

// Parse reads a configured member: reasoning_content or reasoning.
func (ReasoningMember) Parse(s string) (ReasoningMember, error) {
	return enum.Parse[ReasoningMember](reasoningMemberNames, s)
}

// OutputLimit is the member a chat request carries its output limit in:
// max_tokens, or max_completion_tokens (OpenAI's reasoning models take
// only that one).
type OutputLimit uint8

var outputLimitNames = []string{"max_tokens", "max_completion_tokens"}

// String is the member's name.
func (o OutputLimit) String() string { return outputLimitNames[o] }

// Names are the configured names of the members.
func (OutputLimit) Names() []string { return append([]string(nil), outputLimitNames...) }

// Parse reads a configured member: max_tokens or max_completion_tokens.
func (OutputLimit) Parse(s string) (OutputLimit, error) {
	return enum.Parse[OutputLimit](outputLimitNames, s)
}
