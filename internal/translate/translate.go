// Package translate holds the translators between the chat-completions
// request and answer the gateway's path works on and the other wire
// protocols: an upstream that speaks another protocol (anthropic: the
// Messages API), and a client API other than chat completions (responses:
// the Responses API). Each sub-package is a pair of pure functions per
// direction — the request out (or in), the answer's events in (or out),
// the whole answer — table-tested with recorded wire bytes; the path in
// internal/gateway calls them at its edges and knows nothing else of the
// protocol.
package translate

import (
	"slices"

	"github.com/toolgate/toolgate/internal/wire"
)

// Protocol is the wire an upstream speaks.
type Protocol uint8

// Protocols.
const (
	OpenAI    Protocol = iota // chat completions, as the clients speak it
	Anthropic                 // the Messages API (internal/translate/anthropic)
)

var protocolNames = []string{"openai", "anthropic"}

// String is the protocol's configured name (and gen_ai.provider.name).
func (p Protocol) String() string { return protocolNames[p] }

// Names are the configured names of the protocols.
func (Protocol) Names() []string { return slices.Clone(protocolNames) }

// Parse reads a configured protocol.
func (Protocol) Parse(s string) (Protocol, error) { return wire.ParseEnum[Protocol](protocolNames, s) }
