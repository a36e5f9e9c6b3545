package wire

import (
	"fmt"
	"strings"
)

// A setting whose value is one of a few names (a repair mode, a reasoning
// format, an upstream protocol) is a small integer type of the package that
// acts on it, whose i-th name is value i: that package keeps the one list
// of names, parses configured names with ParseEnum, and answers what the
// names are (its Names method) for validation and documentation alike.

// EnumError is a configured name that is not one of a setting's names.
type EnumError struct {
	Names []string
	Got   string
}

func (e *EnumError) Error() string {
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
	return fmt.Sprintf("must be %s, got %q", list, Clip(e.Got))
}

// ParseEnum returns the value named s among names (the i-th name is value
// i), or an *EnumError listing them.
func ParseEnum[T ~uint8](names []string, s string) (T, error) {
	for i, n := range names {
		if n == s {
			return T(i), nil
		}
	}
	return 0, &EnumError{Names: names, Got: s}
}
