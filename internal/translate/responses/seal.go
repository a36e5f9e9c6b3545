package responses

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"

	"github.com/toolgate/toolgate/internal/translate"
	"github.com/toolgate/toolgate/internal/wire"
)

// Encrypted reasoning is only valid for the organization that issued it:
// sent to another deployment it is refused (invalid_encrypted_content).
// The gateway hands a Responses client each reasoning item with its
// encrypted_content sealed — prefixed with a tag, an HMAC of the client's
// key (its tenant), the upstream that issued it and the content, under a
// secret every replica shares (responses.seal_key) — and, when the client
// sends the item back, opens it for that upstream only. An item sealed
// for another upstream or another key, a forged or truncated tag, or
// content the gateway never sealed is not sent (the turn's calls go
// without it, by its summary alone), and the drop is counted: the gateway
// sends an upstream no encrypted content it did not hand this key for
// that upstream.

// sealPrefix starts a sealed encrypted_content: "tg2.<tag>.<original>".
const sealPrefix = "tg2."

// tagLen is a tag's length: 96 bits in hex.
const tagLen = 24

// hmacSealer is the Sealer NewSealer makes.
type hmacSealer struct {
	key    []byte
	tenant string
}

// NewSealer is the Sealer of one client key's requests: tags are an
// HMAC-SHA256 under key of the tenant, the upstream and the content.
func NewSealer(key []byte, tenant string) translate.Sealer {
	return hmacSealer{key: key, tenant: tenant}
}

func (s hmacSealer) Tag(upstream, content string) string {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte("toolgate-reasoning\x00" + s.tenant + "\x00" + upstream + "\x00"))
	m.Write([]byte(content))
	return hex.EncodeToString(m.Sum(nil)[:tagLen/2])
}

// sealerOr is s, or a Sealer with no key (for a translation run without
// the gateway: tests, tools).
func sealerOr(s translate.Sealer) translate.Sealer {
	if s == nil {
		return hmacSealer{}
	}
	return s
}

// seal prefixes an encrypted content with its tag for upstream.
func seal(encrypted, upstream string, s translate.Sealer) string {
	return sealPrefix + sealerOr(s).Tag(upstream, encrypted) + "." + encrypted
}

// unseal splits a sealed encrypted content into its tag and the content
// as the upstream issued it; ok is false for one not in the sealed form.
func unseal(s string) (tag, encrypted string, ok bool) {
	rest, found := strings.CutPrefix(s, sealPrefix)
	if !found {
		return "", s, false
	}
	tag, encrypted, found = strings.Cut(rest, ".")
	if !found || len(tag) != tagLen {
		return "", s, false
	}
	return tag, encrypted, true
}

// open returns the content a sealed encrypted content holds when its tag
// is the one s makes for upstream; ok is false otherwise (another
// upstream's, another key's, forged, or never sealed).
func open(sealed, upstream string, s translate.Sealer) (encrypted string, ok bool) {
	tag, encrypted, ok := unseal(sealed)
	if !ok || !hmac.Equal([]byte(tag), []byte(sealerOr(s).Tag(upstream, encrypted))) {
		return "", false
	}
	return encrypted, true
}

// SealItem returns a reasoning item with its encrypted_content (if any)
// sealed for upstream by s; everything else is kept as the upstream sent
// it.
func SealItem(raw json.RawMessage, upstream string, s translate.Sealer) json.RawMessage {
	return withEncrypted(raw, func(enc string) string { return seal(enc, upstream, s) })
}

// withEncrypted returns raw with its encrypted_content replaced by
// f(encrypted_content), every other byte kept, or raw itself when it has
// none.
func withEncrypted(raw json.RawMessage, f func(string) string) json.RawMessage {
	var it struct {
		EncryptedContent string `json:"encrypted_content"`
	}
	if json.Unmarshal(raw, &it) != nil || it.EncryptedContent == "" {
		return raw
	}
	v, _ := json.Marshal(f(it.EncryptedContent))
	out, _ := wire.SetMember(raw, v, "encrypted_content")
	return out
}
