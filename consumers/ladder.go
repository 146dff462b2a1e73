package consumers

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gatehouse/gatehouse/consumers/event"
	"github.com/gatehouse/gatehouse/internal/text"
	"github.com/gatehouse/gatehouse/schemas"
)

// maxErrorMessage bounds the gatehouse_error_message header.
const maxErrorMessage = 512

// ladderHeaders are replaced, not copied, when a record is forwarded.
var ladderHeaders = map[string]bool{
	schemas.HeaderAttempt: true, schemas.HeaderDueAt: true,
	schemas.HeaderErrorClass: true, schemas.HeaderErrorMessage: true,
}

// forwarding is where a failed record goes next.
type forwarding struct {
	topic   string
	attempt int       // gatehouse_attempt of the forwarded record
	dueAt   time.Time // zero for the dead-letter topic
	dead    bool
}

// next decides the forwarding of a record of role that failed at attempt
// with an error of class: the next retry topic while delays remain and the
// failure is transient, the dead-letter topic otherwise.
func (l layout) next(role topicRole, attempt int, class string, now time.Time) forwarding {
	if class == event.ClassTransient && role.level < len(l.delays) {
		return forwarding{
			topic:   schemas.RetryTopic(role.base, role.level+1),
			attempt: attempt + 1,
			dueAt:   now.Add(l.delays[role.level]),
		}
	}
	return forwarding{topic: schemas.DeadLetterTopic(role.base), attempt: attempt, dead: true}
}

// forwardRecord builds the record written to f.topic: same key, value and
// event headers; the original topic/partition/offset/timestamp of the first
// delivery (kept across hops); the attempt, due time and error.
func forwardRecord(rec *kgo.Record, f forwarding, class string, cause error) *kgo.Record {
	out := &kgo.Record{Topic: f.topic, Key: rec.Key, Value: rec.Value}
	origin := map[string]bool{}
	for _, h := range rec.Headers {
		if ladderHeaders[h.Key] {
			continue
		}
		switch h.Key {
		case schemas.HeaderOriginTopic, schemas.HeaderOriginPartition, schemas.HeaderOriginOffset, schemas.HeaderOriginTimestamp:
			origin[h.Key] = true
		}
		out.Headers = append(out.Headers, h)
	}
	add := func(k, v string) { out.Headers = append(out.Headers, kgo.RecordHeader{Key: k, Value: []byte(v)}) }
	if !origin[schemas.HeaderOriginTopic] {
		add(schemas.HeaderOriginTopic, rec.Topic)
		add(schemas.HeaderOriginPartition, strconv.Itoa(int(rec.Partition)))
		add(schemas.HeaderOriginOffset, strconv.FormatInt(rec.Offset, 10))
		add(schemas.HeaderOriginTimestamp, rec.Timestamp.UTC().Format(time.RFC3339Nano))
	}
	add(schemas.HeaderAttempt, strconv.Itoa(f.attempt))
	if !f.dead {
		add(schemas.HeaderDueAt, f.dueAt.UTC().Format(time.RFC3339Nano))
	}
	add(schemas.HeaderErrorClass, class)
	msg := ""
	if cause != nil {
		msg = cause.Error()
	}
	add(schemas.HeaderErrorMessage, text.Truncate(msg, maxErrorMessage))
	return out
}

// dueAt is when a record of a retry topic may be processed: its
// gatehouse_due_at header, else its timestamp plus the level's delay.
func (l layout) dueAt(rec *kgo.Record, role topicRole) time.Time {
	if role.level == 0 {
		return time.Time{}
	}
	for _, h := range rec.Headers {
		if h.Key == schemas.HeaderDueAt {
			if t, err := time.Parse(time.RFC3339Nano, string(h.Value)); err == nil {
				return t
			}
		}
	}
	return rec.Timestamp.Add(l.delays[role.level-1])
}

// produce writes rec and waits for the broker's acknowledgement.
func produce(ctx context.Context, cl *kgo.Client, rec *kgo.Record) error {
	if err := cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
		return fmt.Errorf("produce to %s: %w", rec.Topic, err)
	}
	return nil
}
