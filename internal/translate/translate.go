// Package translate holds the translators between the chat-completions
// request and answer the gateway's path works on and the other wire
// protocols, one sub-package per protocol, each with the directions it
// serves: anthropic (the Messages API, as a client API and as an
// upstream), responses (OpenAI's Responses API, both ways), gemini
// (Google's Gemini API, an upstream), bedrock (Amazon Bedrock's Converse
// API, an upstream). Each direction is a set of pure
// functions — the request out (or in), the answer's events in (or out),
// the whole answer — table-tested with recorded wire bytes; the path in
// internal/gateway calls them at its edges and knows nothing else of the
// protocol.
//
// An upstream translator implements [Outbound]. What it reads besides the
// chat request is the state the upstream needs back from earlier turns
// (Anthropic's signed thinking blocks, Gemini's thought signatures): the
// gateway remembers what [Events.Carried] or [Answer.Carried] returned for
// a turn, keyed by the turn's call ids, and puts it back into that turn's
// assistant message, in the member [Options.CarriedMember] names, before
// the next request is translated.
//
// A client API's translator writes the chat request with a [ChatWriter]
// and copies as little of the client's request as it can: to an upstream
// of the client's protocol, each message names the blocks or items it
// keeps by their index in a list of views of the request ([Kept]); to
// any upstream whose translator reads the decoded messages (all but chat
// completions), a long string the client wrote for a message's content
// is named by its index too ([ChatWriter.Content], wire.KeptContent),
// and the decoded message's content is the client's own bytes.
package translate

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"iter"
	"slices"
	"strconv"

	"github.com/toolgate/toolgate/internal/enum"
	"github.com/toolgate/toolgate/internal/wire"
)

// Protocol is the wire an upstream speaks.
type Protocol uint8

// Protocols.
const (
	OpenAI    Protocol = iota // chat completions, as the clients speak it
	Anthropic                 // the Messages API (internal/translate/anthropic)
	Gemini                    // Google's Gemini API (internal/translate/gemini)
	Responses                 // OpenAI's Responses API (internal/translate/responses)
	Bedrock                   // Amazon Bedrock's Converse API (internal/translate/bedrock)
)

var protocolNames = []string{"openai", "anthropic", "gemini", "responses", "bedrock"}

// String is the protocol's configured name (and gen_ai.provider.name).
func (p Protocol) String() string { return protocolNames[p] }

// Names are the configured names of the protocols.
func (Protocol) Names() []string { return slices.Clone(protocolNames) }

// Parse reads a configured protocol.
func (Protocol) Parse(s string) (Protocol, error) { return enum.Parse[Protocol](protocolNames, s) }

// Outbound translates the path's chat request into an upstream protocol's
// and its answers, streamed or whole, back into chat completions.
type Outbound interface {
	// Request translates a prepared chat request (repaired, its reasoning
	// level written in the request's reasoning members).
	Request(req *wire.ChatRequest, o Options) (Request, error)
	// Stream returns the translator of one streamed answer.
	Stream(o StreamOptions) Events
	// Whole translates one whole answer.
	Whole(body []byte, upstream string) (Answer, error)
	// Setup is what every request to an upstream of the protocol
	// carries, from its configuration.
	Setup(c UpstreamConfig) Setup
}

// UpstreamConfig is what an upstream's configuration says that its
// protocol may need.
type UpstreamConfig struct {
	// Headers are the configured headers sent with every request.
	Headers map[string]string
	// Version is the API version a protocol names in a header (Anthropic's
	// anthropic-version).
	Version string
	// DefaultMaxTokens is the output limit for a request that sets none.
	DefaultMaxTokens int
	// Vertex: the upstream is a publisher's models on Google Vertex AI
	// (…/publishers/anthropic), whose endpoints name the model.
	Vertex bool
}

// Setup is what every request to an upstream of a protocol carries.
type Setup struct {
	// Path is appended to the upstream's URL for a request whose
	// translation names none (Anthropic's /messages).
	Path string
	// Headers are sent with every request: the configured ones, and the
	// protocol's own (anthropic-version).
	Headers map[string]string
	// MaxTokens is the output limit sent when the request sets none, for
	// a protocol that requires one (0: none required).
	MaxTokens int
}

// Options are what a translator needs besides the request.
type Options struct {
	// Model is the upstream's model name.
	Model string
	// DefaultMaxTokens is the output limit when the request sets none, for
	// a protocol that requires one.
	DefaultMaxTokens int
	// CarriedMember is the member of an assistant message that holds, as
	// a JSON string, the state the gateway restored for that turn (what
	// Carried returned when the turn was answered).
	CarriedMember string
	// UpstreamStore asks an upstream that can keep its responses (the
	// Responses API) to keep them; by default it keeps nothing and hands
	// its reasoning back encrypted.
	UpstreamStore bool
	// Upstream is the name of the upstream (the deployment) the request
	// goes to: state that another one issued is not sent to it.
	Upstream string
	// Sealer checks the tags of the state a client sends back (a
	// Responses reasoning item's encrypted content).
	Sealer Sealer
	// Vertex: the upstream is a publisher's models on Google Vertex AI
	// (UpstreamConfig.Vertex).
	Vertex bool
}

// Sealer tags state the gateway hands a client to carry back (a
// Responses reasoning item's encrypted content), so that it goes back
// only to the upstream that issued it, and only from the client key it
// was handed to: Tag is a keyed hash of the three (see
// responses.NewSealer).
type Sealer interface {
	Tag(upstream, content string) string
}

// StreamOptions are what a stream's translator needs to know of the
// client it serves.
type StreamOptions struct {
	// Thoughts hands the client's translator, in the delta members below,
	// what the upstream needs back byte for byte (a thinking block's
	// signature, a reasoning item's encrypted content): for a client
	// whose API has a slot for it (the Messages and Responses APIs),
	// never for a chat client.
	Thoughts bool
	// Upstream is the name of the upstream (the deployment) answering,
	// for state only it can read.
	Upstream string
	// Sealer tags that state for the client (translate.Sealer).
	Sealer Sealer
}

// The delta members of [StreamOptions.Thoughts]: from an Anthropic
// upstream, a thinking block's signature (after its text) and a redacted
// thinking block's data; from a Responses upstream, a reasoning or
// message item's id (when it starts, before its text), the whole
// reasoning item (when it is done), the item id of each function call
// ({"call_id","id"}, before the call), which the reasoning item before it
// names, and other items (a hosted tool's call, a message with its
// annotations) whole when they are done, in OutputItemMember. Each
// protocol's own blocks and items have their own member, read only by the
// client translator of that protocol: a Messages client never gets a
// Responses item as a content block, nor a Responses client an Anthropic
// block as an output item.
const (
	SignatureMember     = wire.OwnPrefix + "signature"
	RedactedMember      = wire.OwnPrefix + "redacted"
	ReasoningIDMember   = wire.OwnPrefix + "reasoning_id"
	MessageIDMember     = wire.OwnPrefix + "message_id"
	ReasoningItemMember = wire.OwnPrefix + "reasoning_item"
	CallItemMember      = wire.OwnPrefix + "call_item"
	// From an Anthropic upstream, a block the chat model has no slot for
	// (a server tool's use and result, …), whole once it is done, and a
	// text block's citation.
	BlockMember    = wire.OwnPrefix + "block"
	CitationMember = wire.OwnPrefix + "citation"
	// From a Responses upstream, an output item the chat model has no slot
	// for, whole once it is done.
	OutputItemMember = wire.OwnPrefix + "output_item"
)

// The members a client API's request keeps, for an upstream of its own
// protocol, what the chat model has no slot for. For a Messages API
// client and an Anthropic upstream: BlocksMember, on each chat message,
// the blocks the client sent for it (a JSON array of their indices in
// wire.ChatRequest.Kept, which holds views of the client's request: a
// block is never copied into the chat form; Kept reads them), which the
// Anthropic translator sends as they are while the message still says
// what they say ([BlocksSay]); RequestMember, on the request, the
// client's members the chat model lacks (its tools as declared, server
// tools included, and members such as container or mcp_servers), a JSON
// object. For a
// Responses API client and a Responses upstream, the same as ItemsMember
// and ResponsesRequestMember. Each protocol has its own, so that a
// request that falls back to an upstream of a third protocol carries
// nothing another reads; DecodeRequest strips them all from what a
// client sends, and a chat completions upstream gets none (DropOwn).
const (
	BlocksMember           = wire.OwnPrefix + "blocks"
	RequestMember          = wire.OwnPrefix + "request"
	ItemsMember            = wire.OwnPrefix + "items"
	ResponsesRequestMember = wire.OwnPrefix + "responses_request"
	// PreviousMember: on the request, the upstream's own id for the
	// response a Responses API client continues and the upstream that
	// keeps it ({"id","upstream"}); on a chat message, true when it was
	// made from that response's items. The Responses translator then
	// sends previous_response_id and only the messages after them, while
	// they are still the first ones, unchanged.
	PreviousMember = wire.OwnPrefix + "previous"
)

// Framed is implemented by the Events of a protocol whose stream is not
// server-sent events (Bedrock's AWS event stream): Frames reads the
// answer's frames from its body, as wire.Events reads SSE (each event's
// slices valid until the next, a read error a *wire.StreamError, a frame
// larger than max an error, a clean end between frames the end of the
// sequence), and Event translates the frame it yielded last.
type Framed interface {
	Frames(ctx context.Context, r io.Reader, max int) iter.Seq2[wire.Event, error]
}

// Identified is implemented by the Events of an upstream that can keep
// its answers (the Responses API): the id it gave the answer.
type Identified interface {
	ResponseID() string
}

// Request is a translated request and what the translation changed
// beyond the mapping itself.
type Request struct {
	Body []byte
	// Path is the endpoint below the upstream's URL ("" for the upstream's
	// own), with its query.
	Path string
	// ThinkingOff: thinking was asked for but turned off, because the
	// state the upstream needs back for the conversation's last tool turn
	// was not found.
	ThinkingOff bool
	// DroppedEmpty counts turns left out for having no content.
	DroppedEmpty int
	// Placeholders counts turns sent with the placeholder the upstream
	// documents for state the gateway does not have.
	Placeholders int
	// DroppedReasoning counts reasoning items the client sent back that
	// another upstream issued, left out.
	DroppedReasoning int
}

// Events translates one streamed answer, event by event.
type Events interface {
	// Event returns the chat chunks one event becomes (none for most), and
	// done at the protocol's end marker. An error event becomes a chunk
	// with an error object, which the normalizer ends the stream with.
	Event(data []byte) (chunks [][]byte, done bool, err error)
	// Ended reports, at a clean end of the body, whether the answer had
	// ended (for a protocol whose stream has no end marker).
	Ended() bool
	// Carried is the state the upstream needs back with this turn (nil:
	// none), once the answer has ended.
	Carried() []byte
	// Kinds names the normalizations the translation made (counted as the
	// normalizer's are).
	Kinds() []string
}

// Answer is a whole answer, translated.
type Answer struct {
	// Chat is the chat.completion.
	Chat []byte
	// Carried is the state the upstream needs back with this turn (nil:
	// none).
	Carried []byte
	// Kinds names the normalizations the translation made.
	Kinds []string
	// ResponseID is the upstream's id for the answer ("" when it has
	// none to give), for an upstream that can keep it.
	ResponseID string
}

// Functions is the Outbound of a translator's three functions.
type Functions struct {
	RequestFunc func(*wire.ChatRequest, Options) (Request, error)
	StreamFunc  func(StreamOptions) Events
	WholeFunc   func(body []byte, upstream string) (Answer, error)
	// SetupFunc is nil for a protocol that needs nothing but the
	// configured headers.
	SetupFunc func(UpstreamConfig) Setup
}

func (f Functions) Request(req *wire.ChatRequest, o Options) (Request, error) {
	return f.RequestFunc(req, o)
}
func (f Functions) Stream(o StreamOptions) Events { return f.StreamFunc(o) }
func (f Functions) Whole(body []byte, upstream string) (Answer, error) {
	return f.WholeFunc(body, upstream)
}
func (f Functions) Setup(c UpstreamConfig) Setup {
	if f.SetupFunc == nil {
		return Setup{Headers: c.Headers}
	}
	return f.SetupFunc(c)
}

// Own is the member key of a chat message, one the gateway put there (a
// member named with wire.OwnPrefix, or Options.CarriedMember), or nil.
func Own(m wire.Message, key string) json.RawMessage {
	// The gateway writes its members' keys as they are, never escaped
	// (a client's are stripped at the door): a message whose bytes hold
	// no such key has no such member, and costs no parse.
	if m.Raw == nil || key == "" || !bytes.Contains(m.Raw, []byte(key)) {
		return nil
	}
	v, _ := wire.Member(m.Raw, key)
	return v
}

// Restored decodes the state the gateway restored into a turn: member
// holds it as a JSON string of a T's JSON. It reports whether there was
// such state. A message without any costs nothing.
func Restored[T any](m wire.Message, member string) (v T, ok bool) {
	raw := Own(m, member)
	var stored string
	if raw == nil || json.Unmarshal(raw, &stored) != nil {
		return v, false
	}
	p := new(T) // decoded only here: a T that escapes is made for a message that has one
	err := json.Unmarshal([]byte(stored), p)
	return *p, err == nil
}

// Kept are the blocks or items a client of another API sent for a chat
// message, which its member (BlocksMember or ItemsMember) names by their
// index in src (the request's wire.ChatRequest.Kept) — a JSON array of
// indices, AppendIndex's — or nil: when it names none, or one src lacks.
// Views of the client's request, in dst's array (dst[:0], a list a
// translator reuses from one message to the next) or, for a nil dst, a
// list of their own.
func Kept(dst, src []json.RawMessage, m wire.Message, member string) []json.RawMessage {
	raw := Own(m, member)
	if raw == nil {
		return nil // most messages: nothing decoded
	}
	kept := dst[:0]
	if kept == nil {
		kept = make([]json.RawMessage, 0, wire.ArrayLen(raw))
	}
	if !eachKept(src, raw, func(v json.RawMessage) { kept = append(kept, v) }) || len(kept) == 0 {
		return nil
	}
	return kept
}

// KeptSize is the length of the blocks or items a chat message keeps
// (Kept), 0 when it keeps none: read without a list.
func KeptSize(src []json.RawMessage, m wire.Message, member string) int {
	raw := Own(m, member)
	if raw == nil {
		return 0
	}
	n := 0
	if !eachKept(src, raw, func(v json.RawMessage) { n += len(v) + 1 }) {
		return 0
	}
	return n
}

// eachKept calls fn with each value of src the indices of a kept member
// name; false, having stopped, at one that is no index of it.
func eachKept(src []json.RawMessage, indices []byte, fn func(json.RawMessage)) bool {
	return wire.EachElement(indices, func(_ int, v []byte) bool {
		i, err := strconv.Atoi(string(v))
		if err != nil || i < 0 || i >= len(src) {
			return false
		}
		fn(src[i])
		return true
	})
}

// AppendIndex writes index i of a kept block or item into a kept
// member's array (the comma before all but the first, k > 0).
func AppendIndex(buf []byte, k, i int) []byte {
	if k > 0 {
		buf = append(buf, ',')
	}
	return strconv.AppendInt(buf, int64(i), 10)
}

// KeptMembers are the client's members a request keeps for an upstream of
// its protocol (in member: RequestMember or ResponsesRequestMember), or
// nil: views of the request.
func KeptMembers(req *wire.ChatRequest, member string) map[string]json.RawMessage {
	raw, ok := req.Get(member)
	if !ok {
		return nil
	}
	kept := map[string]json.RawMessage{}
	wire.EachMember(raw, func(k string, v []byte) bool {
		kept[k] = v
		return true
	})
	return kept
}

// KeptTools reads the tools a client declared, as its request keeps them:
// asDeclared reports that its own tools (those client says are: of the
// types the chat model translates) are the translated ones, by name and
// in order, so that the declared list can go as it is; others are the
// rest (server or hosted tools), to go after the translated ones
// otherwise.
func KeptTools(declared json.RawMessage, translated []string, client func(typ string) bool) (asDeclared bool, others []json.RawMessage) {
	tools, ok := wire.Elements(declared)
	if !ok {
		return false, nil
	}
	k := 0
	asDeclared = true
	for _, d := range tools {
		typ, _ := wire.Member(d, "type")
		t, _ := wire.String(typ)
		if !client(t) {
			others = append(others, d)
			continue
		}
		name, _ := wire.Member(d, "name")
		asDeclared = asDeclared && k < len(translated) && wire.StringIs(name, translated[k])
		k++
	}
	return asDeclared && k == len(translated), others
}
