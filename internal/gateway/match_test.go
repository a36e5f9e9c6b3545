package gateway

import (
	"testing"

	"github.com/toolgate/toolgate/internal/config"
)

// A price is found by the upstream model's exact name, else by the
// longest pattern that matches it (the most specific).
func TestPricesOf(t *testing.T) {
	cached := 1.25
	prices := pricesOf(&config.Config{Pricing: map[string]config.Price{
		"gpt-4o":   {Input: 2.5, CachedInput: &cached, Output: 10},
		"gpt-*":    {Input: 1, Output: 1},
		"gpt-4o-*": {Input: 3, Output: 12},
	}})
	for model, want := range map[string]string{"gpt-4o": "gpt-4o", "gpt-4o-mini": "gpt-4o-*", "gpt-5": "gpt-*", "claude": ""} {
		if _, name, ok := prices.find(model); name != want || ok != (want != "") {
			t.Errorf("find(%q) = %q %v, want %q", model, name, ok, want)
		}
	}
	if pr, _, _ := prices.find("gpt-4o"); pr.CachedInput != 1.25 || pr.Output != 10 {
		t.Errorf("gpt-4o's price %+v", pr)
	}
}

// Routes are found by the client's exact model name, then by the first
// pattern in the file's order.
func TestRoutesOf(t *testing.T) {
	cfg := &config.Config{Routes: []config.Route{{Name: "a", Model: "gpt-*"}, {Name: "b", Model: "gpt-4o"}, {Name: "c", Model: "*"}}}
	plans := map[string]*plan{"a": {name: "a"}, "b": {name: "b"}, "c": {name: "c"}}
	routes := routesOf(cfg, plans)
	for model, want := range map[string]string{"gpt-4o": "b", "gpt-5": "a", "claude": "c"} {
		if p, _, ok := routes.find(model); !ok || p.name != want {
			t.Errorf("find(%q) = %v, want route %s", model, p, want)
		}
	}
}
