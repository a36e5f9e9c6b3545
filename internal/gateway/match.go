package gateway

import (
	"maps"
	"slices"
	"strings"

	"github.com/toolgate/toolgate/internal/budget"
	"github.com/toolgate/toolgate/internal/config"
)

// byModel finds what a model name maps to, as routes and prices are
// matched: its exact name first, then the patterns (* matches any run of
// characters) in their order. It is built at load and only read after.
type byModel[T any] struct {
	exact    map[string]T
	patterns []pattern[T]
}

type pattern[T any] struct {
	glob string
	v    T
}

// add maps name, a model name or a pattern, to v; patterns are tried in
// the order they were added.
func (m *byModel[T]) add(name string, v T) {
	if strings.Contains(name, "*") {
		m.patterns = append(m.patterns, pattern[T]{name, v})
		return
	}
	if m.exact == nil {
		m.exact = map[string]T{}
	}
	m.exact[name] = v
}

// find returns the value for model and the name or pattern that gave it.
func (m *byModel[T]) find(model string) (T, string, bool) {
	if v, ok := m.exact[model]; ok {
		return v, model, true
	}
	for _, p := range m.patterns {
		if config.GlobMatch(p.glob, model) {
			return p.v, p.glob, true
		}
	}
	var zero T
	return zero, "", false
}

// routesOf maps the client's model names to the routes' plans, patterns
// in the file's order.
func routesOf(cfg *config.Config, plans map[string]*plan) byModel[*plan] {
	var m byModel[*plan]
	for i := range cfg.Routes {
		m.add(cfg.Routes[i].Model, plans[cfg.Routes[i].Name])
	}
	return m
}

// pricesOf maps upstream model names to their prices in the budget's
// terms: an exact name, else the longest pattern (the most specific),
// then in name order.
func pricesOf(cfg *config.Config) byModel[budget.Price] {
	var m byModel[budget.Price]
	names := slices.Sorted(maps.Keys(cfg.Pricing))
	slices.SortStableFunc(names, func(a, b string) int { return len(b) - len(a) })
	for _, name := range names {
		c := cfg.Pricing[name]
		pr := budget.Price{Input: c.Input, CachedInput: c.Input, Output: c.Output}
		if c.CachedInput != nil {
			pr.CachedInput = *c.CachedInput
		}
		m.add(name, pr)
	}
	return m
}
