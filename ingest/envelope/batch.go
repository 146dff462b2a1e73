package envelope

import (
	"fmt"
	"net/http"
	"time"

	"github.com/tidwall/gjson"

	"github.com/gatehouse/gatehouse/ingest/signature"
	"github.com/gatehouse/gatehouse/schemas/providers"
)

// Parse maps a verified delivery into the events it holds: one, or
// for a Batch kind (SendGrid, HubSpot) one per element of the body's
// array, each with its own id, type and time from the kind's fields,
// wrapped as {"id","type","created_at","data": <element>}.
func Parse(k providers.Kind, h http.Header, body []byte, res signature.Result, now time.Time) ([]Event, error) {
	if !k.Batch {
		ev, err := parseDelivery(k, h, body, res, now)
		if err != nil {
			return nil, err
		}
		return []Event{ev}, nil
	}
	if err := storable(body); err != nil {
		return nil, err
	}
	root := gjson.ParseBytes(body)
	if !root.IsArray() {
		return nil, fmt.Errorf("%w: a batch body must be a JSON array of events", errBadEnvelope)
	}
	var evs []Event
	var err error
	root.ForEach(func(_, item gjson.Result) bool {
		if !item.IsObject() {
			err = fmt.Errorf("%w: event %d of the batch is not a JSON object", errBadEnvelope, len(evs))
			return false
		}
		var ev Event
		if ev, err = parseFields(k, h, []byte(item.Raw), signature.Result{}, now); err != nil {
			err = fmt.Errorf("event %d of the batch: %w", len(evs), err)
			return false
		}
		evs = append(evs, ev)
		return true
	})
	return evs, err
}
