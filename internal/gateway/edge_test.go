package gateway

import (
	"errors"
	"testing"

	"github.com/toolgate/toolgate/internal/upstream"
	"github.com/toolgate/toolgate/internal/wire"
)

// A request that moves on from deployment to deployment and route to
// route ends with the upstream's last failure, noting each route that
// could not take the request in its protocol; with a refusal only when no
// upstream was tried (docs/spec.md §6).
func TestMoveOn(t *testing.T) {
	fail529 := &upstream.Error{Upstream: "a", Kind: upstream.KindStatus, Status: 529}
	fail500 := &upstream.Error{Upstream: "b", Kind: upstream.KindStatus, Status: 500}
	refuse := func(route string) *RefusedError {
		return &RefusedError{Route: route, Upstream: "u", Err: &wire.ParamError{Param: "tools.0.type", Msg: "m"}}
	}
	r1, r2 := refuse("r1"), refuse("r2")
	for _, tc := range []struct {
		name      string
		steps     []error
		last      error
		refusedBy []string
	}{
		{"failures only: the last", []error{fail529, fail500}, fail500, nil},
		{"a failure, then a refusal", []error{fail529, r1}, fail529, []string{"r1"}},
		{"refusals only: the first", []error{r1, r2}, r1, nil},
		{"a refusal, then a failure", []error{r1, fail500}, fail500, []string{"r1"}},
		{"a failure, refusals, a failure", []error{fail529, r1, fail500, r2}, fail500, []string{"r1", "r2"}},
		{"nested: a route's deployments, then a fallback's refusal", []error{moveOn(fail529, r1), r2}, fail529, []string{"r1", "r2"}},
	} {
		var got error
		for _, err := range tc.steps {
			got = moveOn(got, err)
		}
		var routes []string
		last := got
		if p, ok := got.(*PassedOverError); ok {
			last = p.Err
			for _, r := range p.Refused {
				routes = append(routes, r.Route)
			}
		}
		if !errors.Is(last, tc.last) || len(routes) != len(tc.refusedBy) {
			t.Errorf("%s: %v (passed over %v)", tc.name, got, routes)
			continue
		}
		for k := range routes {
			if routes[k] != tc.refusedBy[k] {
				t.Errorf("%s: passed over %v, want %v", tc.name, routes, tc.refusedBy)
			}
		}
	}
}
