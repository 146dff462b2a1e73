package main

import (
	"context"

	"github.com/go-chi/chi/v5"

	"github.com/gatehouse/gatehouse/auth"
)

// mountAuth mounts browser login, the account pages, back-channel logout and
// the operator API when auth.issuer is configured, and starts the loop that
// revokes ended sessions' tokens at the OP (it stops with ctx).
func mountAuth(ctx context.Context, b *base, r chi.Router) error {
	if !b.cfg.Auth.Enabled() {
		return nil
	}
	store, err := auth.NewStore(auth.StoreConfig{Pool: b.pool, Auth: b.cfg.Auth, Logger: b.log})
	if err != nil {
		return err
	}
	svc, err := auth.New(ctx, auth.Config{Auth: b.cfg.Auth, Store: store, Logger: b.log, Registerer: b.reg})
	if err != nil {
		return err
	}
	svc.Routes(r)
	go func() {
		if err := svc.Run(ctx); err != nil {
			b.log.Error("auth revocation loop stopped", "err", err)
		}
	}()
	return nil
}
