// Package migrations holds gatehouse's numbered SQL migrations, embedded in
// the binary and applied with goose: 00001_baseline.sql is the schema of
// release 0.1.0, and every later migration takes the next number. goose
// refuses a migration numbered below a version a database already has
// (no out-of-order application): two branches that both add one must
// renumber when the second lands.
package migrations

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
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
	return applyFS(ctx, dbURL, files, log)
}

// UpFS applies the pending migrations of fsys (*.sql at its root) as Up
// does the embedded ones: for tests of the rules migrations follow.
func UpFS(ctx context.Context, dbURL string, fsys fs.FS) error {
	_, err := applyFS(ctx, dbURL, fsys, nil)
	return err
}

func applyFS(ctx context.Context, dbURL string, fsys fs.FS, log *slog.Logger) (int, error) {
	db, err := sql.Open("pgx", dbURL)
	if err != nil {
		return 0, fmt.Errorf("open database: %w", err)
	}
	defer db.Close()
	p, err := goose.NewProvider(goose.DialectPostgres, db, fsys, goose.WithLogger(goose.NopLogger()))
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
