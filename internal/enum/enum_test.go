package enum

import (
	"errors"
	"strings"
	"testing"
)

type color uint8

// A name is its index in the list; any other is an error listing the
// names (an empty one, a value with no name, left out), the name clipped.
func TestParse(t *testing.T) {
	names := []string{"", "red", "green", "blue"}
	if c, err := Parse[color](names, "green"); err != nil || c != 2 {
		t.Fatalf("green: %v %v", c, err)
	}
	_, err := Parse[color](names, "mauve")
	var e *Error
	if !errors.As(err, &e) || err.Error() != `must be red, green or blue, got "mauve"` {
		t.Fatalf("mauve: %v", err)
	}
	_, err = Parse[color](names, strings.Repeat("é", 500))
	if err == nil || len(err.Error()) > 400 || !strings.Contains(err.Error(), "(1000 bytes)") {
		t.Fatalf("a long name is not clipped: %d bytes", len(err.Error()))
	}
}
