package policy

import (
	"testing"
	"time"
)

// The memory store is bounded in size and time.
func TestMemoryStore(t *testing.T) {
	now := time.Unix(0, 0)
	s := NewMemoryStore(2, time.Minute, func() time.Time { return now })
	s.Put("a", "ra")
	s.Put("b", "rb")
	s.Get("a") // a is now the most recent
	s.Put("c", "rc")
	if _, ok := s.Get("b"); ok || s.Len() != 2 {
		t.Errorf("b should have been evicted; len %d", s.Len())
	}
	if v, ok := s.Get("a"); !ok || v != "ra" {
		t.Errorf("a = %q %v", v, ok)
	}
	now = now.Add(2 * time.Minute)
	if _, ok := s.Get("c"); ok {
		t.Error("an expired entry was returned")
	}
	if ContentKey("x") == ContentKey("y") || ContentKey("x") != ContentKey("x") {
		t.Error("content keys")
	}
}
