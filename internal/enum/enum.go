// Package enum parses settings whose value is one of a few names. A
// setting such as a repair mode, a reasoning format or an upstream
// protocol is a small integer type of the package that acts on it, whose
// i-th name is value i: that package keeps the one list of names, parses
// configured names with Parse, and answers what the names are (its Names
// method) for validation and documentation alike. This package imports
// nothing of the project's: every package with a setting may use it.
package enum

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Error is a configured name that is not one of a setting's names.
type Error struct {
	Names []string
	Got   string
}

func (e *Error) Error() string {
	quoted := make([]string, 0, len(e.Names))
	for _, n := range e.Names {
		if n != "" {
			quoted = append(quoted, n)
		}
	}
	list := strings.Join(quoted, ", ")
	if i := strings.LastIndex(list, ", "); i >= 0 {
		list = list[:i] + " or " + list[i+2:]
	}
	return fmt.Sprintf("must be %s, got %q", list, clip(e.Got))
}

// Parse returns the value named s among names (the i-th name is value
// i), or an *Error listing them.
func Parse[T ~uint8](names []string, s string) (T, error) {
	for i, n := range names {
		if n == s {
			return T(i), nil
		}
	}
	return 0, &Error{Names: names, Got: s}
}

// maxEcho bounds how much of a name an error repeats.
const maxEcho = 256

func clip(s string) string {
	if len(s) <= maxEcho {
		return s
	}
	cut := maxEcho
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s…(%d bytes)", s[:cut], len(s))
}
