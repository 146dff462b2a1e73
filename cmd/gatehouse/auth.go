package main

import (
	"context"

	"github.com/go-chi/chi/v5"
)

// mountAuth mounts login, sessions and the API when auth is configured.
func mountAuth(ctx context.Context, b *base, r chi.Router) error {
	return nil
}
