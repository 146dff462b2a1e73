package relay

import (
	"bytes"
	"encoding/json"
	"strconv"
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
	EventTime     time.Time // the provider's creation time (outbox.event_time; zero when NULL)
	Seq           int64
}

// Record maps a row to its Kafka record: topic from the row, key =
// aggregateid, value = payload, CloudEvents binary-mode headers plus the
// outbox id and provider.
func (r *Row) Record() *kgo.Record {
	h := []kgo.RecordHeader{
		{Key: schemas.HeaderID, Value: []byte(r.EventID)},
		{Key: schemas.HeaderSource, Value: []byte(schemas.Source(r.AggregateType))},
		{Key: schemas.HeaderType, Value: []byte(r.Type)},
		{Key: schemas.HeaderSpecVersion, Value: []byte(schemas.SpecVersion)},
		{Key: schemas.HeaderContentType, Value: []byte("application/json")},
	}
	t, ok := r.EventTime, !r.EventTime.IsZero()
	if !ok {
		t, ok = eventTime(r.Payload)
	}
	if ok {
		h = append(h, kgo.RecordHeader{Key: schemas.HeaderTime, Value: []byte(t.UTC().Format(time.RFC3339Nano))})
	}
	h = append(h,
		kgo.RecordHeader{Key: schemas.HeaderOutboxID, Value: []byte(r.ID)},
		kgo.RecordHeader{Key: schemas.HeaderProvider, Value: []byte(r.AggregateType)},
	)
	return &kgo.Record{Topic: r.Topic, Key: []byte(r.AggregateID), Value: r.Payload, Headers: h}
}

// eventTime finds the provider's creation time in the envelope (rows
// without outbox.event_time): created_at
// (RFC 3339 or Unix seconds), created (Stripe, Unix seconds) or timestamp.
func eventTime(payload []byte) (time.Time, bool) {
	var env struct {
		CreatedAt json.RawMessage `json:"created_at"`
		Created   json.RawMessage `json:"created"`
		Timestamp json.RawMessage `json:"timestamp"`
	}
	if json.Unmarshal(payload, &env) != nil {
		return time.Time{}, false
	}
	for _, raw := range []json.RawMessage{env.CreatedAt, env.Created, env.Timestamp} {
		raw = bytes.TrimSpace(raw)
		if len(raw) == 0 || string(raw) == "null" {
			continue
		}
		var s string
		if json.Unmarshal(raw, &s) == nil {
			if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
				return t.UTC(), true
			}
			continue
		}
		if n, err := strconv.ParseInt(string(raw), 10, 64); err == nil {
			return time.Unix(n, 0).UTC(), true
		}
	}
	return time.Time{}, false
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
