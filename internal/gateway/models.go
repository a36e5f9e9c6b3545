package gateway

import (
	"encoding/json"
	"net/http"

	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/config"
	"github.com/toolgate/toolgate/internal/observe"
	"github.com/toolgate/toolgate/internal/wire"
)

// modelLists are GET /v1/models' bodies, encoded once: one for an open
// gateway, one per client key.
type modelLists struct {
	all   []byte
	byKey map[string][]byte // by key name
}

func newModelLists(cfg *config.Config, keys auth.Keys) modelLists {
	m := modelLists{all: modelList(cfg, nil), byKey: map[string][]byte{}}
	for _, k := range keys.All() {
		m.byKey[k.Name] = modelList(cfg, k.Key)
	}
	return m
}

func (g *Gateway) listModels(w http.ResponseWriter, r *http.Request, rec *observe.Record) error {
	key, err := g.checkKey(w, r)
	if err != nil {
		return err
	}
	list := g.models.all
	if key != nil {
		rec.Key = key.Name
		list = g.models.byKey[key.Name]
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(list)
	end(rec, ending{status: http.StatusOK, outcome: observe.OutcomeOK})
	return nil
}

// modelList is GET /v1/models' body for a key (nil: every route). A route
// is listed when the key may use its model as written; a pattern route
// the key may use only in part is listed by the key's own names and
// patterns that the route serves (a key limited to "sim-*" sees "sim-*",
// not the route's "*"). Each id is listed once, owned by the upstream of
// the route that serves it.
func modelList(cfg *config.Config, key *config.Key) []byte {
	type model struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Created int64  `json:"created"`
		OwnedBy string `json:"owned_by"`
	}
	list := struct {
		Object string  `json:"object"`
		Data   []model `json:"data"`
	}{Object: "list", Data: []model{}}
	var listed wire.Names
	add := func(id, upstream string) {
		if listed.Add(id) {
			list.Data = append(list.Data, model{ID: id, Object: "model", OwnedBy: upstream})
		}
	}
	for i := range cfg.Routes {
		r := &cfg.Routes[i]
		switch {
		case key == nil || key.Allows(r.Model):
			add(r.Model, r.Upstream)
		case r.IsPattern():
			for _, m := range key.Models {
				if served, ok := cfg.Match(m); ok && served == r {
					add(m, r.Upstream)
				}
			}
		}
	}
	b, _ := json.Marshal(list)
	return b
}
