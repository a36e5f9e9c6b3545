package budget

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis is the Store replicas share: each admission is one Lua script, so
// checking every counter and adding to each is atomic across replicas, and
// every counter has an expiry (its window), so nothing accumulates.
//
// Counters are plain keys named prefix+Check.Key. All keys of one admission
// are sent together, so a Redis Cluster would need them in one hash slot:
// put a hash tag in the prefix ("{toolgate}:") when using one.
type Redis struct {
	c       *redis.Client
	prefix  string
	timeout time.Duration
}

// NewRedis connects to the Redis at url (redis://[user:password@]host:port/db,
// rediss:// for TLS). timeout bounds each operation (dial, read, write and
// the whole call); prefix starts every key. It does not dial: Ping does.
func NewRedis(url, prefix string, timeout time.Duration) (*Redis, error) {
	opts, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("state.redis_url: %w", err)
	}
	opts.DialTimeout, opts.ReadTimeout, opts.WriteTimeout = timeout, timeout, timeout
	opts.MaxRetries = 1 // a replaced connection, not a retry storm against a Redis that is down
	opts.ContextTimeoutEnabled = true
	return &Redis{c: redis.NewClient(opts), prefix: prefix, timeout: timeout}, nil
}

// Client is the underlying client, for other state kept in the same Redis.
func (r *Redis) Client() *redis.Client { return r.c }

// Prefix is the prefix of every key the store writes.
func (r *Redis) Prefix() string { return r.prefix }

// Ping checks that Redis answers.
func (r *Redis) Ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	return r.c.Ping(ctx).Err()
}

// Close closes the connections.
func (r *Redis) Close() error { return r.c.Close() }

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
func (r *Redis) Admit(ctx context.Context, checks []Check, counts []Count) (int, error) {
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
		return -1, fmt.Errorf("redis admission: %w", err)
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
func (r *Redis) Add(ctx context.Context, key string, n int64, window time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	if err := addScript.Run(ctx, r.c, []string{r.prefix + key}, n, windowMs(window)).Err(); err != nil {
		return fmt.Errorf("redis add: %w", err)
	}
	return nil
}

func windowMs(d time.Duration) string {
	return strconv.FormatInt(max(d.Milliseconds(), 1), 10)
}

// Strings is a store of strings with an expiry in the same Redis, each
// under prefix+key: remembered reasoning lives there (it implements
// policy.ReasoningStore). A Redis error is returned, never taken for a
// miss.
type Strings struct {
	r   *Redis
	key string
	ttl time.Duration
}

// Strings returns a store of strings under Prefix()+prefix that expire
// after ttl.
func (r *Redis) Strings(prefix string, ttl time.Duration) *Strings {
	return &Strings{r: r, key: r.prefix + prefix, ttl: ttl}
}

// Get returns the string stored under key.
func (s *Strings) Get(ctx context.Context, key string) (string, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, s.r.timeout)
	defer cancel()
	v, err := s.r.c.Get(ctx, s.key+key).Result()
	switch {
	case errors.Is(err, redis.Nil):
		return "", false, nil
	case err != nil:
		return "", false, fmt.Errorf("redis get: %w", err)
	}
	return v, true, nil
}

// Delete removes the string under key; it reports whether there was one.
func (s *Strings) Delete(ctx context.Context, key string) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, s.r.timeout)
	defer cancel()
	n, err := s.r.c.Del(ctx, s.key+key).Result()
	if err != nil {
		return false, fmt.Errorf("redis del: %w", err)
	}
	return n > 0, nil
}

// Put stores v under key.
func (s *Strings) Put(ctx context.Context, key, v string) error {
	ctx, cancel := context.WithTimeout(ctx, s.r.timeout)
	defer cancel()
	if err := s.r.c.Set(ctx, s.key+key, v, s.ttl).Err(); err != nil {
		return fmt.Errorf("redis set: %w", err)
	}
	return nil
}
