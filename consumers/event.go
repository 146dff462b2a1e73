package consumers

import (
	"encoding/json"
	"errors"
	"strconv"
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
}

// decode turns a record of a provider's topic into an Event. Every failure
// is permanent: the record can never become decodable by waiting.
func decode(rec *kgo.Record, provider string) (*Event, error) {
	h := headers(rec)
	ev := &Event{
		Provider:  h[schemas.HeaderProvider],
		ID:        h[schemas.HeaderID],
		Type:      h[schemas.HeaderType],
		ObjectKey: string(rec.Key),
		OutboxID:  h[schemas.HeaderOutboxID],
		Envelope:  rec.Value,
		Attempt:   1,
	}
	if v := h[schemas.HeaderAttempt]; v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return nil, Permanentf("decode record: header %s=%q is not a positive integer", schemas.HeaderAttempt, v)
		}
		ev.Attempt = n
	}
	if ev.Provider == "" {
		return nil, Permanentf("decode record: missing header %s", schemas.HeaderProvider)
	}
	if ev.Provider != provider {
		return nil, Permanentf("decode record: provider %q on the topic of provider %q", ev.Provider, provider)
	}
	if ev.ID == "" {
		return nil, Permanentf("decode record: missing header %s", schemas.HeaderID)
	}
	if ev.Type == "" {
		return nil, Permanentf("decode record: missing header %s", schemas.HeaderType)
	}
	if v := h[schemas.HeaderTime]; v != "" {
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return nil, Permanentf("decode record: header %s: %w", schemas.HeaderTime, err)
		}
		ev.CreatedAt = t
	}
	var env struct {
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(rec.Value, &env); err != nil {
		return nil, Permanentf("decode record: value is not a JSON envelope: %w", err)
	}
	ev.Data = env.Data
	return ev, nil
}

// peekIdentity reads provider and event id from the headers of a record that
// may not decode, so its inbox row can still be marked dead.
func peekIdentity(rec *kgo.Record) (provider, id string) {
	h := headers(rec)
	return h[schemas.HeaderProvider], h[schemas.HeaderID]
}

func headers(rec *kgo.Record) map[string]string {
	m := make(map[string]string, len(rec.Headers))
	for _, h := range rec.Headers {
		m[h.Key] = string(h.Value)
	}
	return m
}

// Path reads a dotted path ("object.id") from the event's data member and
// returns the string or number found there.
func (e *Event) Path(path string) (string, bool) { return schemas.LookupPathJSON(e.Data, path) }

var errNoInbox = errors.New("no verified inbox row for this event")
