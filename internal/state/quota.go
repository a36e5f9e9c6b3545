package state

import (
	"container/list"
	"context"
	"slices"
	"sync"
	"time"
)

// QuotaOptions bound a QuotaStore.
type QuotaOptions struct {
	// MaxBytes bounds the bytes held (keys, values and a fixed overhead
	// per entry); 0 means 256 MiB. MaxEntries bounds the entries; 0 means
	// 10,000.
	MaxBytes   int64
	MaxEntries int
	// TenantBytes and TenantEntries are each tenant's share; 0 means a
	// quarter of MaxBytes and of MaxEntries.
	TenantBytes   int64
	TenantEntries int
	// TTL is how long an entry is kept; 0 means 24h.
	TTL time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// entryOverhead is what an entry costs besides its key and value: its list
// element, map slot and bookkeeping, about.
const entryOverhead = 128

// QuotaStore is a TenantStore in memory, bounded in bytes and entries in
// all and per tenant. A tenant over its share loses its own least
// recently used entries first; when the whole store is over its bounds,
// the tenant holding the most bytes loses its least recently used one.
// So a tenant within its share is never evicted by another that fills
// its own, and no flood of one tenant's entries, however small or large,
// grows the process past MaxBytes. A value larger than a tenant's share is
// not kept (a later Get misses it).
type QuotaStore struct {
	mu      sync.Mutex
	o       QuotaOptions
	bytes   int64
	entries int
	tenants map[string]*quotaTenant
}

type quotaTenant struct {
	ll    *list.List // of *quotaEntry, most recently used first
	m     map[string]*list.Element
	bytes int64
}

type quotaEntry struct {
	key, value string
	size       int64
	expires    time.Time
}

// NewQuotaStore returns an empty store bounded by o.
func NewQuotaStore(o QuotaOptions) *QuotaStore {
	if o.MaxBytes <= 0 {
		o.MaxBytes = 256 << 20
	}
	if o.MaxEntries <= 0 {
		o.MaxEntries = 10000
	}
	if o.TenantBytes <= 0 {
		o.TenantBytes = o.MaxBytes / 4
	}
	if o.TenantEntries <= 0 {
		o.TenantEntries = max(o.MaxEntries/4, 1)
	}
	if o.TTL <= 0 {
		o.TTL = 24 * time.Hour
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &QuotaStore{o: o, tenants: map[string]*quotaTenant{}}
}

// Get returns what tenant stored under key, if it has not expired.
func (s *QuotaStore) Get(_ context.Context, tenant, key string) (string, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.getLocked(tenant, key, s.o.Now())
	return v, ok, nil
}

// GetMany returns what tenant stored under each of keys that has a value
// that has not expired, taking the lock once per manyUnderLock keys: a
// long transcript's lookups do not hold other requests' for long.
func (s *QuotaStore) GetMany(_ context.Context, tenant string, keys []string) (map[string]string, error) {
	found := map[string]string{}
	for batch := range slices.Chunk(keys, manyUnderLock) {
		s.mu.Lock()
		now := s.o.Now()
		for _, k := range batch {
			if v, ok := s.getLocked(tenant, k, now); ok {
				found[k] = v
			}
		}
		s.mu.Unlock()
	}
	return found, nil
}

// manyUnderLock bounds the keys GetMany reads under one hold of the lock.
const manyUnderLock = 256

// getLocked returns tenant's unexpired value under key, removing an
// expired one.
func (s *QuotaStore) getLocked(tenant, key string, now time.Time) (string, bool) {
	t := s.tenants[tenant]
	if t == nil {
		return "", false
	}
	e, ok := t.m[key]
	if !ok {
		return "", false
	}
	v := e.Value.(*quotaEntry)
	if now.After(v.expires) {
		s.removeLocked(tenant, t, e)
		return "", false
	}
	t.ll.MoveToFront(e)
	return v.value, true
}

// Put stores v under tenant's key, evicting as the type's doc says.
func (s *QuotaStore) Put(_ context.Context, tenant, key, v string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.putLocked(tenant, key, v)
	return nil
}

// PutMany stores each of entries under tenant, under one lock.
func (s *QuotaStore) PutMany(_ context.Context, tenant string, entries map[string]string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, v := range entries {
		s.putLocked(tenant, k, v)
	}
	return nil
}

// putLocked stores v under tenant's key, evicting as the type's doc says.
func (s *QuotaStore) putLocked(tenant, key, v string) {
	size := int64(len(key)+len(v)) + entryOverhead
	t := s.tenants[tenant]
	if t == nil {
		t = &quotaTenant{ll: list.New(), m: map[string]*list.Element{}}
		s.tenants[tenant] = t
	}
	if e, ok := t.m[key]; ok {
		s.removeLocked(tenant, t, e)
	}
	if size > s.o.TenantBytes || size > s.o.MaxBytes {
		s.dropIfEmptyLocked(tenant, t)
		return
	}
	for t.bytes+size > s.o.TenantBytes || t.ll.Len()+1 > s.o.TenantEntries {
		s.removeLocked(tenant, t, t.ll.Back())
	}
	for s.bytes+size > s.o.MaxBytes || s.entries+1 > s.o.MaxEntries {
		name, big := s.largestLocked()
		s.removeLocked(name, big, big.ll.Back())
	}
	if s.tenants[tenant] == nil { // evicted whole by the global bound
		s.tenants[tenant] = t
	}
	t.m[key] = t.ll.PushFront(&quotaEntry{key: key, value: v, size: size, expires: s.o.Now().Add(s.o.TTL)})
	t.bytes += size
	s.bytes += size
	s.entries++
}

// Delete removes tenant's entry under key; it reports whether there was
// one.
func (s *QuotaStore) Delete(_ context.Context, tenant, key string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.tenants[tenant]
	if t == nil {
		return false, nil
	}
	e, ok := t.m[key]
	if ok {
		s.removeLocked(tenant, t, e)
	}
	return ok, nil
}

// Usage returns the bytes and entries held, in all and by tenant.
func (s *QuotaStore) Usage() (bytes int64, entries int, byTenant map[string]int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	byTenant = map[string]int64{}
	for name, t := range s.tenants {
		byTenant[name] = t.bytes
	}
	return s.bytes, s.entries, byTenant
}

// largestLocked returns the tenant holding the most bytes (the store is
// not empty when it is called). Tenants are client keys, a configured and
// small set.
func (s *QuotaStore) largestLocked() (string, *quotaTenant) {
	var name string
	var big *quotaTenant
	for n, t := range s.tenants {
		if t.ll.Len() > 0 && (big == nil || t.bytes > big.bytes) {
			name, big = n, t
		}
	}
	return name, big
}

func (s *QuotaStore) removeLocked(tenant string, t *quotaTenant, e *list.Element) {
	v := e.Value.(*quotaEntry)
	t.ll.Remove(e)
	delete(t.m, v.key)
	t.bytes -= v.size
	s.bytes -= v.size
	s.entries--
	s.dropIfEmptyLocked(tenant, t)
}

func (s *QuotaStore) dropIfEmptyLocked(tenant string, t *quotaTenant) {
	if t.ll.Len() == 0 {
		delete(s.tenants, tenant)
	}
}
