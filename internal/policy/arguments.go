package policy

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/toolgate/toolgate/internal/enum"
	"github.com/toolgate/toolgate/internal/wire"
)

// Arguments is a route's argument validation mode.
type Arguments uint8

// Argument validation modes.
const (
	ArgumentsOff      Arguments = iota
	ArgumentsAnnotate           // record failures (log, metric); the response passes
	ArgumentsReject             // a failure is a violation
)

var argumentsNames = []string{"off", "annotate", "reject"}

func (a Arguments) String() string { return argumentsNames[a] }

// Names are the configured names of the modes.
func (Arguments) Names() []string { return slices.Clone(argumentsNames) }

// Parse reads a configured mode: off, annotate or reject.
func (Arguments) Parse(s string) (Arguments, error) {
	return enum.Parse[Arguments](argumentsNames, s)
}

// Schemas compiles tool parameter schemas once and caches them by a
// SHA-256 of their bytes, so a tool list repeated on every request of a
// session costs one compilation. It is safe for concurrent use and holds at
// most max schemas (when full it starts over: a bounded cache with no
// per-entry bookkeeping). A schema that does not compile is cached as such
// and its tool's arguments are only checked for being a JSON object.
//
// References ($ref) to anything outside the schema itself are refused: a
// client's schema must never make the gateway read a file or a URL.
type Schemas struct {
	mu  sync.Mutex
	m   map[[32]byte]*compiled
	max int
}

// compiled is a cached schema: the validator's form, nil when the schema
// does not compile, and its shape, nil when it has none.
type compiled struct {
	sch  *jsonschema.Schema
	fast *shape
}

// validate checks v against the schema: nil when v is valid, or when the
// schema did not compile (nil c included). A shape's "valid" spares the
// validator; anything else is its call.
func (c *compiled) validate(v any) error {
	if c == nil || c.sch == nil || c.fast != nil && c.fast.valid(v) {
		return nil
	}
	return c.sch.Validate(v)
}

// NewSchemas returns an empty cache holding at most max schemas (0 means 1024).
func NewSchemas(max int) *Schemas {
	if max <= 0 {
		max = 1024
	}
	return &Schemas{m: map[[32]byte]*compiled{}, max: max}
}

// Len returns the number of cached schemas.
func (s *Schemas) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}

type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("external schema references are not allowed (%s)", url)
}

// get returns the compiled schema for raw; its sch is nil when it does not
// compile.
func (s *Schemas) get(raw json.RawMessage) *compiled {
	key := sha256.Sum256(raw)
	s.mu.Lock()
	sch, ok := s.m[key]
	s.mu.Unlock()
	if ok {
		return sch
	}
	sch = compile(raw)
	s.mu.Lock()
	if len(s.m) >= s.max {
		clear(s.m)
	}
	s.m[key] = sch
	s.mu.Unlock()
	return sch
}

func compile(raw json.RawMessage) *compiled {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return &compiled{}
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(noLoader{})
	if err := c.AddResource("tool.json", doc); err != nil {
		return &compiled{}
	}
	sch, err := c.Compile("tool.json")
	if err != nil {
		return &compiled{}
	}
	return &compiled{sch: sch, fast: shapeOf(doc)}
}

// checkArguments applies docs/spec.md §1's argument rules and the tool's schema:
// an empty string is no arguments ({}); JSON that is not an object is
// refused as "arguments must be a JSON object, got <type>"; text that does
// not parse as "Failed to parse arguments: <reason>".
func checkArguments(args string, sch *compiled) error {
	if strings.TrimSpace(args) == "" {
		args = "{}"
	}
	v, err := decodeJSON(args)
	if err != nil {
		return argumentError("Failed to parse arguments: " + err.Error()) // the seed's exact wording
	}
	if _, ok := v.(map[string]any); !ok {
		return fmt.Errorf("arguments must be a JSON object, got %s", jsonType(v))
	}
	if err := sch.validate(v); err != nil {
		var ve *jsonschema.ValidationError
		if errors.As(err, &ve) {
			return errors.New(oneLine(ve.Error()))
		}
		return err
	}
	return nil
}

// decodeJSON decodes text for the validator with the gateway's scanner
// (wire.Value: the values the validator's own reader gives, at a fifth
// of its cost); text that is not JSON goes to the validator's reader, for
// the reason it gives.
func decodeJSON(text string) (any, error) {
	if v, ok := wire.ValueString(text); ok {
		return v, nil
	}
	_, err := jsonschema.UnmarshalJSON(strings.NewReader(text))
	if err == nil { // not reached: both read JSON alike (FuzzValue)
		err = errors.New("invalid JSON")
	}
	return nil, err
}

// argumentError is an argument refusal worded as docs/spec.md §1 says.
type argumentError string

func (e argumentError) Error() string { return string(e) }

// checkContent checks a response's text against response_format's schema.
func checkContent(text string, sch *compiled) error {
	v, err := decodeJSON(text)
	if err != nil {
		return fmt.Errorf("the content is not JSON: %v", err)
	}
	if err := sch.validate(v); err != nil {
		return errors.New(oneLine(err.Error()))
	}
	return nil
}

func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case []any:
		return "array"
	case json.Number, float64:
		return "number"
	case string:
		return "string"
	case bool:
		return "boolean"
	}
	return "object"
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// argumentProblems checks every call's arguments against its tool's schema
// and returns one sentence per failing call.
func (j *Judge) argumentProblems(calls []wire.CollectedCall) []string {
	var out []string
	for _, c := range calls {
		var sch *compiled
		if raw, ok := j.params[c.Name]; ok && j.schemas != nil {
			sch = j.schemas.get(raw)
		}
		if err := checkArguments(c.Arguments, sch); err != nil {
			out = append(out, fmt.Sprintf("call %s (%s): %v", c.ID, c.Name, err))
		}
	}
	return out
}
