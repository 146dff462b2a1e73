package consumers

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gatehouse/gatehouse/consumers/event"
	"github.com/gatehouse/gatehouse/schemas"
)

// A parked event that dies in the drain is written to the dead-letter
// topic as the retry ladder writes one, under on_dead skip and hold: A2
// fails once (A3…A5 park behind it), then A3 fails every time, becomes the
// key's head, runs out of the ladder's attempts and is dead-lettered. Its
// dead-letter record has the main topic record's key, value and event
// headers, its first delivery's position, the attempt, the error's class
// and message, and its failures in the drain are counted into a failure
// issue of its forward stage; on_dead then delivers A4 and A5 (skip) or holds them.
func TestOrderedDestinationParkedEventThatDiesIsDeadLettered(t *testing.T) {
	for _, onDead := range []string{"skip", "hold"} {
		t.Run(onDead, func(t *testing.T) {
			f := newFixture(t)
			svc := newOrderService(t)
			a := ids("ord_dd_"+onDead+"_", 5)
			svc.fail(a[1], 1)
			svc.fail(a[2], -1)
			f.start(orderedConfig(t, f, svc, "        breaker_failures: 1000\n        on_dead: "+onDead+"\n"))
			f.sendKey("pay_DD", a...)
			f.waitState(schemas.StateDead, 60*time.Second, a[2])
			dlq := f.readTopic(schemas.DeadLetterTopic(f.topic), 1, 10*time.Second)
			if len(dlq) != 1 {
				t.Fatalf("%d dead-letter records, want 1 (A3's)", len(dlq))
			}
			d := dlq[0]
			var orig *kgo.Record
			for _, rec := range f.readTopic(f.topic, 5, 10*time.Second) {
				if header(rec, schemas.HeaderID) == a[2] {
					orig = rec
				}
			}
			if orig == nil {
				t.Fatalf("%s's record not found on the main topic", a[2])
			}
			if string(d.Key) != string(orig.Key) || string(d.Value) != string(orig.Value) {
				t.Errorf("dead letter key %q value %q, want the main record's %q %q", d.Key, d.Value, orig.Key, orig.Value)
			}
			for _, h := range []string{schemas.HeaderID, schemas.HeaderSource, schemas.HeaderType, schemas.HeaderSpecVersion,
				schemas.HeaderContentType, schemas.HeaderOutboxID, schemas.HeaderProvider, schemas.HeaderReceivedAt} {
				if header(d, h) != header(orig, h) {
					t.Errorf("dead letter %s = %q, want the main record's %q", h, header(d, h), header(orig, h))
				}
			}
			if header(d, schemas.HeaderOriginTopic) != f.topic ||
				header(d, schemas.HeaderOriginPartition) != strconv.Itoa(int(orig.Partition)) ||
				header(d, schemas.HeaderOriginOffset) != strconv.FormatInt(orig.Offset, 10) ||
				header(d, schemas.HeaderOriginTimestamp) != orig.Timestamp.UTC().Format(time.RFC3339Nano) {
				t.Errorf("dead letter origin headers %v, want %s/%d/%d", d.Headers, f.topic, orig.Partition, orig.Offset)
			}
			if header(d, schemas.HeaderErrorClass) != event.ClassTransient || !strings.Contains(header(d, schemas.HeaderErrorMessage), "500") ||
				header(d, schemas.HeaderAttempt) != strconv.Itoa(len(f.delays)+1) || header(d, schemas.HeaderDueAt) != "" {
				t.Errorf("dead letter ladder headers %v, want transient, the 500, attempt %d, no due time", d.Headers, len(f.delays)+1)
			}
			var stage string
			var failures int
			if err := f.pool.QueryRow(context.Background(), `SELECT fi.stage, fi.failures FROM failure_issue_events fe
JOIN failure_issues fi ON fi.id = fe.issue_id WHERE fe.event_id = $1`, a[2]).Scan(&stage, &failures); err != nil {
				t.Errorf("A3's drained failures are in no failure issue: %v", err)
			} else if !strings.HasPrefix(stage, event.StageForwardPrefix) || failures < len(f.delays)+1 {
				t.Errorf("A3's failure issue: stage %q with %d failures, want forward:… with at least %d", stage, failures, len(f.delays)+1)
			}
			if onDead == "skip" {
				waitFor(t, 30*time.Second, "A4 and A5 to be delivered", func() bool { return slices.Contains(svc.accepted(), a[4]) })
				wantInOrder(t, svc.accepted(), []string{a[0], a[1], a[3], a[4]})
				return
			}
			waitFor(t, 10*time.Second, "the key to be held", func() bool {
				var st string
				_ = f.pool.QueryRow(context.Background(), `SELECT state FROM parked_keys WHERE kafka_key = 'pay_DD'`).Scan(&st)
				return st == "held"
			})
			if got := svc.accepted(); !slices.Equal(got, a[:2]) {
				t.Errorf("held: accepted %v, want %v", got, a[:2])
			}
		})
	}
}
