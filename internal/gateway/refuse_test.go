package gateway

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/observe"
)

// A refusal that leaves the body unread is written even once the
// request's context has ended: leaveBody's read deadline ends it (net/http
// cancels the context when its background read of the connection fails),
// and under load that often comes first. Unwritten, the refusal would
// reach the client as an empty 200. A request whose client went away is
// not answered.
func TestRefusalAfterLeaveBody(t *testing.T) {
	g := &Gateway{}
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	refused := &auth.Error{Kind: auth.Missing, Msg: "no key"}

	w := httptest.NewRecorder()
	leaveBody(w)
	rec := &observe.Record{}
	g.fail(w, httptest.NewRequest(http.MethodGet, "/v1/models", nil).WithContext(ended), rec, chatAPI{}, refused)
	if w.Code != http.StatusUnauthorized || w.Body.Len() == 0 || rec.Status != http.StatusUnauthorized {
		t.Errorf("refusal after leaveBody: status %d, %d bytes, recorded %d; want 401 written", w.Code, w.Body.Len(), rec.Status)
	}

	gone := httptest.NewRecorder()
	rec = &observe.Record{}
	g.fail(gone, httptest.NewRequest(http.MethodGet, "/v1/models", nil).WithContext(ended), rec, chatAPI{}, refused)
	if gone.Body.Len() != 0 || rec.Status != 499 || !rec.ClientGone {
		t.Errorf("client gone: %d bytes written, recorded %d (gone %v); want nothing written, 499", gone.Body.Len(), rec.Status, rec.ClientGone)
	}
}
