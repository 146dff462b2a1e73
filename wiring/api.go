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

// Operators are api.operators, the (issuer, subject) pairs that operate
// gatehouse.
func Operators(c *config.Config) []api.User {
	out := make([]api.User, 0, len(c.API.Operators))
	for _, op := range c.API.Operators {
		out = append(out, api.User{Issuer: op.Issuer, Subject: op.Subject})
	}
	return out
}
