package gateway

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"strings"

	"github.com/toolgate/toolgate/internal/budget"
	"github.com/toolgate/toolgate/internal/config"
)

// clientKey is a configured client key, resolved once.
type clientKey struct {
	cfg    *config.Key
	hash   []byte
	limits budget.Limits
	models []byte // GET /v1/models' body for this key
}

// AuthError is a request refused for its client key: 401 without a valid
// key, 403 for a model the key may not use.
type AuthError struct {
	Status int
	Msg    string
}

func (e *AuthError) Error() string { return e.Msg }

func resolveKeys(cfg *config.Config) []clientKey {
	keys := make([]clientKey, 0, len(cfg.Keys))
	for i := range cfg.Keys {
		k := &cfg.Keys[i]
		h, _ := hex.DecodeString(strings.ToLower(k.SHA256)) // validated at load
		keys = append(keys, clientKey{cfg: k, hash: h, limits: resolveBudget(k.Budget), models: modelList(cfg, k)})
	}
	return keys
}

// authenticate returns the client key a request presents (Authorization:
// Bearer, api-key or x-api-key), comparing hashes in constant time; nil
// with no error when no keys are configured (the gateway is open).
func (g *Gateway) authenticate(r *http.Request) (*clientKey, error) {
	if len(g.keys) == 0 {
		return nil, nil
	}
	presented := strings.TrimSpace(strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
	for _, h := range []string{"Api-Key", "X-Api-Key"} {
		if presented == "" {
			presented = r.Header.Get(h)
		}
	}
	if presented == "" {
		return nil, &AuthError{Status: http.StatusUnauthorized, Msg: "You didn't provide an API key. Send your toolgate key as Authorization: Bearer <key>."}
	}
	sum := sha256.Sum256([]byte(presented))
	var found *clientKey
	for i := range g.keys {
		if subtle.ConstantTimeCompare(sum[:], g.keys[i].hash) == 1 {
			found = &g.keys[i] // keep comparing: the time does not depend on which key matched
		}
	}
	if found == nil {
		return nil, &AuthError{Status: http.StatusUnauthorized, Msg: "Incorrect API key provided. Check the key your gateway operator gave you."}
	}
	return found, nil
}
