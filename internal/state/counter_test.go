package state

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/toolgate/toolgate/internal/testing/testredis"
	"github.com/toolgate/toolgate/internal/testing/wait"
)

// storeContract runs the rules every Store keeps. advance moves the store's
// clock past a window of w.
func storeContract(t *testing.T, s Store, advance func(w time.Duration)) {
	ctx := context.Background()
	counts := make([]Count, 3)
	calls := Check{Key: "calls:s", Limit: 2, Window: time.Minute, Cost: 1}

	// Exactly the limit is admitted; one more is refused until the window ends.
	for i := range 2 {
		if refused, err := s.Admit(ctx, []Check{calls}, counts); err != nil || refused != -1 {
			t.Fatalf("call %d: refused=%d err=%v", i+1, refused, err)
		}
		if counts[0].Used != int64(i+1) || counts[0].Reset <= 0 || counts[0].Reset > time.Minute {
			t.Fatalf("call %d: count %+v", i+1, counts[0])
		}
	}
	if refused, err := s.Admit(ctx, []Check{calls}, counts); err != nil || refused != 0 {
		t.Fatalf("third call: refused=%d err=%v", refused, err)
	}
	if counts[0].Used != 2 || counts[0].Reset <= 0 || counts[0].Reset > time.Minute {
		t.Fatalf("refused count %+v", counts[0])
	}
	other := calls
	other.Key = "calls:other"
	if refused, _ := s.Admit(ctx, []Check{other}, counts); refused != -1 {
		t.Error("another counter was refused")
	}

	// All or nothing: a refusal adds to no counter.
	rpm := Check{Key: "rpm:k", Limit: 5, Window: time.Minute, Cost: 1}
	if refused, _ := s.Admit(ctx, []Check{rpm, calls}, counts); refused != 1 {
		t.Fatalf("refused=%d, want 1", refused)
	}
	if refused, _ := s.Admit(ctx, []Check{rpm}, counts); refused != -1 || counts[0].Used != 1 {
		t.Fatalf("rpm after a refused admission: refused=%d used=%d, want 1", refused, counts[0].Used)
	}

	// A cost of 0 only checks: below the limit passes, at it is refused.
	tpm := Check{Key: "tpm:k", Limit: 30, Window: time.Minute}
	if err := s.Add(ctx, tpm.Key, 29, tpm.Window); err != nil {
		t.Fatal(err)
	}
	if refused, _ := s.Admit(ctx, []Check{tpm}, counts); refused != -1 || counts[0].Used != 29 {
		t.Fatalf("tokens 29/30: refused=%d used=%d", refused, counts[0].Used)
	}
	_ = s.Add(ctx, tpm.Key, 1, tpm.Window)
	if refused, _ := s.Admit(ctx, []Check{tpm}, counts); refused != 0 || counts[0].Used != 30 {
		t.Fatalf("tokens 30/30: refused=%d used=%d", refused, counts[0].Used)
	}

	// A limit of 0 refuses everything.
	zero := Check{Key: "zero", Limit: 0, Window: time.Minute, Cost: 1}
	if refused, _ := s.Admit(ctx, []Check{zero}, counts); refused != 0 {
		t.Error("limit 0 admitted a call")
	}

	// The window ends: counting starts again.
	advance(time.Minute)
	if refused, _ := s.Admit(ctx, []Check{calls, tpm}, counts); refused != -1 || counts[0].Used != 1 || counts[1].Used != 0 {
		t.Fatalf("new window: refused=%d counts=%+v", refused, counts[:2])
	}
}

func TestMemoryStore(t *testing.T) {
	now := time.Unix(0, 0)
	s := NewMemoryCounters(0, func() time.Time { return now })
	storeContract(t, s, func(w time.Duration) { now = now.Add(w) })
}

// The memory store stays bounded whatever the number of session ids.
func TestMemoryStoreBounded(t *testing.T) {
	now := time.Unix(0, 0)
	s := NewMemoryCounters(2, func() time.Time { return now })
	counts := make([]Count, 1)
	for _, k := range []string{"a", "b", "c", "d"} {
		if refused, _ := s.Admit(context.Background(), []Check{{Key: k, Limit: 5, Window: time.Minute, Cost: 1}}, counts); refused != -1 {
			t.Fatalf("%s refused", k)
		}
	}
	if len(s.m) > 2 {
		t.Errorf("%d counters held, max 2", len(s.m))
	}
}

// storeTimeout is the tests' RedisStore timeout: no Redis call a test makes is
// expected to fail by taking too long.
const storeTimeout = 10 * time.Second

func TestRedisStore(t *testing.T) {
	srv := testredis.Start(t)
	s, err := NewRedisStore(srv.URL(), "test:", storeTimeout, false)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Windows are Redis expiries: the clock is advanced by expiring the keys.
	storeContract(t, s, func(time.Duration) {
		keys, _ := s.Client().Keys(context.Background(), "test:*").Result()
		for _, k := range keys {
			s.Client().PExpire(context.Background(), k, time.Millisecond)
		}
		wait.For(t, "the windows' keys to expire", func() bool {
			return s.Client().Exists(context.Background(), keys...).Val() == 0
		})
	})

	// Every key written has an expiry: nothing accumulates forever.
	ctx := context.Background()
	_ = s.Add(ctx, "tokens", 5, time.Minute)
	keys, _ := s.Client().Keys(ctx, "test:*").Result()
	if len(keys) == 0 {
		t.Fatal("no keys written")
	}
	for _, k := range keys {
		if ttl := s.Client().PTTL(ctx, k).Val(); ttl <= 0 || ttl > time.Minute {
			t.Errorf("key %s has ttl %v", k, ttl)
		}
	}

	// A tenant's strings come back in one MGET per 256 keys; another
	// tenant's are not among them.
	strs := s.Strings("reasoning:", time.Minute)
	keys = make([]string, 300)
	for i := range keys {
		keys[i] = fmt.Sprint("call:", i)
	}
	for _, i := range []int{0, 255, 256, 299} {
		if err := strs.Put(ctx, "k", keys[i], fmt.Sprint("r", i)); err != nil {
			t.Fatal(err)
		}
	}
	_ = strs.Put(ctx, "other", keys[1], "theirs")
	gets, mgets := srv.Calls(t, "get"), srv.Calls(t, "mget")
	got, err := strs.GetMany(ctx, "k", keys)
	if err != nil || len(got) != 4 || got["call:0"] != "r0" || got["call:255"] != "r255" || got["call:256"] != "r256" || got["call:299"] != "r299" {
		t.Errorf("GetMany = %v, %v", got, err)
	}
	if m, g := srv.Calls(t, "mget")-mgets, srv.Calls(t, "get")-gets; m != 2 || g != 0 {
		t.Errorf("300 keys took %d MGETs and %d GETs, want 2 and 0", m, g)
	}

	// A turn's strings go in one round trip, each with its expiry.
	trips := &roundTrips{}
	s.Client().AddHook(trips)
	entries := map[string]string{"call:a": "x", "call:b": "y", "call:c": "z"}
	if err := strs.PutMany(ctx, "k", entries); err != nil || trips.n.Load() != 1 {
		t.Errorf("PutMany of 3 took %d round trips (%v), want 1", trips.n.Load(), err)
	}
	if got, err := strs.GetMany(ctx, "k", []string{"call:a", "call:b", "call:c"}); err != nil || len(got) != 3 || got["call:b"] != "y" {
		t.Errorf("GetMany after PutMany = %v, %v", got, err)
	}
	for k := range entries {
		if ttl := s.Client().PTTL(ctx, strs.name("k", k)).Val(); ttl <= 0 || ttl > time.Minute {
			t.Errorf("%s has ttl %v", k, ttl)
		}
	}

	// Redis gone: an error, not an admission.
	srv.Stop()
	if _, err := s.Admit(ctx, []Check{{Key: "x", Limit: 1, Window: time.Minute, Cost: 1}}, make([]Count, 1)); err == nil {
		t.Error("admitted with RedisStore stopped")
	}
}

// Concurrent admissions against one RedisStore never admit more than the limit.
func TestRedisStoreAtomic(t *testing.T) {
	srv := testredis.Start(t)
	a, _ := NewRedisStore(srv.URL(), "", storeTimeout, false)
	b, _ := NewRedisStore(srv.URL(), "", storeTimeout, false)
	defer a.Close()
	defer b.Close()
	n := concurrently(200, a, b, func(s *RedisStore) bool {
		refused, err := s.Admit(context.Background(), []Check{{Key: "c", Limit: 50, Window: time.Minute, Cost: 1}}, make([]Count, 1))
		return err == nil && refused == -1
	})
	if n != 50 {
		t.Errorf("%d admitted, limit 50", n)
	}
}

// On a Redis Cluster an admission's counters (a session's calls, a key's
// requests and tokens) share the key's hash tag: one script checks them
// all, for many keys spread over the slots, with no CROSSSLOT; a cluster
// client reaches every key; concurrent admissions still never pass a
// limit.
func TestRedisCluster(t *testing.T) {
	c := testredis.StartCluster(t)
	a, err := NewRedisStore(c.Seeds(), "tg:", storeTimeout, false)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, _ := NewRedisStore(strings.Split(c.Seeds(), ",")[0], "tg:", storeTimeout, true)
	defer b.Close()
	ctx := context.Background()
	for i := range 50 {
		key := fmt.Sprintf("team-%d", i)
		s := a
		if i%2 == 1 {
			s = b
		}
		tag := KeyTag(key)
		checks := []Check{{Key: tag + "calls:s1", Limit: 5, Window: time.Hour, Cost: 1}, {Key: tag + "rpm", Limit: 10, Window: time.Minute, Cost: 1},
			{Key: tag + "tpm", Limit: 100, Window: time.Minute}}
		if refused, err := s.Admit(ctx, checks, make([]Count, len(checks))); err != nil || refused != -1 {
			t.Fatalf("%s: refused %d, %v", key, refused, err)
		}
		if err := s.Add(ctx, tag+"tpm", 7, time.Minute); err != nil {
			t.Fatalf("%s: tokens: %v", key, err)
		}
	}
	strs := a.Strings("reasoning:", time.Minute)
	if err := strs.Put(ctx, "k", "call:x", "r"); err != nil {
		t.Fatal(err)
	}
	if v, ok, err := b.Strings("reasoning:", time.Minute).Get(ctx, "k", "call:x"); err != nil || !ok || v != "r" {
		t.Fatalf("a string across cluster clients: %q %v %v", v, ok, err)
	}
	if _, ok, err := b.Strings("reasoning:", time.Minute).Get(ctx, "other", "call:x"); err != nil || ok {
		t.Fatalf("another tenant's string: %v %v", ok, err)
	}
	if err := strs.PutMany(ctx, "k", map[string]string{"call:y": "ry", "call:z": "rz"}); err != nil {
		t.Fatalf("PutMany on the cluster: %v", err)
	}
	if got, err := b.Strings("reasoning:", time.Minute).GetMany(ctx, "k", []string{"call:y", "call:x", "call:w", "call:z"}); err != nil || len(got) != 3 || got["call:x"] != "r" || got["call:y"] != "ry" {
		t.Fatalf("a tenant's strings in one MGET on the cluster: %v %v", got, err)
	}
	n := concurrently(100, a, b, func(s *RedisStore) bool {
		refused, err := s.Admit(ctx, []Check{{Key: KeyTag("shared") + "rpm", Limit: 30, Window: time.Minute, Cost: 1}}, make([]Count, 1))
		return err == nil && refused == -1
	})
	if n != 30 {
		t.Errorf("%d admitted on the cluster, limit 30", n)
	}
}

// concurrently runs n admissions at once, alternating between two stores,
// and returns how many were admitted.
func concurrently(n int, a, b *RedisStore, admit func(*RedisStore) bool) int {
	admitted := make(chan bool, n)
	for i := range n {
		s := a
		if i%2 == 1 {
			s = b
		}
		go func() { admitted <- admit(s) }()
	}
	got := 0
	for range n {
		if <-admitted {
			got++
		}
	}
	return got
}

// roundTrips counts a RedisStore client's round trips (a command, or a
// pipeline of them), leaving out those that set up a new connection
// (HELLO, CLIENT SETINFO).
type roundTrips struct{ n atomic.Int32 }

func (h *roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if !setup(cmd) {
			h.n.Add(1)
		}
		return next(ctx, cmd)
	}
}

func (h *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if len(cmds) > 0 && !setup(cmds[0]) {
			h.n.Add(1)
		}
		return next(ctx, cmds)
	}
}

// setup reports whether cmd sets up a connection.
func setup(cmd redis.Cmder) bool { return cmd.Name() == "hello" || cmd.Name() == "client" }
