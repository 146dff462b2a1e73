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
	// Only database_url is used: a provider's secret unset in this shell
	// does not stop a migration.
	cfg, err := config.LoadFor(*cfgPath, true, e.getenv, func(path string) bool { return path == "database_url" })
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
