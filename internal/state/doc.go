// Package state is where the gateway's state lives, every backend beside
// the interface it implements:
//
//   - the counters admission consults (sessions' calls, keys' rates and
//     spend): Store, in memory (MemoryCounters) or in Redis shared by
//     replicas (RedisStore, a single server or a Cluster);
//   - what requests leave behind for later ones (remembered reasoning,
//     stored responses), apart per client key: TenantStore, in memory and
//     bounded (QuotaStore) or in the same Redis (RedisStrings);
//   - where each kind lives (Kind: none, memory, redis) and what a request
//     does when Redis cannot be reached (OnError).
//
// Admission and spend (what is counted, and when) are internal/budget's;
// what is remembered, internal/policy's.
package state
