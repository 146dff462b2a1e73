package consumers

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gatehouse/gatehouse/consumers/event"
	"github.com/gatehouse/gatehouse/schemas"
)

// A record can reach the consumers before its inbox row is visible:
// PostgreSQL flushes a transaction's commit record (from which logical
// decoding streams it to the relay) before it removes the transaction from
// the process array (which makes it visible to new snapshots), and a
// receiver backend that loses the CPU between the two keeps a whole group
// commit invisible for that long while the relay, Kafka and the consumers
// move on (the relay's cursor waits for this too: docs/RELAY.md).
//
// So a main-topic batch reads its missing rows once more after
// noInboxPause, and a record younger than noInboxFresh (its Kafka
// timestamp, set when the relay published it) whose row is still missing
// is read again noInboxRechecks more times, the pause doubling (20, 40,
// 80 ms after the first re-read: 150 ms after the claim at most), beside
// the batch: the batch's other events are handled and applied meanwhile,
// so a foreign record delays nothing. An older record is not waited for
// (a foreign record, a restored database: waiting cannot help).
const (
	noInboxPause    = 10 * time.Millisecond
	noInboxRechecks = 3
	noInboxFresh    = 5 * time.Second
)

// lateRow is what late reads of a record whose inbox row is missing:
// copies taken by the batch's stages before late starts, so late shares
// nothing with them.
type lateRow struct {
	ctx  context.Context
	rec  *kgo.Record
	role topicRole
	ev   event.Event
}

// late re-reads the missing inbox rows of rows (first records of a batch)
// beside the batch, in one statement per re-read: an event whose row is
// found goes through the stages of a retry-topic record, handled and
// applied alone (handleAndApply: its handler and its own consumers_apply);
// one still missing after the last re-read, or failing, is forwarded down
// the retry ladder. It returns how each row's record ended, by position:
// recovered when the event was finished without a forward, not done when
// ctx ended first. Each goroutine it starts fills its own row's result.
func (m *membership) late(rows []lateRow) []ended {
	r := m.r
	res := make([]ended, len(rows))
	ctx := rows[0].ctx // every record's context has the same parent
	var found sync.WaitGroup
	run := func(i int, do func(row *lateRow) ended) {
		found.Add(1)
		go func() { defer found.Done(); res[i] = do(&rows[i]) }()
	}
	todo := make([]int, len(rows)) // the rows still missing, by position
	for i := range todo {
		todo[i] = i
	}
	for n := 1; n <= noInboxRechecks && len(todo) > 0; n++ {
		select {
		case <-ctx.Done():
			found.Wait()
			return res // unfinished: left unmarked
		case <-time.After(noInboxPause << n):
		}
		slices.SortFunc(todo, func(a, b int) int {
			if c := strings.Compare(rows[a].ev.Provider, rows[b].ev.Provider); c != 0 {
				return c
			}
			return strings.Compare(rows[a].ev.ID, rows[b].ev.ID)
		})
		keys := make([]eventKey, len(todo))
		for j, i := range todo {
			keys[j] = eventKey{rows[i].ev.Provider, rows[i].ev.ID, rows[i].ev.ReceivedAt}
		}
		claims, err := r.store.claimMany(ctx, keys)
		if err != nil {
			for _, i := range todo {
				run(i, func(row *lateRow) ended { return m.lateFail(row, err) })
			}
			found.Wait()
			return res
		}
		var missing []int
		for j, i := range todo {
			switch c := claims[j]; {
			case !c.found:
				missing = append(missing, i)
			case schemas.Final(c.prev):
				res[i] = ended{outcome: OutcomeDuplicate, done: true, recovered: true}
			default:
				rows[i].ev.ReceivedAt = c.receivedAt
				run(i, func(row *lateRow) ended {
					out, err := r.handleAndApply(row.ctx, &row.ev)
					if err != nil {
						return m.lateFail(row, err)
					}
					return ended{outcome: out, done: true, recovered: true}
				})
			}
		}
		todo = missing
	}
	for _, i := range todo {
		r.m.rejected.WithLabelValues(r.cfg.Group, rows[i].rec.Topic, "no_inbox_row").Inc()
		run(i, func(row *lateRow) ended { return m.lateFail(row, errNoInbox) }) // each forward waits for its ack
	}
	found.Wait()
	return res
}

// lateFail forwards row's record, whose event failed with err, down the
// retry ladder.
func (m *membership) lateFail(row *lateRow, err error) ended {
	out, ok := m.fail(row.ctx, row.rec, row.role, &row.ev, err)
	return ended{outcome: out, done: ok}
}
