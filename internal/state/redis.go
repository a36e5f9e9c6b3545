package state

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisStore is the Store replicas share: each admission is one Lua script, so
// checking every counter and adding to each is atomic across replicas, and
// every counter has an expiry (its window), so nothing accumulates.
//
// Counters are plain keys named prefix+Check.Key; the keys of one
// admission share a hash tag (the client key's, see KeyTag), so on a
// Redis Cluster they are in one slot and one script may touch them all.
// Each string (RedisStrings) is one key. On a cluster a primary's failover
// (a replica promoted) loses at most the writes the replica had not
// received: counts of the current window; requests meanwhile follow
// state.on_error.
type RedisStore struct {
	c       redis.UniversalClient
	prefix  string
	timeout time.Duration
}

// NewRedisStore connects to the Redis at url (redis://[user:password@]host:port/db,
// rediss:// for TLS), or to a Redis Cluster: urls, comma-separated, are
// its seeds, or cluster says a single URL is a cluster node. timeout bounds
// each operation (dial, read, write and the whole call); prefix starts
// every key. It does not dial: Ping does.
func NewRedisStore(urls, prefix string, timeout time.Duration, cluster bool) (*RedisStore, error) {
	seeds := strings.Split(urls, ",")
	opts, err := redis.ParseURL(strings.TrimSpace(seeds[0]))
	if err != nil {
		return nil, fmt.Errorf("state.redis_url: %w", err)
	}
	r := &RedisStore{prefix: prefix, timeout: timeout}
	if !cluster && len(seeds) == 1 {
		opts.DialTimeout, opts.ReadTimeout, opts.WriteTimeout = timeout, timeout, timeout
		opts.MaxRetries = 1 // a replaced connection, not a retry storm against a Redis that is down
		opts.ContextTimeoutEnabled = true
		r.c = redis.NewClient(opts)
		return r, nil
	}
	addrs := make([]string, 0, len(seeds))
	for _, s := range seeds {
		o, err := redis.ParseURL(strings.TrimSpace(s))
		if err != nil {
			return nil, fmt.Errorf("state.redis_url: %w", err)
		}
		addrs = append(addrs, o.Addr)
	}
	r.c = redis.NewClusterClient(&redis.ClusterOptions{
		Addrs: addrs, Username: opts.Username, Password: opts.Password, TLSConfig: opts.TLSConfig,
		DialTimeout: timeout, ReadTimeout: timeout, WriteTimeout: timeout, ContextTimeoutEnabled: true,
		MaxRetries: 1, MaxRedirects: 3,
		// A node that refuses connections (a primary gone) fails the call
		// at once, not after five dials: the error reloads the slot map.
		DialerRetries: 1,
	})
	return r, nil
}

// Client is the underlying client, for other state kept in the same Redis.
func (r *RedisStore) Client() redis.UniversalClient { return r.c }

// Prefix is the prefix of every key the store writes.
func (r *RedisStore) Prefix() string { return r.prefix }

// Ping checks that Redis answers.
func (r *RedisStore) Ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	return r.c.Ping(ctx).Err()
}

// Close closes the connections.
func (r *RedisStore) Close() error { return r.c.Close() }

// admitScript: KEYS are the counters; ARGV holds limit, window (ms) and cost
// for each. It returns {0, used1, reset1, used2, reset2, ...} when admitted,
// or {i, used, reset} for the first counter i (from 1) without room. A reset
// of -1 means the counter does not exist (its whole window is ahead).
var admitScript = redis.NewScript(`
local used = {}
for i = 1, #KEYS do
  local limit, cost = tonumber(ARGV[3*i-2]), tonumber(ARGV[3*i])
  local v = tonumber(redis.call('GET', KEYS[i]) or '0')
  if v + math.max(cost, 1) > limit then
    return {i, v, redis.call('PTTL', KEYS[i])}
  end
  used[i] = v
end
local out = {0}
for i = 1, #KEYS do
  local window, cost = ARGV[3*i-1], tonumber(ARGV[3*i])
  local v = used[i]
  local ttl = redis.call('PTTL', KEYS[i])
  if cost > 0 then
    v = redis.call('INCRBY', KEYS[i], cost)
    if ttl < 0 then
      redis.call('PEXPIRE', KEYS[i], window)
      ttl = tonumber(window)
    end
  end
  out[#out+1] = v
  out[#out+1] = ttl
end
return out
`)

// addScript adds ARGV[1] to KEYS[1], giving it an expiry of ARGV[2] ms when
// it has none.
var addScript = redis.NewScript(`
local v = redis.call('INCRBY', KEYS[1], ARGV[1])
if redis.call('PTTL', KEYS[1]) < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return v
`)

// Admit implements Store.
func (r *RedisStore) Admit(ctx context.Context, checks []Check, counts []Count) (int, error) {
	if len(checks) == 0 {
		return -1, nil
	}
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	keys := make([]string, len(checks))
	args := make([]any, 0, 3*len(checks))
	for i, c := range checks {
		keys[i] = r.prefix + c.Key
		args = append(args, c.Limit, windowMs(c.Window), c.Cost)
	}
	res, err := admitScript.Run(ctx, r.c, keys, args...).Int64Slice()
	if err != nil {
		return -1, r.failed("redis admission", err)
	}
	reset := func(ms int64, c Check) time.Duration {
		if ms < 0 {
			return c.Window
		}
		return time.Duration(ms) * time.Millisecond
	}
	if i := res[0]; i > 0 {
		if len(res) != 3 || int(i) > len(checks) {
			return -1, fmt.Errorf("redis admission: unexpected reply %v", res)
		}
		c := checks[i-1]
		counts[i-1] = Count{Used: res[1], Reset: reset(res[2], c)}
		return int(i - 1), nil
	}
	if len(res) != 1+2*len(checks) {
		return -1, fmt.Errorf("redis admission: unexpected reply %v", res)
	}
	for i, c := range checks {
		counts[i] = Count{Used: res[1+2*i], Reset: reset(res[2+2*i], c)}
	}
	return -1, nil
}

// Add implements Store.
func (r *RedisStore) Add(ctx context.Context, key string, n int64, window time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	if err := addScript.Run(ctx, r.c, []string{r.prefix + key}, n, windowMs(window)).Err(); err != nil {
		return r.failed("redis add", err)
	}
	return nil
}

// failed wraps an operation's error. On a cluster, an error that is not
// Redis's own answer (a node down, a timeout) may mean a primary failed
// over: the client's slot map is reloaded (in the background) at once,
// not at its next periodic refresh, so the promoted replica is used.
func (r *RedisStore) failed(op string, err error) error {
	var re redis.Error
	if cc, ok := r.c.(*redis.ClusterClient); ok && !errors.As(err, &re) {
		cc.ReloadState(context.Background())
	}
	return fmt.Errorf("%s: %w", op, err)
}

func windowMs(d time.Duration) string {
	return strconv.FormatInt(max(d.Milliseconds(), 1), 10)
}

// RedisStrings is a store of strings with an expiry in the same Redis, each
// tenant's (a client key's) under prefix+"{tenant}:"+key: remembered
// reasoning and stored responses live there (it implements
// TenantStore). A Redis error is returned, never taken for a miss.
// Its bounds are Redis's own (maxmemory and its eviction policy) and each
// string's expiry.
type RedisStrings struct {
	r   *RedisStore
	key string
	ttl time.Duration
}

// Strings returns a store of strings under Prefix()+prefix that expire
// after ttl.
func (r *RedisStore) Strings(prefix string, ttl time.Duration) *RedisStrings {
	return &RedisStrings{r: r, key: r.prefix + prefix, ttl: ttl}
}

// name is the Redis key of tenant's key.
func (s *RedisStrings) name(tenant, key string) string { return s.key + KeyTag(tenant) + key }

// Get returns the string tenant stored under key.
func (s *RedisStrings) Get(ctx context.Context, tenant, key string) (string, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, s.r.timeout)
	defer cancel()
	v, err := s.r.c.Get(ctx, s.name(tenant, key)).Result()
	switch {
	case errors.Is(err, redis.Nil):
		return "", false, nil
	case err != nil:
		return "", false, s.r.failed("redis get", err)
	}
	return v, true, nil
}

// GetMany returns the strings tenant stored under those of keys that have
// one: one MGET per maxMGet keys, which share the tenant's hash tag (one
// slot on a cluster).
func (s *RedisStrings) GetMany(ctx context.Context, tenant string, keys []string) (map[string]string, error) {
	found := map[string]string{}
	names := make([]string, 0, min(len(keys), maxMGet))
	for batch := range slices.Chunk(keys, maxMGet) {
		names = names[:0]
		for _, k := range batch {
			names = append(names, s.name(tenant, k))
		}
		vs, err := s.mget(ctx, names)
		if err != nil {
			return nil, s.r.failed("redis mget", err)
		}
		for i, v := range vs {
			if v, ok := v.(string); ok {
				found[batch[i]] = v
			}
		}
	}
	return found, nil
}

// mget is one MGET within the store's timeout.
func (s *RedisStrings) mget(ctx context.Context, names []string) ([]any, error) {
	ctx, cancel := context.WithTimeout(ctx, s.r.timeout)
	defer cancel()
	return s.r.c.MGet(ctx, names...).Result()
}

// maxMGet bounds the keys of one MGET, so that a long transcript's lookups
// do not hold Redis for long in one command.
const maxMGet = 256

// Delete removes the string tenant stored under key; it reports whether
// there was one.
func (s *RedisStrings) Delete(ctx context.Context, tenant, key string) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, s.r.timeout)
	defer cancel()
	n, err := s.r.c.Del(ctx, s.name(tenant, key)).Result()
	if err != nil {
		return false, s.r.failed("redis del", err)
	}
	return n > 0, nil
}

// PutMany stores each of entries under tenant: one pipeline of SETs, all
// under the tenant's hash tag (one slot on a cluster), so one round trip.
func (s *RedisStrings) PutMany(ctx context.Context, tenant string, entries map[string]string) error {
	if len(entries) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.r.timeout)
	defer cancel()
	_, err := s.r.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for k, v := range entries {
			p.Set(ctx, s.name(tenant, k), v, s.ttl)
		}
		return nil
	})
	if err != nil {
		return s.r.failed("redis set", err)
	}
	return nil
}

// Put stores v under tenant's key.
func (s *RedisStrings) Put(ctx context.Context, tenant, key, v string) error {
	ctx, cancel := context.WithTimeout(ctx, s.r.timeout)
	defer cancel()
	if err := s.r.c.Set(ctx, s.name(tenant, key), v, s.ttl).Err(); err != nil {
		return s.r.failed("redis set", err)
	}
	return nil
}

// KeyTag starts the name of every counter of a client key: the key's
// name in braces, a Redis Cluster hash tag, so that all the counters one
// admission checks are in one slot (one script touches them all); "-"
// stands for no key (an open gateway).
func KeyTag(key string) string {
	if key == "" {
		key = "-"
	}
	return "{" + key + "}:"
}
