package auth

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"testing"

	"github.com/toolgate/toolgate/internal/config"
)

func hash(k string) string { h := sha256.Sum256([]byte(k)); return hex.EncodeToString(h[:]) }

// A key is found by any of the three headers clients send it in; a missing
// or unknown key is refused with its kind; a key's model list is applied.
func TestCheck(t *testing.T) {
	ks := New([]config.Key{{Name: "a", SHA256: hash("sk-a"), Models: []string{"sim-*"}}, {Name: "b", SHA256: hash("sk-b")}})
	for _, tc := range []struct {
		header, value string
		want          string
		kind          Kind
	}{
		{"Authorization", "Bearer sk-a", "a", 0},
		{"Api-Key", "sk-b", "b", 0},
		{"X-Api-Key", "sk-a", "a", 0},
		{"", "", "", Missing},
		{"Authorization", "Bearer sk-c", "", Invalid},
	} {
		h := http.Header{}
		if tc.header != "" {
			h.Set(tc.header, tc.value)
		}
		k, err := ks.Check(h)
		if tc.want != "" {
			if err != nil || k.Name != tc.want {
				t.Errorf("%s %s: %v %v", tc.header, tc.value, k, err)
			}
			continue
		}
		if e, ok := errors.AsType[*Error](err); !ok || e.Kind != tc.kind {
			t.Errorf("%s %s: err = %v", tc.header, tc.value, err)
		}
	}
	a, _ := ks.Check(http.Header{"Authorization": {"Bearer sk-a"}})
	if Allow(a, "sim-x") != nil || Allow(nil, "gpt-4o") != nil {
		t.Error("an allowed model refused")
	}
	if e, ok := errors.AsType[*Error](Allow(a, "gpt-4o")); !ok || e.Kind != ModelNotAllowed {
		t.Errorf("a model outside the list: %v", e)
	}
	if k, err := (Keys{}).Check(http.Header{}); k != nil || err != nil {
		t.Errorf("an open gateway refused: %v", err)
	}
}
