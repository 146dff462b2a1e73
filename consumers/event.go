package consumers

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gatehouse/gatehouse/schemas"
)

// Event is one Kafka record decoded per the contract in package schemas.
type Event struct {
	Provider  string          // gatehouse_provider header
	ID        string          // ce_id header: the provider's event id
	Type      string          // ce_type header
	ObjectKey string          // record key: the subject object id (outbox aggregateid)
	CreatedAt time.Time       // ce_time, zero when the provider gave none
	Envelope  json.RawMessage // record value: the verified envelope as received
	Data      json.RawMessage // the envelope's data member
	OutboxID  string          // gatehouse_outbox_id header
	Attempt   int             // 1-based attempt number of this processing
	// ReceivedAt is when gatehouse stored the event: the record's
	// gatehouse_received_at (zero when absent), then, once the inbox row is
	// claimed, the row's own received_at. The inbox is partitioned by it,
	// so the consumers' updates of the row read one partition.
	ReceivedAt time.Time
}

// decode turns a record of a provider's topic into an Event (the contract
// is schemas.Record). Every failure is permanent: the record can never
// become decodable by waiting.
func decode(rec *kgo.Record, provider string) (*Event, error) {
	r, err := schemas.Decode(rec)
	if err != nil {
		return nil, Permanentf("decode record: %w", err)
	}
	if r.Provider != provider {
		return nil, Permanentf("decode record: provider %q on the topic of provider %q", r.Provider, provider)
	}
	var env struct {
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(r.Payload, &env); err != nil {
		return nil, Permanentf("decode record: value is not a JSON envelope: %w", err)
	}
	return &Event{
		Provider: r.Provider, ID: r.EventID, Type: r.Type, ObjectKey: r.Key, CreatedAt: r.Time,
		Envelope: r.Payload, Data: env.Data, OutboxID: r.OutboxID, Attempt: r.Attempt, ReceivedAt: r.ReceivedAt,
	}, nil
}

// peekIdentity reads provider and event id from the headers of a record that
// may not decode, so its inbox row can still be marked dead.
func peekIdentity(rec *kgo.Record) (provider, id string) {
	h := schemas.Headers(rec)
	return h[schemas.HeaderProvider], h[schemas.HeaderID]
}

// Path reads a dotted path ("object.id") from the event's data member and
// returns the string or number found there.
func (e *Event) Path(path string) (string, bool) { return schemas.LookupPathJSON(e.Data, path) }

// notice reports whether ev is an erasure notice (schemas.ErasureNoticeType):
// a record an erasure published, not an event. It is skipped without a
// claim, a fetch or an effect: it has no inbox row, and the erasure
// already removed the projections in the consumers' tables.
func (e *Event) notice() bool { return e.Type == schemas.ErasureNoticeType }

// erased reports whether ev's value is the erasure marker (an event erased
// before the relay published it): there is nothing left to fetch by, and a
// fetch would recreate a projection the erasure removed, so no handler runs
// and the event is skipped.
func (e *Event) erased() bool {
	_, ok := schemas.ErasedPayload(e.Envelope)
	return ok
}

var errNoInbox = errors.New("no verified inbox row for this event")

// envelope is the stored envelope; for an Event built with Data alone (a
// handler called directly), {"data": Data}.
func (e *Event) envelope() []byte {
	if len(e.Envelope) == 0 && len(e.Data) > 0 {
		return append(append([]byte(`{"data":`), e.Data...), '}')
	}
	return e.Envelope
}
