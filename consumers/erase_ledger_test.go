package consumers

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gatehouse/gatehouse/consumers/event"
	"github.com/gatehouse/gatehouse/ingest/admin"
	"github.com/gatehouse/gatehouse/ingest/inbox"
	"github.com/gatehouse/gatehouse/internal/testenv"
)

// TestErasedEventForwardBodyRefused: a transformed body recorded for an
// event already erased keeps neither body nor headers (the delivery is
// still recorded); one recorded while the erasure is committing waits for
// it and keeps neither either, whatever the erasure's selector, so no
// later erasure has to find it.
func TestErasedEventForwardBodyRefused(t *testing.T) {
	const email = "zoe.ledger@example.org"
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, testenv.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	w, err := inbox.NewWriter(pool, 1, 8)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for _, id := range []string{"led_1", "led_2", "led_3"} {
		if _, err := w.Write(ctx, inbox.Record{Provider: "p", EventID: id, Type: "t", SecretID: "s", AggregateID: "obj", Topic: "t",
			Payload: []byte(`{"id":"` + id + `","data":{"email":"` + email + `"}}`)}); err != nil {
			t.Fatal(err)
		}
	}
	s := store{pool: pool}
	sent := event.Sent{Transformed: true, Body: []byte(`{"to":"` + email + `"}`), Headers: map[string][]string{"X-To": {email}}}
	recorded := func(id string) (rows int, kept bool) {
		t.Helper()
		if err := pool.QueryRow(ctx, `SELECT count(*), coalesce(bool_or(body IS NOT NULL OR headers IS NOT NULL), false)
FROM forward_deliveries WHERE event_id = $1`, id).Scan(&rows, &kept); err != nil {
			t.Fatal(err)
		}
		return rows, kept
	}

	// Not erased: recorded as sent.
	if err := s.RecordForward(ctx, "p", "led_1", "d", sent); err != nil {
		t.Fatal(err)
	}
	if n, kept := recorded("led_1"); n != 1 || !kept {
		t.Fatalf("led_1: %d row(s), body kept %v; want the body as sent", n, kept)
	}

	// Erased before the delivery is recorded.
	if _, err := admin.Erase(ctx, pool, admin.Erasure{Provider: "p", EventID: "led_2", RequestedBy: "test"}); err != nil {
		t.Fatal(err)
	}
	if err := s.RecordForward(ctx, "p", "led_2", "d", sent); err != nil {
		t.Fatal(err)
	}
	if n, kept := recorded("led_2"); n != 1 || kept {
		t.Fatalf("led_2, erased: %d row(s), body kept %v; want the delivery without its body", n, kept)
	}

	// Erased while the delivery is being recorded: the erasure's
	// transaction holds the row; the record waits and sees it erased.
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `UPDATE inbox SET payload = '{"erased": true, "erasure_id": 99}' WHERE provider = 'p' AND event_id = 'led_3'`); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.RecordForward(ctx, "p", "led_3", "d", sent) }()
	select {
	case err := <-done:
		t.Logf("recorded before the erasure committed (%v)", err)
	case <-time.After(300 * time.Millisecond):
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the record did not finish after the erasure committed")
	}
	if n, kept := recorded("led_3"); n != 1 || kept {
		t.Fatalf("led_3, erased meanwhile: %d row(s), body kept %v; want the delivery without its body", n, kept)
	}
}
