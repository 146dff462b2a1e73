package schemas

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Record is one event on a provider's topic, the contract between the relay
// (the only writer of main-topic records), the consumers and data teams:
//
//	key     = Key, the subject object's id (outbox aggregateid)
//	value   = Payload, the verified envelope exactly as received (JSON)
//	headers = ce_id, ce_source, ce_type, ce_specversion, content-type,
//	          ce_time (when known), gatehouse_outbox_id, gatehouse_provider,
//	          gatehouse_received_at (when known), gatehouse_attempt on
//	          retry topics, traceparent and ce_traceparent when the
//	          event is traced, and ce_gatehousevia (webhook or reconcile)
//
// record-value.schema.json and record-headers.schema.json describe the same
// contract for readers in other languages.
type Record struct {
	Topic    string
	Key      string    // the subject object's id
	Provider string    // gatehouse_provider; ce_source is derived from it
	EventID  string    // ce_id: the provider's event id
	Type     string    // ce_type
	Time     time.Time // ce_time as an instant; zero when the provider gave none
	// TimeText is ce_time exactly as written (EventTime: the provider's RFC
	// 3339 text, or its Unix time in RFC 3339 at the precision given). Encode
	// writes it when set, else Time in RFC 3339 with nanoseconds.
	TimeText string
	OutboxID string // gatehouse_outbox_id
	Payload  []byte // the verified envelope
	// Attempt is the 1-based processing attempt (gatehouse_attempt); 0 or 1
	// on a main topic, where the header is absent.
	Attempt int
	// Traceparent is the W3C traceparent of the publishing span, written as
	// both traceparent and ce_traceparent when set.
	Traceparent string
	// ReceivedAt is when gatehouse recorded the event (the inbox row's
	// received_at; gatehouse_received_at, RFC 3339 in UTC with
	// microseconds, PostgreSQL's precision); zero when unknown (no header,
	// or one that is not RFC 3339).
	ReceivedAt time.Time
	// Via is how gatehouse obtained the event (HeaderVia: ViaWebhook or
	// ViaReconcile); "" writes no header.
	Via string
}

// Encode returns the Kafka record of r. ce_time is TimeText, else Time
// (none when both are empty); an Attempt above 1 writes gatehouse_attempt.
// The key and every header value share one allocation (each value capped
// at its own length, so appending to one never overwrites another).
func (r Record) Encode() *kgo.Record {
	var keys [13]string
	var ends [13]int
	n := 0
	buf := make([]byte, 0, len(r.Key)+len(r.EventID)+len(sourcePrefix)+2*len(r.Provider)+len(r.Type)+len(SpecVersion)+
		len(contentTypeJSON)+len(r.TimeText)+len(r.OutboxID)+2*len(r.Traceparent)+len(r.Via)+96)
	buf = append(buf, r.Key...)
	keyEnd := len(buf)
	end := func(k string) {
		keys[n], ends[n] = k, len(buf)
		n++
	}
	buf = append(buf, r.EventID...)
	end(HeaderID)
	buf = append(append(buf, sourcePrefix...), r.Provider...)
	end(HeaderSource)
	buf = append(buf, r.Type...)
	end(HeaderType)
	buf = append(buf, SpecVersion...)
	end(HeaderSpecVersion)
	buf = append(buf, contentTypeJSON...)
	end(HeaderContentType)
	switch {
	case r.TimeText != "":
		buf = append(buf, r.TimeText...)
		end(HeaderTime)
	case !r.Time.IsZero():
		buf = r.Time.UTC().AppendFormat(buf, time.RFC3339Nano)
		end(HeaderTime)
	}
	buf = append(buf, r.OutboxID...)
	end(HeaderOutboxID)
	buf = append(buf, r.Provider...)
	end(HeaderProvider)
	if !r.ReceivedAt.IsZero() {
		buf = r.ReceivedAt.UTC().AppendFormat(buf, receivedAtLayout)
		end(HeaderReceivedAt)
	}
	if r.Attempt > 1 {
		buf = strconv.AppendInt(buf, int64(r.Attempt), 10)
		end(HeaderAttempt)
	}
	if r.Traceparent != "" {
		buf = append(buf, r.Traceparent...)
		end(HeaderTraceparent)
		buf = append(buf, r.Traceparent...)
		end(HeaderCETraceparent)
	}
	if r.Via != "" {
		buf = append(buf, r.Via...)
		end(HeaderVia)
	}
	h := make([]kgo.RecordHeader, n)
	from := keyEnd
	for i := range n {
		h[i] = kgo.RecordHeader{Key: keys[i], Value: buf[from:ends[i]:ends[i]]}
		from = ends[i]
	}
	return &kgo.Record{Topic: r.Topic, Key: buf[:keyEnd:keyEnd], Value: r.Payload, Headers: h}
}

// sourcePrefix and contentTypeJSON: ce_source is sourcePrefix + provider
// (Source); content-type is always JSON.
const (
	sourcePrefix    = "/webhooks/"
	contentTypeJSON = "application/json"
)

// receivedAtLayout writes gatehouse_received_at: RFC 3339 with exactly
// microseconds (timestamptz's precision), so the value read back equals
// the stored one.
const receivedAtLayout = "2006-01-02T15:04:05.000000Z07:00"

// ErrMalformedRecord is wrapped by every Decode error: the record breaks
// the contract and can never become decodable by waiting.
var ErrMalformedRecord = errors.New("record does not follow the gatehouse contract")

// Decode reads a record of a provider's topic (main, retry or dead-letter).
// It fails, wrapping ErrMalformedRecord, when gatehouse_provider, ce_id or
// ce_type is missing, gatehouse_attempt is not a positive integer, ce_time
// is not RFC 3339, or the value is not a JSON object. A
// gatehouse_received_at that is not RFC 3339 is ignored (ReceivedAt zero).
func Decode(rec *kgo.Record) (Record, error) {
	h := Headers(rec)
	r := Record{
		Topic: rec.Topic, Key: string(rec.Key), Provider: h[HeaderProvider], EventID: h[HeaderID],
		Type: h[HeaderType], OutboxID: h[HeaderOutboxID], Payload: rec.Value, Attempt: 1, Via: h[HeaderVia],
	}
	if v := h[HeaderAttempt]; v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return Record{}, fmt.Errorf("%w: header %s=%q is not a positive integer", ErrMalformedRecord, HeaderAttempt, v)
		}
		r.Attempt = n
	}
	for _, k := range []string{HeaderProvider, HeaderID, HeaderType} {
		if h[k] == "" {
			return Record{}, fmt.Errorf("%w: missing header %s", ErrMalformedRecord, k)
		}
	}
	if v := h[HeaderTime]; v != "" {
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return Record{}, fmt.Errorf("%w: header %s: %w", ErrMalformedRecord, HeaderTime, err)
		}
		r.Time, r.TimeText = t, v
	}
	// gatehouse_received_at is only a hint to find the stored event: a
	// value that is not RFC 3339 is ignored, not a reason to refuse the
	// record.
	if t, err := time.Parse(time.RFC3339Nano, h[HeaderReceivedAt]); err == nil {
		r.ReceivedAt = t
	}
	if v := bytes.TrimSpace(rec.Value); len(v) == 0 || v[0] != '{' || !json.Valid(v) {
		return Record{}, fmt.Errorf("%w: value is not a JSON envelope", ErrMalformedRecord)
	}
	return r, nil
}

// Headers returns a record's headers as a map (the last value of a repeated
// key wins).
func Headers(rec *kgo.Record) map[string]string {
	m := make(map[string]string, len(rec.Headers))
	for _, h := range rec.Headers {
		m[h.Key] = string(h.Value)
	}
	return m
}
