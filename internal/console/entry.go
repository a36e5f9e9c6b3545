package console

import (
	"slices"
	"strconv"
	"time"

	"github.com/toolgate/toolgate/internal/observe"
	"github.com/toolgate/toolgate/internal/wire"
)

// Entry is one request as the console keeps it: what it was, how it
// ended, and what the gateway did to it — never its content.
type Entry struct {
	ID         string    `json:"id"`
	RequestID  string    `json:"request_id"`
	Time       time.Time `json:"time"`
	Method     string    `json:"method"`
	Path       string    `json:"path"`
	Key        string    `json:"key,omitempty"`
	Route      string    `json:"route,omitempty"`
	Upstream   string    `json:"upstream,omitempty"`
	Model      string    `json:"model,omitempty"`
	Stream     bool      `json:"stream"`
	Status     int       `json:"status"`
	Outcome    string    `json:"outcome"`
	ErrorKind  string    `json:"error_kind,omitempty"`
	Limited    string    `json:"limited,omitempty"`
	DurationMs float64   `json:"duration_ms"`
	// OverheadMs is the request's time outside the upstream call: what the
	// gateway itself took.
	OverheadMs float64 `json:"overhead_ms"`
	// Repairs are the repair and request-normalization actions by name.
	Repairs []Count `json:"repairs,omitempty"`
	// Repair is what repair did, by message and call id (nil: nothing).
	Repair *Repair `json:"repair,omitempty"`
	// Fixes are the normalizations the answer needed, each with the row of
	// docs/quirks.md it answers.
	Fixes     []Fix     `json:"fixes,omitempty"`
	Reasoning Reasoning `json:"reasoning"`
	Attempts  []Attempt `json:"attempts,omitempty"`
}

// Count is a number of things of one kind.
type Count struct {
	Name string `json:"name"`
	N    int    `json:"n"`
}

// Fix is one kind of normalization an answer needed: its name, the
// docs/quirks.md row it answers ("" for none), how often, and the
// upstream chunk (from 1) it was first applied at (0: a whole answer, or
// a translator's).
type Fix struct {
	Kind  string `json:"kind"`
	Quirk string `json:"quirk,omitempty"`
	N     int    `json:"n"`
	Chunk int    `json:"chunk,omitempty"`
}

// Repair is what repair did: each action, and the transcript's outline
// (roles and call ids) before and after.
type Repair struct {
	Actions []Action `json:"actions"`
	// Omitted counts the actions past the first hundred, left out.
	Omitted int    `json:"omitted,omitempty"`
	Before  []Turn `json:"before"`
	After   []Turn `json:"after"`
}

// Action is one thing repair did: sealed (the call made in message Index
// had no reply; a failed result now answers it), dropped or moved (the
// tool message at Index of the input).
type Action struct {
	Action string `json:"action"`
	Index  int    `json:"index"`
	CallID string `json:"call_id,omitempty"`
}

// Turn is a message of an outline: its position in the transcript, its
// role and the call ids it makes or answers. An outline holds the
// messages around those repair named, not every message.
type Turn struct {
	Index int      `json:"index"`
	Role  string   `json:"role"`
	IDs   []string `json:"ids,omitempty"`
	// Text is the message's text, clipped and redacted, only with
	// console.inspect: content.
	Text string `json:"text,omitempty"`
}

// Reasoning is what happened to the reasoning of earlier turns.
type Reasoning struct {
	Level        string `json:"level,omitempty"`
	Restored     int    `json:"restored"`
	Missed       int    `json:"missed"`
	Placeholders int    `json:"placeholders"`
}

// Attempt is one upstream attempt: where it went and how it ended (and
// why its deployment cooled down, if it did).
type Attempt struct {
	Route    string `json:"route"`
	Upstream string `json:"upstream"`
	Outcome  string `json:"outcome"`
	Verdict  string `json:"verdict,omitempty"`
	Cooldown string `json:"cooldown,omitempty"`
}

// entryOf is a record's entry, number seq.
func entryOf(rec *observe.Record, seq uint64) Entry {
	e := Entry{ID: strconv.FormatUint(seq, 10), RequestID: rec.RequestID, Time: rec.Start.Add(rec.Duration), Method: rec.Method,
		Path: rec.Path, Key: rec.Key, Route: rec.Route, Upstream: rec.Upstream, Model: rec.Model, Stream: rec.Stream,
		Status: rec.Status, Outcome: rec.Outcome, ErrorKind: rec.ErrorKind, Limited: rec.Limited,
		DurationMs: ms(rec.Duration), OverheadMs: ms(max(rec.Duration-rec.UpstreamDuration, 0)),
		Reasoning: Reasoning{Level: rec.Reasoning, Restored: rec.ReasoningRestored, Missed: rec.ReasoningMiss, Placeholders: rec.ReasoningPlaceholder}}
	for _, r := range rec.Repairs {
		if r.N > 0 {
			e.Repairs = append(e.Repairs, Count{r.Name, r.N})
		}
	}
	if d := rec.RepairDetail; d != nil {
		e.Repair = &Repair{Before: turns(d.Before), After: turns(d.After), Omitted: d.Omitted}
		for _, a := range d.Actions {
			e.Repair.Actions = append(e.Repair.Actions, Action{a.Action, a.Index, a.CallID})
		}
	}
	for _, a := range rec.Attempts {
		e.Attempts = append(e.Attempts, Attempt{Route: a.Route, Upstream: a.Upstream, Outcome: string(a.Outcome), Verdict: a.Verdict, Cooldown: a.Cooldown})
		for _, f := range a.Fixes {
			if k := slices.IndexFunc(e.Fixes, func(x Fix) bool { return x.Kind == f.Name }); k >= 0 {
				e.Fixes[k].N += f.N
				continue
			}
			e.Fixes = append(e.Fixes, Fix{Kind: f.Name, Quirk: wire.QuirkOf(f.Name), N: f.N, Chunk: f.At})
		}
	}
	return e
}

// turns copies an outline.
func turns(ts []observe.Turn) []Turn {
	out := make([]Turn, len(ts))
	for i, t := range ts {
		out[i] = Turn{Index: t.Index, Role: t.Role, IDs: slices.Clone(t.IDs), Text: t.Text}
	}
	return out
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
