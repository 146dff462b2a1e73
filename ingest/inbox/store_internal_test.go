package inbox

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gatehouse/gatehouse/internal/testenv"
)

// newTestWriter returns a pool on a fresh test database (at most maxConns
// connections when > 0) and a one-worker Writer on it, both closed at the
// end of the test.
func newTestWriter(t *testing.T, maxConns int32) (*pgxpool.Pool, *Writer) {
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
	w, err := NewWriter(base, 1, 64)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	return base, w
}

// TestWriterStatementGetsTheGenericPlan checks that the Writer's statement
// is planned once: on a connection with PostgreSQL's default
// plan_cache_mode, batches of varying size get custom plans (the statement
// planned again per flush, at least the first five times on every
// connection), which is why the Writer uses its own pool with
// force_generic_plan.
func TestWriterStatementGetsTheGenericPlan(t *testing.T) {
	ctx := context.Background()
	base, w := newTestWriter(t, 1) // one connection: the plan counts below are its

	n := 0
	flushes := func(w *Writer) {
		for size := 1; size <= 8; size++ {
			batch := make([]*pending, size)
			now := time.Now()
			for i := range batch {
				n++
				id := fmt.Sprint("evt_", n)
				batch[i] = &pending{rec: Record{Provider: "p", EventID: id, Type: "t", CreatedAt: &now,
					Payload: []byte(`{"id":"` + id + `"}`), SecretID: "s", AggregateID: "a", Topic: "topic"}}
			}
			if err := w.exec(ctx, batch); err != nil {
				t.Fatal(err)
			}
		}
	}
	plans := func(pool *pgxpool.Pool) (generic, custom int64) {
		t.Helper()
		if err := pool.QueryRow(ctx, `SELECT coalesce(sum(generic_plans), 0), coalesce(sum(custom_plans), 0)
			FROM pg_prepared_statements WHERE statement LIKE '%INSERT INTO outbox%'`).Scan(&generic, &custom); err != nil {
			t.Fatal(err)
		}
		return generic, custom
	}

	flushes(w)
	if generic, custom := plans(w.pool); custom != 0 || generic < 8 {
		t.Errorf("Writer's connection: %d generic and %d custom plans for 8 flushes; want 8 generic, 0 custom", generic, custom)
	}
	// The same statement on a default connection: planned afresh for at
	// least its first five executions (PostgreSQL's auto mode), and on every
	// one as long as a custom plan looks cheaper.
	flushes(&Writer{pool: base})
	if generic, custom := plans(base); custom < 5 {
		t.Errorf("default connection: %d generic and %d custom plans for 8 flushes; the premise of the Writer's pool no longer holds", generic, custom)
	}
}

// TestRefusedRowFailsAloneInItsBatch: a row whose content PostgreSQL
// refuses (here a payload that is not JSON at all, which the receiver never
// sends; or JSON that jsonb cannot hold) fails only its own delivery, with
// ErrBadEnvelope (400), while the rest of its batch commits.
func TestRefusedRowFailsAloneInItsBatch(t *testing.T) {
	ctx := context.Background()
	base, w := newTestWriter(t, 0)
	payloads := map[string]string{
		"good-1":    `{"id":"good-1"}`,
		"bad-json":  `{"id":`,
		"good-2":    `{"id":"good-2"}`,
		"surrogate": `{"id":"surrogate","x":"\ud800"}`,
	}
	var batch []*pending
	for _, id := range []string{"good-1", "bad-json", "good-2", "surrogate", "good-1"} {
		batch = append(batch, &pending{done: make(chan struct{}), rec: Record{Provider: "p", EventID: id, Type: "t",
			Payload: []byte(payloads[id]), SecretID: "s", AggregateID: "a", Topic: "topic"}})
	}
	w.flush(batch)
	for i, p := range batch {
		id := p.rec.EventID
		switch {
		case strings.HasPrefix(id, "good") && p.err != nil:
			t.Errorf("%d %s: %v", i, id, p.err)
		case id == "bad-json" && !errors.Is(p.err, ErrBadEnvelope):
			t.Errorf("%s: error %v, want ErrBadEnvelope", id, p.err)
		}
	}
	if !batch[0].out.New || batch[4].out.New {
		t.Errorf("good-1: first delivery new=%v, its duplicate in the batch new=%v", batch[0].out.New, batch[4].out.New)
	}
	var inbox, outbox int
	if err := base.QueryRow(ctx, `SELECT (SELECT count(*) FROM inbox), (SELECT count(*) FROM outbox)`).Scan(&inbox, &outbox); err != nil {
		t.Fatal(err)
	}
	wantRows := 2
	if batch[3].err == nil { // jsonb took the lone surrogate
		wantRows = 3
	} else if !errors.Is(batch[3].err, ErrBadEnvelope) {
		t.Errorf("surrogate: error %v, want ErrBadEnvelope", batch[3].err)
	}
	if inbox != wantRows || outbox != wantRows {
		t.Errorf("inbox %d, outbox %d rows; want %d each", inbox, outbox, wantRows)
	}
}
