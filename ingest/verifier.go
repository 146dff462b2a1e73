package ingest

import (
	"time"

	"github.com/gatehouse/gatehouse/ingest/signature"
)

// DeliveryEventIDs are the event ids the receiver records for a delivery
// of p (verified and parsed exactly as Receiver.serve does): `gatehouse
// send --body FILE` prints the ids the provider's own body gives, not one
// it made up.
func DeliveryEventIDs(p *Provider, r *signature.Request, now time.Time) ([]string, error) {
	v, err := signature.New(p.Signature)
	if err != nil {
		return nil, err
	}
	res, err := v.Verify(r, now)
	if err != nil {
		return nil, err
	}
	evs, err := parseEvents(p.Kind, r.Header, r.Body, res, now)
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(evs))
	for i, ev := range evs {
		ids[i] = ev.ID
	}
	return ids, nil
}
