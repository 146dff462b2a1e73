package relay

import (
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gatehouse/gatehouse/schemas"
)

// Row is one outbox row as the relay reads it (from the WAL or by polling).
type Row struct {
	ID            string // outbox id (uuid text)
	AggregateType string // the provider
	AggregateID   string // the subject object's id: the record key
	Type          string // event type
	Payload       []byte // the verified envelope (jsonb text): the record value
	EventID       string // the provider's event id: ce_id
	Topic         string
	CreatedAt     time.Time // insert time of the row (zero when unknown)
	EventTime     string    // the provider's creation time as written (outbox.event_time, ce_time; "" when NULL)
	Seq           int64
	// Traceparent is the delivery's trace context (outbox.traceparent; ""
	// when it was recorded with tracing off).
	Traceparent string

	txid string // the writing transaction (outbox.txid) of a row read from the log; "" from the stream
}

// Record maps a row to its Kafka record (the contract in schemas.Record):
// key = aggregateid, value = payload, ce_time exactly the text of
// outbox.event_time or, for rows without it, the envelope's
// (schemas.EnvelopeTime); traceparent and ce_traceparent are the given
// publish span's context ("" : none); gatehouse_received_at is the row's
// created_at, which is the inbox row's received_at (one statement, one
// now()) except for a replay's row (a later time: the consumers' lookup
// then falls back to every partition).
func (r *Row) Record(traceparent string) *kgo.Record {
	t := r.EventTime
	if t == "" {
		t, _ = schemas.EnvelopeTime(r.Payload)
	}
	return schemas.Record{
		Topic: r.Topic, Key: r.AggregateID, Provider: r.AggregateType, EventID: r.EventID,
		Type: r.Type, TimeText: t, OutboxID: r.ID, Payload: r.Payload, Traceparent: traceparent,
		ReceivedAt: r.CreatedAt,
	}.Encode()
}

// pgTimestamp parses timestamptz text output (DateStyle ISO).
func pgTimestamp(s string) time.Time {
	for _, layout := range []string{"2006-01-02 15:04:05.999999-07", "2006-01-02 15:04:05.999999-07:00", "2006-01-02 15:04:05.999999-07:00:00"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t
		}
	}
	return time.Time{}
}
