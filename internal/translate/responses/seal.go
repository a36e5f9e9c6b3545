package responses

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"

	"github.com/toolgate/toolgate/internal/wire"
)

// Encrypted reasoning is only valid for the organization that issued it:
// sent to another deployment it is refused (invalid_encrypted_content).
// The gateway hands a Responses client each reasoning item with its
// encrypted_content sealed — prefixed with a tag naming the upstream that
// issued it — and, when the client sends the item back, unseals it for
// that upstream only: to another one the item is not sent (the turn's
// calls go without it), and the drop is counted. The tag is a hash of the
// upstream's configured name, so a client learns nothing of the
// deployments; it is not a secret, and a forged tag only decides whether
// the gateway sends an item the upstream checks anyway.

// sealPrefix starts a sealed encrypted_content: "tg1.<tag>.<original>".
const sealPrefix = "tg1."

// tagOf is an upstream's tag: 12 hex digits of a hash of its name.
func tagOf(upstream string) string {
	h := sha256.Sum256([]byte("toolgate-reasoning\x00" + upstream))
	return hex.EncodeToString(h[:6])
}

// seal prefixes an encrypted content with upstream's tag.
func seal(encrypted, upstream string) string {
	return sealPrefix + tagOf(upstream) + "." + encrypted
}

// unseal splits a sealed encrypted content into its tag and the content
// as the upstream issued it; ok is false for one the gateway did not seal.
func unseal(s string) (tag, encrypted string, ok bool) {
	rest, found := strings.CutPrefix(s, sealPrefix)
	if !found {
		return "", s, false
	}
	tag, encrypted, found = strings.Cut(rest, ".")
	if !found || len(tag) != 12 {
		return "", s, false
	}
	return tag, encrypted, true
}

// SealItem returns a reasoning item with its encrypted_content (if any)
// sealed for upstream; everything else is kept as the upstream sent it.
func SealItem(raw json.RawMessage, upstream string) json.RawMessage {
	return withEncrypted(raw, func(enc string) string { return seal(enc, upstream) })
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
