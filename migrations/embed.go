// Package migrations holds gatehouse's numbered SQL migrations, embedded in
// the binary and applied with goose.
package migrations

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"log/slog"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx" for goose
	"github.com/pressly/goose/v3"
)

//go:embed *.sql
var files embed.FS

// Up applies every pending migration to the database at dbURL.
func Up(ctx context.Context, dbURL string) error {
	_, err := apply(ctx, dbURL, nil)
	return err
}

// UpLogged is Up that logs each applied migration and returns how many ran.
func UpLogged(ctx context.Context, dbURL string, log *slog.Logger) (int, error) {
	return apply(ctx, dbURL, log)
}

func apply(ctx context.Context, dbURL string, log *slog.Logger) (int, error) {
	db, err := sql.Open("pgx", dbURL)
	if err != nil {
		return 0, fmt.Errorf("open database: %w", err)
	}
	defer db.Close()
	p, err := goose.NewProvider(goose.DialectPostgres, db, files, goose.WithLogger(goose.NopLogger()),
		// Migrations written on parallel branches may land with a number below
		// one a database already has; they are applied, not refused.
		goose.WithAllowOutofOrder(true))
	if err != nil {
		return 0, fmt.Errorf("goose provider: %w", err)
	}
	res, err := p.Up(ctx)
	if err != nil {
		return 0, fmt.Errorf("apply migrations: %w", err)
	}
	for _, r := range res {
		if log != nil {
			log.Info("migration applied", "version", r.Source.Version, "file", r.Source.Path, "duration", r.Duration)
		}
	}
	return len(res), nil
}

// UpTo applies the pending migrations up to and including version (tests
// of an upgrade from an older schema).
func UpTo(ctx context.Context, dbURL string, version int64) error {
	db, err := sql.Open("pgx", dbURL)
	if err != nil {
		return fmt.Errorf("open database: %w", err)
	}
	defer db.Close()
	p, err := goose.NewProvider(goose.DialectPostgres, db, files, goose.WithLogger(goose.NopLogger()), goose.WithAllowOutofOrder(true))
	if err != nil {
		return fmt.Errorf("goose provider: %w", err)
	}
	if _, err := p.UpTo(ctx, version); err != nil {
		return fmt.Errorf("apply migrations up to %d: %w", version, err)
	}
	return nil
}
