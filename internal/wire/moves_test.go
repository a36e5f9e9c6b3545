package wire

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// A stream built from quirk moves: the fuzz input is not mutated bytes of
// a stream, where a shape such as two calls at one index (docs/quirks.md
// A02) would have to be found by chance, but a sequence of the moves
// upstreams make — a call opened at a fresh index, at a reused one or at
// none, with an id or without, its name late or repeated, its arguments
// empty, in pieces or as an object; text and reasoning between fragments;
// several fragments in one chunk; finish reasons, usage, keep-alives; keys
// in the canonical order or sorted — each byte one move (its op, mod 13,
// and a variant, the byte / 13), a second input varying what each move
// carries (its bytes taken in turn): a byte inserted or dropped by the
// fuzzer shifts no other move.

// moveStream builds an upstream stream from moves.
type moveStream struct {
	b      strings.Builder
	calls  []moveCall
	sorted bool // keys in alphabetical order (a Go or Python relay's encoder)
	many   bool // the next fragments go in one chunk together
	batch  []string
}

type moveCall struct {
	id    string // "" when the call has none
	idx   int    // its index, -1 when its fragments carry none
	named bool
}

var moveArgs = []string{`{\"a\":`, `1`, `}`, `\"x\"`, ``, `[`, `é`, `{\"city\":\"Par`, `is\"}`, `\\u00e9`}

var moveTexts = []string{"tok", `t\u00e9\"k`, "é", strings.Repeat("long ", 9), "", "<thi", "nk>", "</think>", "\\n"}

// buildMoves returns the stream the moves make, each varied by the next
// byte of vary (in turn; 0 once it is used up), with [DONE] when the last
// move is even.
func buildMoves(moves, vary []byte) []byte {
	s := &moveStream{}
	for i, m := range moves {
		w := 0
		if len(vary) > 0 {
			w = int(vary[i%len(vary)])
		}
		s.move(m%13, int(m/13), w)
	}
	s.flushBatch()
	if len(moves) > 0 && moves[len(moves)-1]&1 == 0 {
		s.b.WriteString("data: [DONE]\n\n")
	}
	return []byte(s.b.String())
}

func (s *moveStream) move(op byte, v, w int) {
	switch op {
	case 0:
		s.delta(`{"content":"` + moveTexts[v%len(moveTexts)] + `"}`)
	case 1:
		member := [...]string{"reasoning_content", "reasoning"}[v%2]
		s.delta(`{"` + member + `":"` + moveTexts[(v/2+w)%len(moveTexts)] + `"}`)
	case 2:
		s.open(v, w, false)
	case 3:
		s.open(v, w, true) // the name comes later
	case 4, 5:
		// The last call, the one before, or the first.
		if n := len(s.calls); n > 0 {
			s.continuation(&s.calls[[...]int{n - 1, max(n-2, 0), 0}[v%3]], v/3, w, op == 5)
		}
	case 6:
		s.whole(v)
	case 7:
		s.finish([...]string{`"stop"`, `"tool_calls"`, `"length"`, `""`}[v%4])
	case 8:
		s.flushBatch()
		s.raw([...]string{`{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}}`,
			`{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","usage":{"prompt_tokens":1,"completion_tokens":4,"total_tokens":5}}`}[v%2])
	case 9:
		s.delta([...]string{`{"tool_calls":[]}`, `{"role":"assistant","content":""}`, `{"role":"assistant","content":null}`}[v%3])
	case 10:
		s.flushBatch()
		s.b.WriteString([...]string{"data: : keepalive\n\n", ": PROCESSING\n\n", "event: ping\n\n"}[v%3])
	case 11:
		s.flushBatch()
		s.sorted = !s.sorted
	case 12:
		s.flushBatch()
		s.many = !s.many
	}
}

// open starts a call: at a fresh index, at index 0, at the last call's
// index, or at none (v%4); with a new id, an empty one or none (v/4%3);
// its first arguments empty (w even) or a piece (w/2).
func (s *moveStream) open(v, w int, late bool) {
	c := moveCall{idx: len(s.calls), named: !late}
	switch v % 4 {
	case 1:
		c.idx = 0
	case 2:
		if n := len(s.calls); n > 0 {
			c.idx = s.calls[n-1].idx
		}
	case 3:
		c.idx = -1
	}
	switch v / 4 {
	case 0, 1, 2:
		c.id = fmt.Sprintf("call_%d", len(s.calls))
	case 3:
		c.id = "" // sent as ""
	}
	noID := v/4 == 4
	name := `"f"`
	if late {
		name = [...]string{`null`, `""`}[w%2]
	}
	args := ""
	if w%2 == 1 {
		args = moveArgs[w/2%len(moveArgs)]
	}
	s.calls = append(s.calls, c)
	members := []string{}
	if c.idx >= 0 {
		members = append(members, fmt.Sprintf(`"index":%d`, c.idx))
	}
	if !noID {
		members = append(members, `"id":"`+c.id+`"`)
	}
	members = append(members, `"type":"function"`, `"function":{"name":`+name+`,"arguments":"`+args+`"}`)
	s.fragment(members)
}

// continuation sends a piece of a call's arguments (w): at its index or
// none (v%4 == 3), its id repeated or not (v/4 == 1), its name with it
// (the late one's arrival, or a repeat).
func (s *moveStream) continuation(c *moveCall, v, w int, name bool) {
	members := []string{}
	if c.idx >= 0 && v%4 != 3 {
		members = append(members, fmt.Sprintf(`"index":%d`, c.idx))
	}
	if v/4 == 1 && c.id != "" {
		members = append(members, `"id":"`+c.id+`"`)
	}
	fn := `"arguments":"` + moveArgs[w%len(moveArgs)] + `"`
	if name {
		fn = `"name":"f",` + fn
		c.named = true
	}
	members = append(members, `"function":{`+fn+`}`)
	s.fragment(members)
}

// whole sends a call in one fragment, its arguments a string or an
// object (A12), at a fresh index or at 0.
func (s *moveStream) whole(v int) {
	idx := len(s.calls)
	if v%2 == 1 {
		idx = 0
	}
	id := fmt.Sprintf("call_%d", len(s.calls))
	s.calls = append(s.calls, moveCall{id: id, idx: idx, named: true})
	args := `"{\"a\":1}"`
	if v/2%2 == 1 {
		args = `{"a":1}`
	}
	s.fragment([]string{fmt.Sprintf(`"index":%d`, idx), `"id":"` + id + `"`, `"type":"function"`, `"function":{"name":"f","arguments":` + args + `}`})
}

// fragment sends one fragment, in a chunk of its own or with the next.
func (s *moveStream) fragment(members []string) {
	if s.sorted {
		sortMembers(members)
	}
	s.batch = append(s.batch, "{"+strings.Join(members, ",")+"}")
	if !s.many {
		s.flushBatch()
	}
}

func (s *moveStream) flushBatch() {
	if len(s.batch) == 0 {
		return
	}
	s.delta(`{"tool_calls":[` + strings.Join(s.batch, ",") + `]}`)
	s.batch = s.batch[:0]
}

func (s *moveStream) delta(d string) {
	if !strings.HasPrefix(d, `{"tool_calls":[{`) {
		s.flushBatch()
	}
	s.chunk(d, "null")
}

func (s *moveStream) finish(reason string) {
	s.flushBatch()
	s.chunk(`{}`, reason)
}

func (s *moveStream) chunk(delta, finish string) {
	if s.sorted {
		s.raw(`{"choices":[{"delta":` + delta + `,"finish_reason":` + finish + `,"index":0}],"created":1,"id":"c","model":"m","object":"chat.completion.chunk"}`)
		return
	}
	s.raw(`{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + finish + `}]}`)
}

func (s *moveStream) raw(payload string) { s.b.WriteString("data: " + payload + "\n\n") }

// sortMembers puts an object's members ("key":value) in key order.
func sortMembers(members []string) {
	for i := 1; i < len(members); i++ {
		for j := i; j > 0 && members[j] < members[j-1]; j-- {
			members[j], members[j-1] = members[j-1], members[j]
		}
	}
}

// moveSeeds are move sequences of the shapes known to break fast paths,
// and of each quirk's, with what each move carries (buildMoves).
func moveSeeds() map[string][2][]byte {
	m := func(op, v int) byte { return byte(op + 13*v) }
	role, fin, done, noDone := m(9, 1), m(7, 1), m(10, 0), m(10, 1)
	open, atZero := m(2, 0), m(2, 1) // a fresh index, index 0; a new id
	last, first := m(4, 0), m(4, 2)  // a continuation of the last call, of the first
	return map[string][2][]byte{
		// A02: a new id at index 0, "arguments":"", continuations at 0 only.
		"a02": {{role, atZero, last, last, last, atZero, last, last, fin, done}, {0, 0, 0, 1, 2, 0, 7, 8, 0, 0}},
		// A02 after A43: calls at 0 and 1 interleaved, then a call reusing 0.
		"a02-interleaved": {{role, open, open, first, last, first, atZero, m(4, 1), last, m(4, 1), last, fin, done},
			{0, 0, 0, 0, 0, 1, 0, 1, 0, 2, 2, 0, 0}},
		// A02, three calls at index 0, keys sorted.
		"a02-three-sorted": {{m(11, 0), role, atZero, last, last, atZero, last, last, atZero, last, last, fin, done},
			{0, 0, 0, 0, 2, 0, 0, 2, 0, 0, 2, 0, 0}},
		// A01: no index; A07: no id; A11: a late name; A12: object
		// arguments; several fragments in one chunk; usage.
		"mixed": {{role, m(0, 0), m(2, 3), m(4, 3), m(3, 0), m(1, 0), m(5, 0), m(12, 0), m(6, 2), m(2, 16), last, m(12, 0), fin, m(8, 0), noDone},
			{0, 0, 1, 1, 0, 2, 2, 0, 0, 3, 2, 0, 0, 0, 0}},
		// A30's think tags between fragments, text between calls.
		"think": {{role, m(0, 5), m(0, 6), m(0, 1), m(0, 7), open, m(0, 0), open, last, fin, done}, {0, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0}},
	}
}

// FuzzQuirkMoves: a stream built from quirk moves, under any options, read
// in any pieces, reaches the client byte for byte the same through every
// fast path (the template, Normalizer.Run) as through the full path alone
// (docs/design.md: a fast path has a referee). Every failing input found
// goes into testdata/fuzz/FuzzQuirkMoves.
func FuzzQuirkMoves(f *testing.F) {
	for _, seed := range moveSeeds() {
		for _, sel := range [][]byte{{0, 0}, {2, 1}, {6, 0}, {0x22, 0x41}, {2, 0x32}} {
			f.Add(sel, seed[0], seed[1], []byte{})
			f.Add(sel, seed[0], seed[1], []byte{200, 7, 0, 1, 90})
		}
	}
	f.Fuzz(func(t *testing.T, sel, moves, vary, cuts []byte) {
		if len(moves) > 200 {
			return
		}
		body := buildMoves(moves, vary)
		opts := templateOptions(sel)
		for _, c := range [][]byte{nil, cuts} {
			full := clientStream(body, c, opts, fullPath)
			for _, p := range []path{templates, withRun} {
				if got := clientStream(body, c, opts, p); !bytes.Equal(got, full) {
					t.Fatalf("options %+v, reads %v: %v differs from the full path\nstream:\n%s\n%v:\n%s\nfull path:\n%s", opts, c, p, body, p, got, full)
				}
			}
		}
	})
}

// The move seeds build the shapes they are named for: the A02 seed's
// second call's continuations carry index 0 only, and both calls come out
// whole through the full path.
func TestMoveSeeds(t *testing.T) {
	seed := moveSeeds()["a02"]
	body := string(buildMoves(seed[0], seed[1]))
	if strings.Count(body, `"index":0,"id":`) != 2 || strings.Contains(body, `"index":1`) {
		t.Fatalf("the a02 seed is not two calls at index 0:\n%s", body)
	}
	g := readClient(clientStream([]byte(body), nil, Options{Quirks: AllQuirks(), SingleChoice: true}, fullPath))
	if g.err != "" || len(g.calls) != 2 || g.calls[0].Arguments != `{"a":1}` || g.calls[1].Arguments != `{"city":"Paris"}` {
		t.Fatalf("the a02 seed's calls: %+v\n%s", g, body)
	}
}
