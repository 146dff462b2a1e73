// Package inboxtest holds what the tests of the rooms beside ingest/inbox
// (ingest/admin, ingest/upkeep) share: a Writer on a fresh test database,
// a minimal Record, and small SQL helpers. Tests only.
package inboxtest

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gatehouse/gatehouse/ingest/inbox"
	"github.com/gatehouse/gatehouse/internal/testenv"
)

// NewWriter returns a pool on a fresh test database (at most maxConns
// connections when > 0) and a one-worker Writer on it, both closed at the
// end of the test.
func NewWriter(t *testing.T, maxConns int32) (*pgxpool.Pool, *inbox.Writer) {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(testenv.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	if maxConns > 0 {
		cfg.MaxConns = maxConns
	}
	base, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(base.Close)
	w, err := inbox.NewWriter(base, 1, 64)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	return base, w
}

// Record is a minimal Record of provider "p" and event id.
func Record(id string, life time.Duration) inbox.Record {
	now := time.Now()
	return inbox.Record{Provider: "p", EventID: id, Type: "t", CreatedAt: &now, Payload: []byte(`{"id":"` + id + `","customer":"cus_1"}`),
		SecretID: "s", AggregateID: "a", Topic: "topic", KeyLifetime: life}
}

// WriteOne writes r, failing the test on an error.
func WriteOne(t *testing.T, w *inbox.Writer, r inbox.Record) inbox.Outcome {
	t.Helper()
	out, err := w.Write(context.Background(), r)
	if err != nil {
		t.Fatalf("write %s: %v", r.EventID, err)
	}
	return out
}

// MustExec runs sql, failing the test on an error.
func MustExec(t *testing.T, pool *pgxpool.Pool, sql string, args ...any) {
	t.Helper()
	if _, err := pool.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// Count is the integer sql selects.
func Count(t *testing.T, pool *pgxpool.Pool, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}
