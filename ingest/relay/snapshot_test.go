package relay

import (
	"context"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/internal/testenv"
)

// TestSnapshotPublishesRowsBeforeTheSlot: rows committed before a new
// slot's consistent point reach Kafka only through the snapshot (the log's
// window from the cursor), which runs before the stream, so a key's newer
// row the stream carries comes after them. The publication here is made
// the old way, without publish_via_partition_root: the relay alters it, or
// inserts into the outbox's partitions would arrive under names it skips.
func TestSnapshotPublishesRowsBeforeTheSlot(t *testing.T) {
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
	rn := e.startNoWait()
	// A newer row of the same key commits after the consistent point: the
	// stream carries it, and must not publish it before the older ones.
	newer := e.newEvents("held", 2, 1)
	e.mustInsert(newer...)
	select {
	case <-rn.r.Ready():
	case <-time.After(30 * time.Second):
		t.Fatal("relay not streaming after 30s")
	}
	want := append(old, newer...)
	g := collect(t, e.brokers, []string{e.topic}, want, 30*time.Second)
	checkOrder(t, g, want)
}
