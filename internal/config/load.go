package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"strconv"
	"strings"

	"github.com/toolgate/toolgate/configs"
	"go.yaml.in/yaml/v3"
)

// Load reads the config file at path, or the embedded default config when
// path is empty, and returns the validated, resolved configuration. getenv
// supplies `${NAME}` values (os.Getenv in production, a map in tests).
func Load(path string, getenv func(string) string) (*Config, error) {
	data := configs.Default
	if path != "" {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("config: %w", err)
		}
		data = b
	}
	c, err := Parse(data, getenv)
	if err != nil && path != "" {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, err
}

// Parse is Load for config bytes.
func Parse(data []byte, getenv func(string) string) (*Config, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	// Every problem of the file in one run: the variables not set, the
	// keys and values the types refuse (each taken out, so the rest
	// decodes), then what the settings mean together — but not again
	// about a field already reported.
	var found []string
	expandNode(&root, "", getenv, &found)
	var shaped problems
	if len(root.Content) > 0 {
		shape(root.Content[0], reflect.TypeFor[Config](), "", &shaped)
	}
	found = append(found, shaped...)
	expanded, err := yaml.Marshal(&root)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	var c Config
	dec := yaml.NewDecoder(bytes.NewReader(expanded))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil && !errors.Is(err, io.EOF) {
		return nil, &Error{Problems: append(found, strings.TrimPrefix(err.Error(), "yaml: "))}
	}
	c.applyDefaults()
	if err := c.check(); err != nil {
		var e *Error
		if !errors.As(err, &e) {
			return nil, err
		}
		before := len(found) // the variables' and the types' problems
		for _, s := range e.Problems {
			if !reported(found[:before], s) {
				found = append(found, s)
			}
		}
	}
	if len(found) > 0 {
		return nil, &Error{Problems: found}
	}
	return &c, nil
}

// reported says whether a problem's field, or one that holds it, has a
// problem in list already.
func reported(list []string, problem string) bool {
	path, _, _ := strings.Cut(problem, ": ")
	for _, s := range list {
		at, _, _ := strings.Cut(s, ": ")
		if at == path || strings.HasPrefix(path, at+".") || strings.HasPrefix(path, at+"[") {
			return true
		}
	}
	return false
}

// expandNode replaces ${NAME} in every scalar value below n, recording a
// problem (with the field path) for each variable that is not set.
func expandNode(n *yaml.Node, path string, getenv func(string) string, problems *[]string) {
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			expandNode(c, path, getenv, problems)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			key := n.Content[i].Value
			p := key
			if path != "" {
				p = path + "." + key
			}
			expandNode(n.Content[i+1], p, getenv, problems)
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			expandNode(c, path+"["+strconv.Itoa(i)+"]", getenv, problems)
		}
	case yaml.ScalarNode:
		if !strings.Contains(n.Value, "${") {
			return
		}
		v, missing := expand(n.Value, getenv)
		for _, name := range missing {
			if name == "" {
				*problems = append(*problems, orFile(path)+": ${} names no environment variable (write $${ for a literal ${)")
				continue
			}
			*problems = append(*problems, fmt.Sprintf("%s: environment variable %s is not set", orFile(path), name))
		}
		n.Value = v
		if n.Tag != "!!str" {
			n.Tag = "" // let the expanded text resolve as what it now looks like
		}
	}
}

// expand substitutes ${NAME} references (${NAME:-default}: default when
// NAME is not set); $${ is a literal ${.
func expand(s string, getenv func(string) string) (string, []string) {
	var b strings.Builder
	var missing []string
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), missing
		}
		if i > 0 && s[i-1] == '$' {
			b.WriteString(s[:i-1])
			b.WriteString("${")
			s = s[i+2:]
			continue
		}
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			b.WriteString(s)
			return b.String(), missing
		}
		name := s[i+2 : i+j]
		b.WriteString(s[:i])
		// ${NAME:-default}: the default when NAME is not set, as in sh.
		name, def, optional := strings.Cut(name, ":-")
		v := getenv(name)
		switch {
		case v == "" && optional:
			v = def
		case v == "":
			missing = append(missing, name)
		}
		b.WriteString(v)
		s = s[i+j+1:]
	}
}
