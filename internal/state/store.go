package state

import "context"

// TenantStore keeps strings per tenant (a client key; "open" on a gateway
// without keys): what one tenant stored is never read, replaced,
// counted or evicted in another's name. The gateway's reasoning store and
// its stored responses are TenantStores (in memory, QuotaStore; in Redis,
// RedisStrings).
// Implementations are safe for concurrent use.
type TenantStore interface {
	Get(ctx context.Context, tenant, key string) (string, bool, error)
	GetMany(ctx context.Context, tenant string, keys []string) (map[string]string, error)
	Put(ctx context.Context, tenant, key, v string) error
	PutMany(ctx context.Context, tenant string, entries map[string]string) error
	Delete(ctx context.Context, tenant, key string) (bool, error)
}
