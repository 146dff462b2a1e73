// Package event is the vocabulary the consumer runner (consumers) shares
// with the handlers it runs (consumers/fetch, consumers/forward): the
// decoded Event, the Effect a handler returns, the Handler interface, the
// error classes and failure stages, and the Batch a batch hands every
// handler as an argument (the fetch memo, the forward ledger).
package event

import (
	"context"
	"encoding/json"
	"time"

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
	// Origin is where the event's record was first delivered (its main
	// topic's partition and offset); zero when unknown (an Event built
	// directly).
	Origin Origin
	// Replay: the record is a replay (an operator's, through the outbox)
	// of an event gatehouse had already processed; a destination ordered
	// per object is told so (Gatehouse-Replay). Set by the consumers on
	// their copy for such a delivery.
	Replay bool
}

// Origin is the position of an event's record in its main topic. A retry
// topic's record carries it in its gatehouse_original_* headers.
type Origin struct {
	Topic     string
	Partition int32
	Offset    int64
	Timestamp time.Time
}

// Path reads a dotted path ("object.id") from the event's data member and
// returns the string or number found there.
func (e *Event) Path(path string) (string, bool) { return schemas.LookupPathJSON(e.Data, path) }

// StoredEnvelope is the stored envelope; for an Event built with Data
// alone (a handler called directly), {"data": Data}.
func (e *Event) StoredEnvelope() []byte {
	if len(e.Envelope) == 0 && len(e.Data) > 0 {
		return append(append([]byte(`{"data":`), e.Data...), '}')
	}
	return e.Envelope
}

// Effect is the business action of one event: the authoritative state of a
// provider object, applied to the projection under the version guard. An
// Effect without ObjectID is an action done elsewhere (a forward): the
// event succeeds and nothing is projected.
type Effect struct {
	ObjectType string          // e.g. payment, invoice, payment_intent
	ObjectID   string          // the provider's object id
	Version    int64           // only a strictly greater version replaces the stored one
	Data       json.RawMessage // the object as the provider's API returned it
}

// Handler processes one event of batch b, whose memo coalesces its fetches
// with the batch's other events' and whose ledger remembers its forwards.
// It returns the effect to apply, or nil when the event needs none. Errors
// are classified with Classify: wrap permanent ones with Permanent.
type Handler interface {
	Handle(ctx context.Context, ev *Event, b *Batch) (*Effect, error)
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, ev *Event, b *Batch) (*Effect, error)

// Handle calls f.
func (f HandlerFunc) Handle(ctx context.Context, ev *Event, b *Batch) (*Effect, error) {
	return f(ctx, ev, b)
}
