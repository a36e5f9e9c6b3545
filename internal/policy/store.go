package policy

import (
	"container/list"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"sync"
	"time"
)

// ReasoningStore remembers assistant turns' reasoning for upstreams that
// need it sent back (DeepSeek's thinking mode, QUIRKS C15), keyed by the
// tool-call ids the turn made, or by a hash of its content when it made
// none. An error is the store's failure (Redis unreachable), never a miss.
// Implementations are safe for concurrent use.
type ReasoningStore interface {
	Get(ctx context.Context, key string) (string, bool, error)
	Put(ctx context.Context, key, reasoning string) error
}

// ContentKey is the store key of a turn that made no call: a hash of its
// text content.
func ContentKey(content string) string {
	h := sha256.Sum256([]byte(content))
	return "content:" + hex.EncodeToString(h[:16])
}

// MemoryStore is a ReasoningStore in memory: at most Max entries (the
// least recently used go first) kept for at most TTL.
type MemoryStore struct {
	mu  sync.Mutex
	max int
	ttl time.Duration
	now func() time.Time
	ll  *list.List
	m   map[string]*list.Element
}

type stored struct {
	key       string
	reasoning string
	expires   time.Time
}

// NewMemoryStore returns a store of at most max entries (0 means 10000)
// kept for ttl (0 means 24h). now is the clock (nil means time.Now).
func NewMemoryStore(max int, ttl time.Duration, now func() time.Time) *MemoryStore {
	if max <= 0 {
		max = 10000
	}
	if ttl <= 0 {
		ttl = 24 * time.Hour
	}
	if now == nil {
		now = time.Now
	}
	return &MemoryStore{max: max, ttl: ttl, now: now, ll: list.New(), m: map[string]*list.Element{}}
}

// Get returns the reasoning stored under key, if it has not expired.
func (s *MemoryStore) Get(_ context.Context, key string) (string, bool, error) {
	v, ok := s.get(key)
	return v, ok, nil
}

func (s *MemoryStore) get(key string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.m[key]
	if !ok {
		return "", false
	}
	v := e.Value.(*stored)
	if s.now().After(v.expires) {
		s.ll.Remove(e)
		delete(s.m, key)
		return "", false
	}
	s.ll.MoveToFront(e)
	return v.reasoning, true
}

// Put stores reasoning under key, evicting the least recently used entry
// when full.
func (s *MemoryStore) Put(_ context.Context, key, reasoning string) error {
	s.put(key, reasoning)
	return nil
}

func (s *MemoryStore) put(key, reasoning string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.m[key]; ok {
		e.Value = &stored{key: key, reasoning: reasoning, expires: s.now().Add(s.ttl)}
		s.ll.MoveToFront(e)
		return
	}
	s.m[key] = s.ll.PushFront(&stored{key: key, reasoning: reasoning, expires: s.now().Add(s.ttl)})
	if s.ll.Len() > s.max {
		old := s.ll.Back()
		s.ll.Remove(old)
		delete(s.m, old.Value.(*stored).key)
	}
}

// Delete removes the entry under key; it reports whether there was one.
func (s *MemoryStore) Delete(_ context.Context, key string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.m[key]
	if ok {
		s.ll.Remove(e)
		delete(s.m, key)
	}
	return ok, nil
}

// Len returns the number of entries held.
func (s *MemoryStore) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ll.Len()
}
