package upkeep

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gatehouse/gatehouse/ingest/inbox"
	"github.com/gatehouse/gatehouse/ingest/inbox/inboxtest"
	"github.com/gatehouse/gatehouse/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// The helpers of ingest/inbox's tests, shared through inboxtest.

func newTestWriter(t *testing.T, maxConns int32) (*pgxpool.Pool, *inbox.Writer) {
	return inboxtest.NewWriter(t, maxConns)
}

func rec(id string, life time.Duration) inbox.Record { return inboxtest.Record(id, life) }

func writeOne(t *testing.T, w *inbox.Writer, r inbox.Record) inbox.Outcome {
	t.Helper()
	return inboxtest.WriteOne(t, w, r)
}

func mustExec(t *testing.T, pool *pgxpool.Pool, sql string, args ...any) {
	t.Helper()
	inboxtest.MustExec(t, pool, sql, args...)
}

func count(t *testing.T, pool *pgxpool.Pool, sql string, args ...any) int {
	t.Helper()
	return inboxtest.Count(t, pool, sql, args...)
}
