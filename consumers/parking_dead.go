package consumers

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gatehouse/gatehouse/consumers/event"
	"github.com/gatehouse/gatehouse/internal/kafka"
	"github.com/gatehouse/gatehouse/schemas"
)

// A parked event that is dead-lettered, by the drain (it failed for good,
// or ran out of the ladder's attempts, whatever on_dead then decides for
// its key) or with its key at the bound (deadLetterOldest), is written to
// its provider's dead-letter topic as the retry ladder writes one
// (forwardRecord): the record rebuilt from what was parked (key, value,
// event headers), gatehouse_original_* naming its first delivery (the
// parked origin; offset -1 when it was parked before the origin was
// kept), gatehouse_attempt, the error's class and message. The record is
// acknowledged before the inbox row is marked dead and the parking
// removed (one transaction), so a crash between the two writes the record
// again, never loses it.

// deadLetters writes parked events to the dead-letter topics; its client
// is the drain's own producer.
type deadLetters struct {
	cl     *kgo.Client
	topics map[string]string // provider → main topic
}

// newDeadLetters opens the drain's producer.
func (r *Runner) newDeadLetters() (deadLetters, error) {
	opts, err := kafka.Options(kafka.ClientConfig{Brokers: r.cfg.Brokers, ClientID: r.cfg.ClientID, Name: "consumer-parking"})
	if err != nil {
		return deadLetters{}, fmt.Errorf("parking dead letters: %w", err)
	}
	cl, err := kgo.NewClient(append(opts, r.cfg.KafkaOpts...)...)
	if err != nil {
		return deadLetters{}, fmt.Errorf("parking dead letters: kafka client: %w", err)
	}
	return deadLetters{cl: cl, topics: r.cfg.Topics}, nil
}

// write writes evs, provider's parked events dead-lettered at attempt with
// cause (of class), to the provider's dead-letter topic, and waits for
// every acknowledgement.
func (d deadLetters) write(ctx context.Context, provider string, evs []*event.Event, attempt int, class string, cause error) error {
	if d.cl == nil {
		return errors.New("dead-letter parked events: no producer")
	}
	base, ok := d.topics[provider]
	if !ok {
		return fmt.Errorf("dead-letter parked events: no topic for provider %q", provider)
	}
	recs := make([]*kgo.Record, len(evs))
	for i, ev := range evs {
		recs[i] = deadParkedRecord(base, ev, attempt, class, cause)
	}
	if err := d.cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return fmt.Errorf("dead-letter parked events to %s: %w", schemas.DeadLetterTopic(base), err)
	}
	return nil
}

// deadParkedRecord is the dead-letter record of the parked event ev of
// the provider whose main topic is base.
func deadParkedRecord(base string, ev *event.Event, attempt int, class string, cause error) *kgo.Record {
	orig := schemas.Record{Topic: base, Key: ev.ObjectKey, Provider: ev.Provider, EventID: ev.ID, Type: ev.Type,
		Time: ev.CreatedAt, OutboxID: ev.OutboxID, Payload: ev.StoredEnvelope(), ReceivedAt: ev.ReceivedAt}.Encode()
	if ev.Origin.Topic != "" {
		orig.Topic = ev.Origin.Topic
	}
	orig.Partition, orig.Offset, orig.Timestamp = ev.Origin.Partition, ev.Origin.Offset, ev.Origin.Timestamp
	f := forwarding{topic: schemas.DeadLetterTopic(base), attempt: attempt, dead: true}
	return forwardRecord(orig, f, class, cause)
}

// parkedEvents are the events of ps.
func parkedEvents(ps []parkedEvent) []*event.Event {
	out := make([]*event.Event, len(ps))
	for i := range ps {
		out[i] = &ps[i].ev
	}
	return out
}
