package config

import (
	"fmt"

	"go.yaml.in/yaml/v3"
)

// Setting is a setting's value type, owned by the package that acts on it
// (repair.Mode, policy.Format, translate.Protocol, …): a small integer
// whose names that package lists once (Names) and parses (Parse).
type Setting[T any] interface {
	Names() []string
	Parse(name string) (T, error)
}

// Enum is a configured setting: its Name as written in the file (or
// defaulted), and its Value as the owning package parsed it at load. The
// rest of the gateway reads Value; a name the owner does not know is a
// load error naming the field and the names it takes.
type Enum[T Setting[T]] struct {
	Name  string
	Value T
}

// UnmarshalYAML reads the name; it is parsed once defaults are applied.
func (e *Enum[T]) UnmarshalYAML(n *yaml.Node) error { return n.Decode(&e.Name) }

// MarshalYAML writes the name.
func (e Enum[T]) MarshalYAML() (any, error) { return e.Name, nil }

// Names are the names the setting takes.
func (e Enum[T]) Names() []string {
	var zero T
	return zero.Names()
}

// parse parses the name into Value, reporting a problem at path.
func (e *Enum[T]) parse(p *problems, path string) {
	var zero T
	v, err := zero.Parse(e.Name)
	if err != nil {
		p.add(path, "%v", err)
		return
	}
	e.Value = v
}

// orDefault sets the name when none was written.
func (e *Enum[T]) orDefault(name string) {
	if e.Name == "" {
		e.Name = name
	}
}

// problems collects every problem of a configuration, each prefixed with
// its field path.
type problems []string

func (p *problems) add(path, format string, args ...any) {
	*p = append(*p, path+": "+fmt.Sprintf(format, args...))
}
