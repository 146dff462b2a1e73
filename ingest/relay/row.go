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
	// Via is how the event was obtained (outbox.via: webhook or
	// reconcile), published as ce_gatehousevia; "" when the row has none.
	Via string

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
		ReceivedAt: r.CreatedAt, Via: r.Via,
	}.Encode()
}

// pgTimestamp parses timestamptz text output (DateStyle ISO): the common
// form "2006-01-02 15:04:05[.ffffff]±hh[:mm[:ss]]" by hand (time.Parse
// cost more than the rest of a row's decoding), anything else by layout.
func pgTimestamp(s string) time.Time {
	if t, ok := pgTimestampFast(s); ok {
		return t
	}
	for _, layout := range []string{"2006-01-02 15:04:05.999999-07", "2006-01-02 15:04:05.999999-07:00", "2006-01-02 15:04:05.999999-07:00:00"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t
		}
	}
	return time.Time{}
}

func pgTimestampFast(s string) (time.Time, bool) {
	num := func(s string) (int, bool) {
		n := 0
		for i := 0; i < len(s); i++ {
			if s[i] < '0' || s[i] > '9' {
				return 0, false
			}
			n = n*10 + int(s[i]-'0')
		}
		return n, len(s) > 0
	}
	if len(s) < 22 || s[4] != '-' || s[7] != '-' || s[10] != ' ' || s[13] != ':' || s[16] != ':' {
		return time.Time{}, false
	}
	year, ok1 := num(s[0:4])
	month, ok2 := num(s[5:7])
	day, ok3 := num(s[8:10])
	hour, ok4 := num(s[11:13])
	minute, ok5 := num(s[14:16])
	sec, ok6 := num(s[17:19])
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) || month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || sec > 59 {
		return time.Time{}, false
	}
	rest, nsec := s[19:], 0
	if rest[0] == '.' {
		i := 1
		for i < len(rest) && i <= 9 && rest[i] >= '0' && rest[i] <= '9' {
			i++
		}
		frac, ok := num(rest[1:i])
		if !ok {
			return time.Time{}, false
		}
		for range 10 - i {
			frac *= 10
		}
		nsec, rest = frac, rest[i:]
	}
	// The offset: ±hh, ±hh:mm or ±hh:mm:ss.
	if len(rest) != 3 && len(rest) != 6 && len(rest) != 9 || (rest[0] != '+' && rest[0] != '-') {
		return time.Time{}, false
	}
	off := 0
	for i, unit := range []int{3600, 60, 1} {
		if 1+3*i >= len(rest) {
			break
		}
		if i > 0 && rest[3*i] != ':' {
			return time.Time{}, false
		}
		v, ok := num(rest[1+3*i : 3+3*i])
		if !ok {
			return time.Time{}, false
		}
		off += v * unit
	}
	if rest[0] == '-' {
		off = -off
	}
	t := time.Date(year, time.Month(month), day, hour, minute, sec, nsec, time.UTC).Add(-time.Duration(off) * time.Second)
	if t.Day() == 0 || time.Date(year, time.Month(month), day, 0, 0, 0, 0, time.UTC).Day() != day {
		return time.Time{}, false // 2026-02-30: let time.Parse refuse it
	}
	return t, true
}
