// Package auth checks the client keys of the main listener's API: keys are
// configured as their SHA-256 (never the key itself) and compared in
// constant time. It knows nothing of HTTP servers beyond reading a
// request's headers.
//
// Decisions recorded here:
//
//   - A key is presented as "Authorization: Bearer <key>", else "api-key",
//     else "x-api-key" (the headers OpenAI's and Azure's clients send).
//   - Every configured key is compared, whichever matched, so the time a
//     check takes does not say which key (or how much of one) was right.
//   - With no keys configured, every request is let in (Keys.Open); the
//     gateway's start-up log says so.
package auth

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"strings"

	"github.com/toolgate/toolgate/internal/config"
	"github.com/toolgate/toolgate/internal/wire"
)

// Kind classifies an Error.
type Kind int

// Kinds of refusal.
const (
	Missing         Kind = iota // no key presented (401)
	Invalid                     // a key that is not configured (401)
	ModelNotAllowed             // a key that may not use the model (403)
)

// Error is a request refused for its client key.
type Error struct {
	Kind Kind
	Msg  string
}

func (e *Error) Error() string { return e.Msg }

// Key is one configured client key, resolved once.
type Key struct {
	*config.Key
	hash [sha256.Size]byte
}

// Keys are the configured client keys. The zero value (no keys) lets
// every request in.
type Keys struct {
	keys []Key
}

// New resolves the configured keys (their hashes were validated at load).
func New(cfg []config.Key) Keys {
	var ks Keys
	for i := range cfg {
		k := Key{Key: &cfg[i]}
		h, _ := hex.DecodeString(strings.ToLower(cfg[i].SHA256))
		copy(k.hash[:], h)
		ks.keys = append(ks.keys, k)
	}
	return ks
}

// Open reports whether no keys are configured.
func (ks Keys) Open() bool { return len(ks.keys) == 0 }

// All returns the configured keys.
func (ks Keys) All() []Key { return ks.keys }

// Check returns the key h presents (nil with no error when the gateway is
// open), or an *Error of kind Missing or Invalid.
func (ks Keys) Check(h http.Header) (*Key, error) {
	if ks.Open() {
		return nil, nil
	}
	presented := strings.TrimSpace(strings.TrimPrefix(h.Get("Authorization"), "Bearer "))
	for _, name := range [...]string{"Api-Key", "X-Api-Key"} {
		if presented == "" {
			presented = h.Get(name)
		}
	}
	if presented == "" {
		return nil, &Error{Kind: Missing, Msg: "You didn't provide an API key. Send your toolgate key as Authorization: Bearer <key>."}
	}
	sum := sha256.Sum256([]byte(presented))
	var found *Key
	for i := range ks.keys {
		if subtle.ConstantTimeCompare(sum[:], ks.keys[i].hash[:]) == 1 {
			found = &ks.keys[i] // keep comparing: the time does not depend on which key matched
		}
	}
	if found == nil {
		return nil, &Error{Kind: Invalid, Msg: "Incorrect API key provided. Check the key your gateway operator gave you."}
	}
	return found, nil
}

// Allow returns an *Error of kind ModelNotAllowed when k (nil: no key) may
// not use model.
func Allow(k *Key, model string) error {
	if k == nil || k.Allows(model) {
		return nil
	}
	return &Error{Kind: ModelNotAllowed, Msg: "The key " + k.Name + " may not use the model `" + wire.Clip(model) + "`; ask your gateway operator for access."}
}
