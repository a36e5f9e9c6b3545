package repair

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/toolgate/toolgate/internal/enum"
	"github.com/toolgate/toolgate/internal/wire"
)

// The two seal sentences (docs/spec.md §1.4). The dash is U+2014.
const (
	SealCutOff   = "This tool call was never completed — the response was cut off before it finished."
	SealReloaded = "This tool call was never completed — the session was reloaded or the history was trimmed."
)

// sealContent is a seal's content: the JSON text {"success":false,"error":…}
// with keys in that order, as a JSON string value.
func sealContent(sentence string) json.RawMessage {
	text, _ := json.Marshal(struct {
		Success bool   `json:"success"`
		Error   string `json:"error"`
	}{false, sentence})
	b, _ := json.Marshal(string(text))
	return b
}

var (
	cutOffContent   = sealContent(SealCutOff)
	reloadedContent = sealContent(SealReloaded)
)

// Mode is what a route does with a transcript that needs repair.
type Mode uint8

// Modes.
const (
	ModeFix    Mode = iota // repair it (the default)
	ModeReject             // refuse the request with a 400 listing what is wrong
	ModeOff                // send it as it is
)

var modeNames = []string{"fix", "reject", "off"}

func (m Mode) String() string { return modeNames[m] }

// Names are the configured names of the modes.
func (Mode) Names() []string { return slices.Clone(modeNames) }

// Parse reads a configured mode: fix, reject or off.
func (Mode) Parse(s string) (Mode, error) { return enum.Parse[Mode](modeNames, s) }

// Reply names one message of the input transcript: its position and the
// call id it concerns.
type Reply struct {
	Index  int
	CallID string
}

// Report is what Repair did, in transcript order. Sealed names each sealed
// call by its requesting message's position; Dropped and Moved name the
// tool messages by their position in the input.
type Report struct {
	Sealed  []Reply
	Dropped []Reply
	Moved   []Reply
}

// Empty reports whether Repair changed nothing.
func (r Report) Empty() bool { return len(r.Sealed)+len(r.Dropped)+len(r.Moved) == 0 }

// Header is the X-Toolgate-Repair value: "sealed=N; dropped=N; moved=N".
func (r Report) Header() string {
	return fmt.Sprintf("sealed=%d; dropped=%d; moved=%d", len(r.Sealed), len(r.Dropped), len(r.Moved))
}

// Problems describes each repair as a sentence about the input transcript.
func (r Report) Problems() []string {
	var out []string
	for _, s := range r.Sealed {
		out = append(out, fmt.Sprintf("the call %s made in messages[%d] has no reply", s.CallID, s.Index))
	}
	for _, d := range r.Dropped {
		if d.CallID == "" {
			out = append(out, fmt.Sprintf("the tool message messages[%d] has no tool_call_id", d.Index))
			continue
		}
		out = append(out, fmt.Sprintf("the tool message messages[%d] answers %s, which no earlier assistant message left unanswered", d.Index, d.CallID))
	}
	for _, m := range r.Moved {
		out = append(out, fmt.Sprintf("the tool message messages[%d] (reply to %s) is not directly after the message that made the call", m.Index, m.CallID))
	}
	return out
}

// RejectError is a transcript refused by a route in reject mode.
type RejectError struct {
	Report Report
}

func (e *RejectError) Error() string {
	return "the transcript's tool calls and replies are not paired: " + strings.Join(e.Report.Problems(), "; ") +
		". Put each tool message directly after the assistant message that made its call, one reply per call."
}

// Repair returns the transcript with every tool call followed directly by
// its reply (docs/spec.md §1). The input is not modified. When nothing needs
// repair it returns msgs itself and an empty Report, allocating nothing.
func Repair(msgs []wire.Message) ([]wire.Message, Report) {
	if paired(msgs) {
		return msgs, Report{}
	}
	p := pairing(msgs)
	if out := p.output(msgs); !p.rep.Empty() {
		return out, p.rep
	}
	return msgs, p.rep
}

// pairs is the pairing of one transcript: per assistant message that made
// calls, its calls (one per id, in call order), which of them are
// answered, and the replies it owns; and the replies dropped.
type pairs struct {
	requests   []request // by message position; calls is nil for a message that made none
	unanswered int
	rep        Report
	// next links the replies a request owns, in input order: next[i] is
	// the position + 1 of the reply after message i, 0 after its last.
	next []int
}

type request struct {
	calls    []*wire.ToolCall
	answered []bool // by position in calls
	// first and last are the positions + 1 of its first and last reply
	// (0: none yet); the rest are linked through pairs.next.
	first, last int
}

// pairing gives each reply its owner: the closest earlier call with its
// id that nothing has answered yet.
func pairing(msgs []wire.Message) *pairs {
	p := &pairs{requests: make([]request, len(msgs)), next: make([]int, len(msgs))}
	nCalls := 0
	for i := range msgs {
		nCalls += len(msgs[i].ToolCalls)
	}
	// The calls and answered slices of all messages share two arenas.
	callArena := make([]*wire.ToolCall, 0, nCalls)
	answeredArena := make([]bool, nCalls)
	// open holds, per call id, the calls with that id nothing has answered
	// yet, as a stack through slots (the position + 1 of the newest, 0 for
	// none): a reply's owner is its top, taken in O(1) however many
	// messages reuse the id, and an id costs no allocation of its own.
	type slot struct{ msg, call, below int }
	slots := make([]slot, 0, nCalls)
	open := make(map[string]int, nCalls)
	for i := range msgs {
		m := &msgs[i]
		switch m.Role {
		case "assistant":
			start := len(callArena)
			callArena = appendCalls(callArena, m)
			calls := callArena[start:len(callArena):len(callArena)]
			if len(calls) == 0 {
				continue
			}
			p.requests[i] = request{calls: calls, answered: answeredArena[start:len(callArena):len(callArena)]}
			for s, c := range calls {
				slots = append(slots, slot{msg: i, call: s, below: open[c.ID]})
				open[c.ID] = len(slots)
			}
			p.unanswered += len(calls)
		case "tool":
			id := m.ToolCallID
			top := open[id]
			if top == 0 {
				p.rep.Dropped = append(p.rep.Dropped, Reply{Index: i, CallID: id})
				continue
			}
			owner := slots[top-1]
			open[id] = owner.below
			req := &p.requests[owner.msg]
			req.answered[owner.call] = true
			if req.last == 0 {
				req.first = i + 1
			} else {
				p.next[req.last-1] = i + 1
			}
			req.last = i + 1
			p.unanswered--
		}
	}
	return p
}

// output is the repaired transcript: every message but the replies in
// order, each request followed by a seal per unanswered call, then its
// replies.
func (p *pairs) output(msgs []wire.Message) []wire.Message {
	out := make([]wire.Message, 0, len(msgs)+p.unanswered)
	if p.unanswered > 0 {
		p.rep.Sealed = make([]Reply, 0, p.unanswered) // one per unanswered call
	}
	for i := range msgs {
		if msgs[i].Role == "tool" {
			continue
		}
		out = append(out, msgs[i])
		req := &p.requests[i]
		for s, c := range req.calls {
			if !req.answered[s] {
				out = append(out, seal(c))
				p.rep.Sealed = append(p.rep.Sealed, Reply{Index: i, CallID: c.ID})
			}
		}
		// The run of tool messages directly after the request, in the input:
		// a reply there stayed where it was.
		runEnd := i + 1
		for runEnd < len(msgs) && msgs[runEnd].Role == "tool" {
			runEnd++
		}
		for next := req.first; next != 0; next = p.next[next-1] {
			at := next - 1
			out = append(out, msgs[at])
			if at >= runEnd {
				p.rep.Moved = append(p.rep.Moved, Reply{Index: at, CallID: msgs[at].ToolCallID})
			}
		}
	}
	return out
}

// appendCalls appends a message's calls to dst, one per id, in the order
// made. A call with an empty id cannot be answered, so nothing seals it
// either.
func appendCalls(dst []*wire.ToolCall, m *wire.Message) []*wire.ToolCall {
	var ids wire.Names
	for k := range m.ToolCalls {
		c := &m.ToolCalls[k]
		if c.ID != "" && ids.Add(c.ID) {
			dst = append(dst, c)
		}
	}
	return dst
}

// seal is the failed result for a call nothing answered (docs/spec.md §1.4).
func seal(c *wire.ToolCall) wire.Message {
	content := reloadedContent
	if cutOff(c) {
		content = cutOffContent
	}
	return wire.SealReply(c.ID, content)
}

// cutOff reports whether a call's arguments are a non-empty text that does
// not parse as JSON: the response was cut off mid-call.
func cutOff(c *wire.ToolCall) bool {
	text := c.Function.ArgumentsText()
	return text != "" && !wire.Valid([]byte(text))
}

// paired reports, without allocating, whether msgs already satisfies what
// Repair produces: every tool message sits in the run directly after an
// assistant message whose calls (non-empty, distinct ids) it answers, one
// reply per call, and every such call is answered there.
func paired(msgs []wire.Message) bool {
	for i := 0; i < len(msgs); i++ {
		m := &msgs[i]
		if m.Role == "tool" {
			return false
		}
		if m.Role != "assistant" || len(m.ToolCalls) == 0 {
			continue
		}
		var ids wire.Names
		for a := range m.ToolCalls {
			if id := m.ToolCalls[a].ID; id == "" || !ids.Add(id) {
				return false
			}
		}
		j := i + 1
		for j < len(msgs) && msgs[j].Role == "tool" {
			j++
		}
		run := msgs[i+1 : j]
		if len(run) != len(m.ToolCalls) {
			return false
		}
		var answered wire.Names
		for a := range run {
			if id := run[a].ToolCallID; !ids.Has(id) || !answered.Add(id) {
				return false
			}
		}
		i = j - 1
	}
	return true
}
