package ingest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/gatehouse/gatehouse/ingest/admission"
	"github.com/gatehouse/gatehouse/ingest/envelope"
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
	evs, err := envelope.Parse(p.Kind, r.Header, r.Body, res, now)
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(evs))
	for i, ev := range evs {
		ids[i] = ev.ID
	}
	return ids, nil
}

// verified reads the raw bytes, bounded while streaming (chunked bodies
// included), and verifies their signature. A slow body is cut (408); a
// client that went away is its own failure, logged at WARN like any
// refusal, not an internal error. The unverified bytes the body holds are
// given back once the signature is checked, and whatever happens (a panic
// in a verifier included).
func (r *Receiver) verified(ctx context.Context, d *delivery, req *http.Request) ([]byte, signature.Result, bool) {
	ep := d.ep
	hold := r.bodies.Open(ep.bytes, admission.ClientKey(req.RemoteAddr))
	defer hold.Release()
	body, err := r.readBody(d.w, req, ep.p.MaxBodyBytes, hold)
	if err != nil {
		r.unread(ctx, d, err)
		return nil, signature.Result{}, false
	}
	res, err := ep.verifier.Verify(&signature.Request{Method: req.Method, RawQuery: req.URL.RawQuery, Header: req.Header, Body: body}, r.cfg.Now())
	hold.Release() // checked: past here a slot bounds it, or it is refused
	if err != nil {
		d.reason = signature.Reason(err)
		r.m.verifyFails.WithLabelValues(ep.name, d.reason).Inc()
		r.fail(d, StatusVerificationFailed, OutcomeRejectedSignature, VerificationFailed)
		return nil, signature.Result{}, false
	}
	d.verified, d.secretID = true, res.SecretID
	r.m.secret.WithLabelValues(ep.name, res.SecretID).Inc()
	return body, res, true
}

// unread answers a body that could not be read: too large, past the
// unverified-bytes budget, too slow, or broken off.
func (r *Receiver) unread(ctx context.Context, d *delivery, err error) {
	ep := d.ep
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		r.m.refused.WithLabelValues(ep.name, reasonTooLarge).Inc()
		d.w.Header().Set("Connection", "close")
		r.fail(d, http.StatusRequestEntityTooLarge, OutcomeTooLarge, fmt.Sprintf("body exceeds %d bytes", ep.p.MaxBodyBytes))
	case errors.Is(err, admission.ErrBodyBudget), errors.Is(err, admission.ErrClientBytes):
		d.reason = reasonBodyBudget
		if errors.Is(err, admission.ErrClientBytes) {
			// The address holds its bound: its refusal is held, as an
			// over-share one, so its connections wait on a timer
			// instead of coming back at once.
			d.reason = reasonClientBytes
			_ = r.hold(ctx)
		}
		r.m.refused.WithLabelValues(ep.name, d.reason).Inc()
		d.w.Header().Set("Connection", "close")
		r.fail(d, http.StatusServiceUnavailable, OutcomeRefused, "overloaded: retry later")
	case errors.Is(err, errSlowBody):
		r.m.refused.WithLabelValues(ep.name, reasonSlowBody).Inc()
		d.reason = reasonSlowBody
		d.w.Header().Set("Connection", "close")
		r.fail(d, http.StatusRequestTimeout, OutcomeSlowBody, fmt.Sprintf("request body slower than %d bytes/s", r.cfg.MinBodyRate))
	default:
		d.reason = "could not read the body: " + err.Error()
		r.fail(d, http.StatusBadRequest, OutcomeBadRequest, "could not read request body")
	}
}
