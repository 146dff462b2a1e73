package relay

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gatehouse/gatehouse/internal/testenv"
)

// TestBacklogDrainPublishesOnce drains, in replication mode, a backlog of
// 50 000 rows written while no relay ran, every row older than
// republish_after: the stream delivers them and the dispatcher, which only
// looks behind what the stream confirmed, re-publishes none. The topic ends
// with exactly one record per row.
func TestBacklogDrainPublishesOnce(t *testing.T) {
	const total, perTx = 50_000, 1_000
	e := newEnv(t, ModeReplication, testenv.KafkaForTest(t), "")
	// A first run creates the slot and finishes its snapshot; the backlog
	// then waits in the slot as after an outage.
	e.start().stop()
	ctx := context.Background()
	var want []event
	for i := 0; i < total; i += perTx {
		evs := e.newEvents(fmt.Sprintf("k%03d", i/perTx), 0, perTx)
		args := insertArgs(evs)
		if _, err := e.pool.Exec(ctx, `INSERT INTO outbox (id, aggregatetype, aggregateid, type, payload, event_id, topic, created_at)
			SELECT id, 'prov', key, 'test.changed', p::jsonb, eid, topic, now() - interval '1 minute'
			FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::text[]) AS t(id, key, p, eid, topic)`, args...); err != nil {
			t.Fatal(err)
		}
		want = append(want, evs...)
	}
	rn := e.start()
	g := collect(t, e.brokers, []string{e.topic}, want, 3*time.Minute)
	checkOrder(t, g, want)
	waitFor(t, 60*time.Second, "the outbox drained", func() bool { return e.unsent() == 0 })
	if got := topicRecords(t, e.brokers, e.topic); got != total {
		t.Errorf("the topic holds %d records for %d rows (%d duplicates)", got, total, got-total)
	}
	if n := value(rn.r.m.published.WithLabelValues(e.topic, pathDispatcher)); n != 0 {
		t.Errorf("the dispatcher re-published %v rows during the drain", n)
	}
}

// TestPollBacklogDrainsInPages drains, in poll mode, a backlog of 40
// windows' pages (pages of 100 rows, read ahead of the producer): every
// row is published once, in order per key, and the cursor passes them.
func TestPollBacklogDrainsInPages(t *testing.T) {
	const total, perTx = 4_000, 250
	e := newEnv(t, ModePoll, testenv.KafkaForTest(t), "")
	e.tune = func(c *Config) { c.Relay.BatchSize = 100 }
	ctx := context.Background()
	var want []event
	for i := 0; i < total; i += perTx {
		evs := e.newEvents(fmt.Sprintf("p%03d", i/perTx%4), i, perTx)
		if _, err := e.pool.Exec(ctx, insertSQL, insertArgs(evs)...); err != nil {
			t.Fatal(err)
		}
		want = append(want, evs...)
	}
	rn := e.start()
	g := collect(t, e.brokers, []string{e.topic}, want, 2*time.Minute)
	checkOrder(t, g, want)
	waitFor(t, 30*time.Second, "the cursor passing every row", func() bool { return e.unsent() == 0 })
	if got := topicRecords(t, e.brokers, e.topic); got != total {
		t.Errorf("the topic holds %d records for %d rows (%d duplicates)", got, total, got-total)
	}
	if n := value(rn.r.m.published.WithLabelValues(e.topic, pathPoll)); n != total {
		t.Errorf("published_total{path=poll} = %v, want %d", n, total)
	}
}

// topicRecords counts the records on topic (its end offsets; the topic is
// new, nothing is compacted or expired).
func topicRecords(t *testing.T, brokers []string, topic string) int64 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			t.Fatalf("end offset of %s/%d: %v", o.Topic, o.Partition, o.Err)
		}
		n += o.Offset
	})
	return n
}
