package main

import (
	"context"
	"fmt"

	"github.com/gatehouse/gatehouse/internal/config"
	"github.com/gatehouse/gatehouse/internal/obs"
	"github.com/gatehouse/gatehouse/migrations"
)

func runMigrate(ctx context.Context, e env, args []string) error {
	fs, cfgPath := newFlags("migrate", e)
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg, err := config.Load(*cfgPath, true, e.getenv)
	if err != nil {
		return err
	}
	if err := cfg.RequireDatabase(); err != nil {
		return err
	}
	log := obs.NewLogger(e.stderr, cfg.LogLevel)
	n, err := migrations.UpLogged(ctx, cfg.DatabaseURL, log)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "migrations applied: %d\n", n)
	return nil
}
