package policy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"

	"github.com/toolgate/toolgate/internal/state"
)

// ReasoningStore remembers assistant turns' reasoning for upstreams that
// need it sent back (DeepSeek's thinking mode, docs/quirks.md C15), keyed by the
// tool-call ids the turn made, or by a hash of its content when it made
// none: one client key's view of a [state.TenantStore] ([Tenant]). An error is
// the store's failure (Redis unreachable), never a miss. Implementations
// are safe for concurrent use.
type ReasoningStore interface {
	// GetMany returns the strings stored under those of keys that have
	// one, in one round trip to a shared store: a request's lookups cost
	// one wait however long its transcript.
	GetMany(ctx context.Context, keys []string) (map[string]string, error)
	// PutMany stores each of entries (key to value), in one round trip
	// to a shared store.
	PutMany(ctx context.Context, entries map[string]string) error
}

// Tenant returns the ReasoningStore of one tenant of s.
func Tenant(s state.TenantStore, tenant string) ReasoningStore { return tenantView{s, tenant} }

type tenantView struct {
	s      state.TenantStore
	tenant string
}

func (v tenantView) GetMany(ctx context.Context, keys []string) (map[string]string, error) {
	return v.s.GetMany(ctx, v.tenant, keys)
}

func (v tenantView) PutMany(ctx context.Context, entries map[string]string) error {
	return v.s.PutMany(ctx, v.tenant, entries)
}

// ContentKey is the store key of a turn that made no call: a hash of its
// text content.
func ContentKey(content string) string {
	var b [contentKeyLen]byte
	return string(appendContentKey(b[:0], content))
}

// contentKeyLen is the length of a ContentKey.
const contentKeyLen = len("content:") + 32

// appendContentKey appends ContentKey's key of content to dst.
func appendContentKey[S string | []byte](dst []byte, content S) []byte {
	h := sha256.Sum256([]byte(content))
	return hex.AppendEncode(append(dst, "content:"...), h[:16])
}
