// Package quirkcorpus reads the quirk conformance corpus,
// internal/wire/testdata/quirks: upstream answers recorded in the shapes
// the quirks of docs/quirks.md give them — for each answer quirk the
// shape its source shows and its neighbours — each with what a client
// must end up with. Every path an answer can take is held to it: the
// normalizer event by event and every fast path beside it
// (internal/wire's TestQuirkCorpus, byte for byte), and the gateway end
// to end with real SDKs on every client API (internal/gateway's
// TestQuirkCorpusClients).
//
// It imports nothing of the project, so that internal/wire's own tests
// can use it.
//
// # The file format
//
// One entry a file, NAME.txt:
//
//	# What the entry shows, and the source of its shape (comment lines).
//	shows: A02 A43
//	upstream: quirks=all
//	lines: crlf
//	-- stream --
//	data: {...}
//
//	data: [DONE]
//
//	-- want --
//	finish: tool_calls
//	call: {"id":"call_a","name":"get_weather","arguments":"{\"city\":\"Paris\"}"}
//	text: "Looking it up."
//	reasoning: "The user wants the weather."
//
// shows names the quirk ids of docs/quirks.md the entry shows (every
// answer quirk has at least two entries; a test holds the document and
// the corpus together). upstream is the upstream's settings in the
// normalizer golden files' syntax (quirks=all|strict|name,…,
// reasoning=field|think, …; quirks=all when absent). lines, when present,
// rewrites the stream's line ends (crlf, or cr). The answer is a stream
// (-- stream --: the SSE bytes, line for line, a blank line ending each
// event) or a whole chat.completion body (-- whole --).
//
// What the client must end up with: the finish reason, each call in
// order (JSON: id, name, arguments — an id "*" is one the gateway makes
// up, any non-empty one), the text, the reasoning (text and reasoning are
// JSON strings; absent means none); or error, a part of the message of
// the error the client gets instead of an answer.
package quirkcorpus

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
)

// Entry is one recorded answer and what a client must end up with.
type Entry struct {
	Name     string   // the file's name without .txt
	Comment  string   // the comment lines, without their "# "
	Shows    []string // the quirk ids it shows
	Upstream string   // the upstream's settings (golden syntax)
	Whole    bool     // Body is a whole chat.completion, not a stream
	Body     []byte
	Want     Want
}

// Call is one tool call as a client gets it.
type Call struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// AnyID is a wanted call's id that the gateway makes up (docs/quirks.md
// A07): any non-empty id matches it.
const AnyID = "*"

// Want is what a client must end up with.
type Want struct {
	Finish    string
	Calls     []Call
	Text      string
	Reasoning string
	// Error, when set, is part of the message of the error the client
	// gets instead of an answer.
	Error string
}

// Dir is the corpus's directory (in the source tree).
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "wire", "testdata", "quirks")
}

// Load reads every entry in dir, sorted by name.
func Load(dir string) ([]Entry, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.txt"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("quirkcorpus: no entries in %s", dir)
	}
	var out []Entry
	for _, path := range files {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		e, err := Parse(strings.TrimSuffix(filepath.Base(path), ".txt"), b)
		if err != nil {
			return nil, fmt.Errorf("quirkcorpus: %s: %w", path, err)
		}
		out = append(out, e)
	}
	return out, nil
}

// Parse reads one entry.
func Parse(name string, b []byte) (Entry, error) {
	e := Entry{Name: name, Upstream: "quirks=all"}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	var body []string
	lineEnds := ""
	section := ""
	for n, line := range lines {
		switch {
		case line == "-- stream --" || line == "-- whole --":
			if section != "" {
				return e, fmt.Errorf("line %d: a second answer section", n+1)
			}
			section, e.Whole = "body", line == "-- whole --"
			continue
		case line == "-- want --":
			if section != "body" {
				return e, fmt.Errorf("line %d: -- want -- before the answer", n+1)
			}
			section = "want"
			continue
		}
		switch section {
		case "body":
			body = append(body, line)
		case "want":
			if err := e.Want.parse(line); err != nil {
				return e, fmt.Errorf("line %d: %w", n+1, err)
			}
		default:
			if err := e.header(line, &lineEnds); err != nil {
				return e, fmt.Errorf("line %d: %w", n+1, err)
			}
		}
	}
	switch {
	case section != "want":
		return e, fmt.Errorf("no -- want -- section")
	case len(e.Shows) == 0:
		return e, fmt.Errorf("no shows: line naming the quirks")
	case e.Want.Error == "" && e.Want.Finish == "":
		return e, fmt.Errorf("want neither a finish nor an error")
	}
	e.Body = []byte(strings.Join(body, "\n") + "\n")
	if e.Whole {
		e.Body = bytes.TrimSpace(e.Body)
	}
	switch lineEnds {
	case "":
	case "crlf":
		e.Body = bytes.ReplaceAll(e.Body, []byte("\n"), []byte("\r\n"))
	case "cr":
		e.Body = bytes.ReplaceAll(e.Body, []byte("\n"), []byte("\r"))
	default:
		return e, fmt.Errorf("lines: %q, want crlf or cr", lineEnds)
	}
	return e, nil
}

// header reads a line before the answer.
func (e *Entry) header(line string, lineEnds *string) error {
	k, v, _ := strings.Cut(line, ":")
	v = strings.TrimSpace(v)
	switch {
	case strings.HasPrefix(line, "#"):
		e.Comment += strings.TrimPrefix(strings.TrimPrefix(line, "#"), " ") + "\n"
	case strings.TrimSpace(line) == "":
	case k == "shows":
		e.Shows = strings.Fields(v)
	case k == "upstream":
		e.Upstream = v
	case k == "lines":
		*lineEnds = v
	default:
		return fmt.Errorf("unknown header %q", line)
	}
	return nil
}

// parse reads one line of the want section.
func (w *Want) parse(line string) error {
	if strings.TrimSpace(line) == "" {
		return nil
	}
	k, v, ok := strings.Cut(line, ":")
	if !ok {
		return fmt.Errorf("%q is not key: value", line)
	}
	v = strings.TrimSpace(v)
	str := func(dst *string) error {
		if err := json.Unmarshal([]byte(v), dst); err != nil {
			return fmt.Errorf("%s: %q is not a JSON string", k, v)
		}
		return nil
	}
	switch k {
	case "finish":
		w.Finish = v
	case "call":
		var c Call
		d := json.NewDecoder(strings.NewReader(v))
		d.DisallowUnknownFields()
		if err := d.Decode(&c); err != nil || c.ID == "" || c.Name == "" {
			return fmt.Errorf("call: %q is not {\"id\",\"name\",\"arguments\"}", v)
		}
		w.Calls = append(w.Calls, c)
	case "text":
		return str(&w.Text)
	case "reasoning":
		return str(&w.Reasoning)
	case "error":
		return str(&w.Error)
	default:
		return fmt.Errorf("unknown key %q", k)
	}
	return nil
}

// Matches reports whether calls are the wanted ones, in order (an id
// AnyID matching any non-empty one, a made-up id unique among them).
func (w Want) Matches(calls []Call) bool {
	if len(calls) != len(w.Calls) {
		return false
	}
	var ids []string
	for k, c := range calls {
		want := w.Calls[k]
		if c.Name != want.Name || c.Arguments != want.Arguments || c.ID == "" || slices.Contains(ids, c.ID) ||
			want.ID != AnyID && c.ID != want.ID {
			return false
		}
		ids = append(ids, c.ID)
	}
	return true
}

// String is the wanted outcome in the file's words, for failure messages.
func (w Want) String() string {
	var b strings.Builder
	q := func(s string) string { j, _ := json.Marshal(s); return string(j) }
	if w.Error != "" {
		fmt.Fprintf(&b, "error: %s\n", q(w.Error))
		return b.String()
	}
	fmt.Fprintf(&b, "finish: %s\n", w.Finish)
	for _, c := range w.Calls {
		j, _ := json.Marshal(c)
		fmt.Fprintf(&b, "call: %s\n", j)
	}
	if w.Text != "" {
		fmt.Fprintf(&b, "text: %s\n", q(w.Text))
	}
	if w.Reasoning != "" {
		fmt.Fprintf(&b, "reasoning: %s\n", q(w.Reasoning))
	}
	return b.String()
}
