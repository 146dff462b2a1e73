package consumers

import (
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gatehouse/gatehouse/consumers/event"
	"github.com/gatehouse/gatehouse/schemas"
)

// decode turns a record of a provider's topic into an event.Event (the contract
// is schemas.Record). Every failure is permanent: the record can never
// become decodable by waiting.
func decode(rec *kgo.Record, provider string) (*event.Event, error) {
	r, err := schemas.Decode(rec)
	if err != nil {
		return nil, event.Permanentf("decode record: %w", err)
	}
	if r.Provider != provider {
		return nil, event.Permanentf("decode record: provider %q on the topic of provider %q", r.Provider, provider)
	}
	var env struct {
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(r.Payload, &env); err != nil {
		return nil, event.Permanentf("decode record: value is not a JSON envelope: %w", err)
	}
	return &event.Event{
		Provider: r.Provider, ID: r.EventID, Type: r.Type, ObjectKey: r.Key, CreatedAt: r.Time,
		Envelope: r.Payload, Data: env.Data, OutboxID: r.OutboxID, Attempt: r.Attempt, ReceivedAt: r.ReceivedAt,
		Origin: originOf(rec),
	}, nil
}

// originOf is rec's position in its main topic: its gatehouse_original_*
// headers (a retry topic's record), else its own.
func originOf(rec *kgo.Record) event.Origin {
	o := event.Origin{Topic: rec.Topic, Partition: rec.Partition, Offset: rec.Offset, Timestamp: rec.Timestamp}
	h := schemas.Headers(rec)
	topic, ok := h[schemas.HeaderOriginTopic]
	if !ok {
		return o
	}
	p, perr := strconv.ParseInt(h[schemas.HeaderOriginPartition], 10, 32)
	off, oerr := strconv.ParseInt(h[schemas.HeaderOriginOffset], 10, 64)
	ts, terr := time.Parse(time.RFC3339Nano, h[schemas.HeaderOriginTimestamp])
	if perr != nil || oerr != nil || terr != nil {
		return event.Origin{Topic: topic, Offset: -1} // headers that do not parse: the position is unknown
	}
	return event.Origin{Topic: topic, Partition: int32(p), Offset: off, Timestamp: ts}
}

// peekIdentity reads provider and event id from the headers of a record that
// may not decode, so its inbox row can still be marked dead.
func peekIdentity(rec *kgo.Record) (provider, id string) {
	h := schemas.Headers(rec)
	return h[schemas.HeaderProvider], h[schemas.HeaderID]
}

// isNotice reports whether ev is an erasure notice (schemas.ErasureNoticeType):
// a record an erasure published, not an event. It gets no claim, fetch or
// effect: it has no inbox row, and the erasure already removed the
// projections in the consumers' tables; it is sent on to the provider's
// forward destinations that take notices (notice.go).
func isNotice(ev *event.Event) bool { return ev.Type == schemas.ErasureNoticeType }

// isErased reports whether ev's value is the erasure marker (an event erased
// before the relay published it): there is nothing left to fetch by, and a
// fetch would recreate a projection the erasure removed, so no handler runs
// and the event is skipped.
func isErased(ev *event.Event) bool {
	_, ok := schemas.ErasedPayload(ev.Envelope)
	return ok
}

var errNoInbox = errors.New("no verified inbox row for this event")
