package main

import (
	"context"
	"fmt"

	"github.com/go-chi/chi/v5"

	"github.com/gatehouse/gatehouse/api"
	"github.com/gatehouse/gatehouse/auth"
	"github.com/gatehouse/gatehouse/auth/bearer"
)

// mountAPI mounts /api/v1 when bearer tokens are configured (api.audience
// and api.issuers) or browser login is (auth.issuer); otherwise it does
// nothing.
func mountAPI(ctx context.Context, b *base, r chi.Router) error {
	ac := b.cfg.API
	cfg := api.Config{
		Pool: b.pool, Providers: b.cfg.Providers, Operators: ac.Operators, OperatorRole: ac.OperatorRole,
		Logger: b.log.With("component", "api"), Registerer: b.reg,
	}
	if ac.BearerEnabled() {
		bc := bearer.Config{
			Audience: ac.Audience, Skew: ac.Skew, Compat: ac.TokenType == "compat",
			IDTokenAudiences: append([]string(nil), ac.IDTokenAudiences...),
			JWKSMaxAge:       ac.JWKSMaxAge, JWKSMinRefetch: ac.JWKSMinRefetch,
			Logger: b.log.With("component", "bearer"), Registerer: b.reg,
		}
		if b.cfg.Auth.ClientID != "" {
			bc.IDTokenAudiences = append(bc.IDTokenAudiences, b.cfg.Auth.ClientID)
		}
		for _, is := range ac.Issuers {
			bc.Issuers = append(bc.Issuers, bearer.Issuer{
				Issuer: is.Issuer, JWKSURL: is.JWKSURL, Algorithms: is.Algorithms,
				RolesClaim: is.RolesClaim, ScopeAliases: is.ScopeAliases,
				Introspection: bearer.Introspection{
					URL: is.Introspection.URL, ClientID: is.Introspection.ClientID,
					ClientSecret: is.Introspection.Secret(),
				},
			})
		}
		v, err := bearer.New(bc)
		if err != nil {
			return fmt.Errorf("api: %w", err)
		}
		cfg.Verifier = v
	}
	if b.cfg.Auth.Issuer != "" {
		st, err := auth.NewStore(auth.StoreConfig{Pool: b.pool, Auth: b.cfg.Auth, Logger: b.log.With("component", "api-sessions")})
		if err != nil {
			return fmt.Errorf("api: session store: %w", err)
		}
		cfg.Sessions = api.AuthSessions(st)
	}
	if cfg.Verifier == nil && cfg.Sessions == nil {
		return nil
	}
	srv, err := api.New(cfg)
	if err != nil {
		return err
	}
	srv.Routes(r)
	b.log.Info("api mounted", "prefix", api.Prefix, "bearer", cfg.Verifier != nil, "sessions", cfg.Sessions != nil)
	return nil
}
