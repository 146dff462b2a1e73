package ingest

import (
	"time"

	"github.com/gatehouse/gatehouse/ingest/signature"
	"github.com/gatehouse/gatehouse/internal/config"
)

// SignatureConfig is the verifier configuration of provider p: its kind's
// scheme, its window, headers, definition, public URL and secrets.
func SignatureConfig(p *config.Provider) signature.Config {
	sc := signature.Config{
		Scheme:          p.Kind().Scheme,
		Tolerance:       p.Tolerance,
		TimestampHeader: p.TimestampHeader,
		SignatureHeader: p.SignatureHeader,
		HMAC:            p.HMAC,
		PublicURL:       p.PublicURL,
	}
	for _, s := range p.Secrets {
		sc.Secrets = append(sc.Secrets, signature.Secret{ID: s.ID, Value: s.Resolved()})
	}
	return sc
}

// DeliveryEventIDs are the event ids the receiver records for a delivery
// of p (verified and parsed exactly as Receiver.serve does): `gatehouse
// send --body FILE` prints the ids the provider's own body gives, not one
// it made up.
func DeliveryEventIDs(p *config.Provider, r *signature.Request, now time.Time) ([]string, error) {
	v, err := signature.New(SignatureConfig(p))
	if err != nil {
		return nil, err
	}
	res, err := v.Verify(r, now)
	if err != nil {
		return nil, err
	}
	evs, err := parseEvents(p.Kind(), r.Header, r.Body, res, now)
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(evs))
	for i, ev := range evs {
		ids[i] = ev.ID
	}
	return ids, nil
}
