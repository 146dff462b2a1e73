package relay

import (
	"context"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/internal/testenv"
)

// TestSnapshotWaitsForHeldRows: rows committed before a new slot's
// consistent point reach Kafka only through the snapshot. When another
// transaction (the dispatcher of this relay, or of a relay that was just
// killed) holds the oldest of them, a snapshot batch comes back empty; the
// snapshot must wait for those rows instead of declaring itself done, or the
// stream would publish a key's newer rows before its older ones.
func TestSnapshotWaitsForHeldRows(t *testing.T) {
	e := newEnv(t, ModeReplication, testenv.KafkaForTest(t), "")
	ctx := context.Background()
	old := e.newEvents("held", 0, 2)
	e.mustInsert(old...)
	// A relay created the slot after these rows committed and was killed
	// before its snapshot finished.
	for _, q := range []string{
		`CREATE PUBLICATION gatehouse_outbox FOR TABLE outbox WITH (publish = 'insert')`,
		`SELECT pg_create_logical_replication_slot('` + e.slot + `', 'pgoutput')`,
		`INSERT INTO relay_slot (slot) VALUES ('` + e.slot + `')`,
	} {
		if _, err := e.pool.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	// Another transaction holds the oldest row, as a dispatcher does while
	// it publishes.
	tx, err := e.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // released below
	var id string
	if err := tx.QueryRow(ctx, `SELECT id::text FROM outbox WHERE id = $1 FOR UPDATE`, old[0].ID).Scan(&id); err != nil {
		t.Fatal(err)
	}
	rn := e.startNoWait()
	time.Sleep(time.Second)
	// A newer row of the same key commits after the consistent point: the
	// stream carries it, and must not publish it before the held ones.
	newer := e.newEvents("held", 2, 1)
	e.mustInsert(newer...)
	time.Sleep(500 * time.Millisecond)
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-rn.r.Ready():
	case <-time.After(30 * time.Second):
		t.Fatal("relay not streaming 30s after the held row was released")
	}
	want := append(old, newer...)
	g := collect(t, e.brokers, []string{e.topic}, want, 30*time.Second)
	checkOrder(t, g, want)
}
