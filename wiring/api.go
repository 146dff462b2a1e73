package wiring

import (
	"github.com/gatehouse/gatehouse/api"
	"github.com/gatehouse/gatehouse/internal/config"
)

// APIProviders are c's providers as the API reads them.
func APIProviders(c *config.Config) map[string]api.Provider {
	out := make(map[string]api.Provider, len(c.Providers))
	for name, p := range c.Providers {
		if p != nil {
			out[name] = api.Provider{OwnerPath: p.OwnerPath, OwnerIssuer: p.OwnerIssuer, SearchIndexed: p.Search == config.SearchIndexed}
		}
	}
	return out
}
