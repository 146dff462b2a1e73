package consumers

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gatehouse/gatehouse/consumers/event"
	"github.com/gatehouse/gatehouse/ingest/inbox"
	"github.com/gatehouse/gatehouse/internal/testenv"
	"github.com/gatehouse/gatehouse/schemas"
)

// TestInboxUpdatesUseTheReceivedAtHint: with the record's
// gatehouse_received_at the claim, the apply and the failure update read
// only the event's inbox partition (no index or sequential scan of any
// other partition, by pg_stat_user_tables); without it, or with a wrong
// one (a replay's record carries the replay's time), they fall back to
// every partition and still find the row, and the claim hands the row's
// own received_at on.
func TestInboxUpdatesUseTheReceivedAtHint(t *testing.T) {
	ctx := context.Background()
	url := testenv.Postgres(t)
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 1 // one backend: its statistics are flushed below
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	wpool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer wpool.Close()
	w, err := inbox.NewWriter(wpool, 1, 8)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	s := store{pool: pool}
	// Partitions besides the current one: the migration's legacy one and
	// tomorrow's, each holding a row (an empty partition is skipped
	// whatever the plan).
	mustExec := func(sql string, args ...any) {
		t.Helper()
		if _, err := pool.Exec(ctx, sql, args...); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	mustExec(`INSERT INTO inbox (provider, event_id, event_type, payload, received_at, verified, secret_id)
SELECT 'ref', 'later', 't', '{}', starts + interval '1 minute', true, 's' FROM storage_partitions WHERE parent = 'inbox' ORDER BY starts DESC LIMIT 1`)
	mustExec(`INSERT INTO inbox_legacy (provider, event_id, event_type, payload, received_at, verified, secret_id)
VALUES ('ref', 'legacy', 't', '{}', '2001-01-01', true, 's')`)

	add := func(id string) (*event.Event, time.Time) {
		body, _ := json.Marshal(map[string]any{"id": id, "type": "payment.succeeded", "data": map[string]any{"payment_id": "p_" + id}})
		if _, err := w.Write(ctx, inbox.Record{Provider: "ref", EventID: id, Type: "payment.succeeded", Payload: body,
			SecretID: "s", AggregateID: "p_" + id, Topic: "t"}); err != nil {
			t.Fatal(err)
		}
		var at time.Time
		if err := pool.QueryRow(ctx, `SELECT received_at FROM inbox WHERE provider = 'ref' AND event_id = $1`, id).Scan(&at); err != nil {
			t.Fatal(err)
		}
		return &event.Event{Provider: "ref", ID: id, Type: "payment.succeeded"}, at
	}
	// otherScans runs f and returns the scans it made of the inbox
	// partitions other than the one holding at.
	otherScans := func(at time.Time, f func()) int64 {
		t.Helper()
		read := func() int64 {
			mustExec(`SELECT pg_stat_force_next_flush()`)
			mustExec(`SELECT 1`) // the flush happens when the backend goes idle
			var n int64
			if err := pool.QueryRow(ctx, `SELECT coalesce(sum(coalesce(u.idx_scan, 0) + u.seq_scan), 0)::bigint
FROM pg_stat_user_tables u JOIN storage_partitions p ON p.name = u.relname
WHERE p.parent = 'inbox' AND NOT (p.starts <= $1 AND p.ends > $1)`, at).Scan(&n); err != nil {
				t.Fatal(err)
			}
			mustExec(`SELECT pg_stat_clear_snapshot()`)
			return n
		}
		before := read()
		f()
		return read() - before
	}
	mustExec(`SET stats_fetch_consistency = none`)

	// With the right hint: one partition for the claim, the apply, the failure update.
	a, at := add("a")
	a.ReceivedAt = at
	if n := otherScans(at, func() {
		if prev, _, err := s.claim(ctx, a); err != nil || prev != schemas.StatePending {
			t.Fatalf("claim with the hint: %q, %v", prev, err)
		}
		next := time.Now().Add(time.Minute)
		if err := s.fail(ctx, "ref", "a", receivedAt(a), schemas.StateRetrying, event.ClassTransient, "503", &next); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.claim(ctx, a); err != nil {
			t.Fatal(err)
		}
		if out, err := s.apply(ctx, a, &event.Effect{ObjectType: "payment", ObjectID: "p_a", Version: 1, Data: json.RawMessage(`{}`)}); err != nil || out != OutcomeOK {
			t.Fatalf("apply with the hint: %q, %v", out, err)
		}
	}); n != 0 {
		t.Errorf("with the received_at hint, %d scans of other inbox partitions; want 0", n)
	}
	if !a.ReceivedAt.Equal(at) {
		t.Errorf("ReceivedAt after the claim %v, want %v", a.ReceivedAt, at)
	}

	// Without a hint, and with a wrong one: every partition is probed, the
	// row is found and its received_at handed on.
	for name, hint := range map[string]time.Time{"no hint": {}, "a replay's time": at.Add(time.Hour)} {
		ev, at := add("e_" + name)
		ev.ReceivedAt = hint
		if n := otherScans(at, func() {
			if prev, _, err := s.claim(ctx, ev); err != nil || prev != schemas.StatePending {
				t.Fatalf("%s: claim %q, %v", name, prev, err)
			}
		}); n == 0 {
			t.Errorf("%s: the claim scanned no other partition: the fallback was not taken", name)
		}
		if !ev.ReceivedAt.Equal(at) {
			t.Errorf("%s: ReceivedAt after the claim %v, want the row's %v", name, ev.ReceivedAt, at)
		}
		// The failure update with a wrong time falls back too.
		if err := s.fail(ctx, "ref", ev.ID, &hint, schemas.StateDead, event.ClassPermanent, "404", nil); err != nil {
			t.Fatal(err)
		}
		var st string
		if err := pool.QueryRow(ctx, `SELECT processing_state FROM inbox WHERE provider = 'ref' AND event_id = $1`, ev.ID).Scan(&st); err != nil || st != schemas.StateDead {
			t.Errorf("%s: state after a failure with a wrong hint: %q %v, want dead", name, st, err)
		}
		ev.ReceivedAt = hint
		if out, err := s.apply(ctx, ev, nil); err != nil || out != OutcomeSkipped {
			t.Errorf("%s: apply with a wrong hint: %q %v", name, out, err)
		}
		if err := pool.QueryRow(ctx, `SELECT processing_state FROM inbox WHERE provider = 'ref' AND event_id = $1`, ev.ID).Scan(&st); err != nil || st != schemas.StateSkipped {
			t.Errorf("%s: state after an apply with a wrong hint: %q %v, want skipped", name, st, err)
		}
	}
}
