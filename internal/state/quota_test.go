package state

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// The memory store is bounded in entries and time, per tenant and in all,
// and keeps each tenant's entries apart.
func TestQuotaStore(t *testing.T) {
	now := time.Unix(0, 0)
	s := NewQuotaStore(QuotaOptions{MaxEntries: 4, TenantEntries: 2, TTL: time.Minute, Now: func() time.Time { return now }})
	ctx := context.Background()
	s.Put(ctx, "k1", "a", "ra")
	s.Put(ctx, "k1", "b", "rb")
	s.Get(ctx, "k1", "a") // a is now the most recent
	s.Put(ctx, "k1", "c", "rc")
	if _, ok, _ := s.Get(ctx, "k1", "b"); ok {
		t.Error("b should have been evicted: k1 is over its share of 2")
	}
	if v, ok, _ := s.Get(ctx, "k1", "a"); !ok || v != "ra" {
		t.Errorf("a = %q %v", v, ok)
	}
	if _, ok, _ := s.Get(ctx, "k2", "a"); ok {
		t.Error("k2 read k1's entry")
	}
	if got, _ := s.GetMany(ctx, "k1", []string{"a", "b", "c", "a"}); len(got) != 2 || got["a"] != "ra" || got["c"] != "rc" {
		t.Errorf("GetMany = %v, want a and c", got)
	}
	if got, _ := s.GetMany(ctx, "k2", []string{"a", "c"}); len(got) != 0 {
		t.Errorf("k2 read k1's entries: %v", got)
	}
	// PutMany is bounded as Put is: k3 keeps two of its three.
	s.PutMany(ctx, "k3", map[string]string{"x": "rx", "y": "ry", "z": "rz"})
	if got, _ := s.GetMany(ctx, "k3", []string{"x", "y", "z"}); len(got) != 2 {
		t.Errorf("k3 holds %v, want 2 entries", got)
	}
	if got, _ := s.GetMany(ctx, "k1", []string{"a", "c"}); len(got) != 2 {
		t.Errorf("k3's PutMany evicted k1's entries: %v", got)
	}
	// More keys than one hold of the lock reads all come back.
	big := NewQuotaStore(QuotaOptions{})
	entries, keys := map[string]string{}, []string{}
	for i := range 2*manyUnderLock + 1 {
		k := fmt.Sprint("call:", i)
		entries[k], keys = "r"+k, append(keys, k)
	}
	big.PutMany(ctx, "k", entries)
	if got, _ := big.GetMany(ctx, "k", keys); len(got) != len(keys) || got["call:512"] != "rcall:512" {
		t.Errorf("GetMany of %d keys found %d", len(keys), len(got))
	}
	now = now.Add(2 * time.Minute)
	if _, ok, _ := s.Get(ctx, "k1", "c"); ok {
		t.Error("an expired entry was returned")
	}
	if got, _ := s.GetMany(ctx, "k1", []string{"a"}); len(got) != 0 {
		t.Errorf("GetMany returned an expired entry: %v", got)
	}
}

// A tenant that floods the store with entries, small or large, evicts
// only its own: another tenant within its share keeps everything, and the
// store never holds more than its bytes.
func TestQuotaStoreFlood(t *testing.T) {
	s := NewQuotaStore(QuotaOptions{MaxBytes: 1 << 20, MaxEntries: 1000})
	ctx := context.Background()
	s.Put(ctx, "quiet", "kept", strings.Repeat("q", 10<<10))
	for i := range 10100 {
		s.Put(ctx, "loud", fmt.Sprint(i), "small")
	}
	for i := range 40 {
		s.Put(ctx, "loud", fmt.Sprint("big", i), strings.Repeat("x", 200<<10))
	}
	if _, ok, _ := s.Get(ctx, "quiet", "kept"); !ok {
		t.Error("another tenant's flood evicted an entry within its share")
	}
	bytes, entries, by := s.Usage()
	if bytes > 1<<20 || entries > 1000 || by["loud"] > 1<<20/4 {
		t.Errorf("held %d bytes in %d entries (%v): over the bounds", bytes, entries, by)
	}
	// An entry larger than a tenant's share is not kept.
	s.Put(ctx, "loud", "huge", strings.Repeat("x", 300<<10))
	if _, ok, _ := s.Get(ctx, "loud", "huge"); ok {
		t.Error("an entry larger than the tenant's share was kept")
	}
}
