package ingest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/gatehouse/gatehouse/ingest/inbox"
)

// serve is one delivery's walk, a step a call: the cheap refusals before
// any of the body is read, the raw bytes, their signature, a slot of the
// provider's share, the events parsed, their atomic write, the answer. The
// delivery is observed (metrics, the console's rollup, its log line, its
// span) once, when it is answered.
func (r *Receiver) serve(w http.ResponseWriter, req *http.Request, ep *endpoint) {
	if r.refuseEarly(w, req, ep) {
		return
	}
	ctx, d := r.begin(w, req, ep)
	defer r.end(ctx, d)
	body, res, ok := r.verified(ctx, d, req)
	if !ok {
		return
	}
	// Only a verified delivery takes a slot of its provider's share: a
	// client without the secret, however slow, cannot hold them.
	if !r.admit(ctx, d) {
		return
	}
	defer r.leave(d)
	// Parse only after verification.
	if status, ok := answerHandshake(w, req.Header, ep, body, res); ok {
		d.status, d.outcome = status, OutcomeChallenge
		return
	}
	recs, ok := r.parse(ctx, d, req, body, res)
	if !ok {
		return
	}
	outs, ok := r.write(ctx, d, recs)
	if !ok {
		return
	}
	if r.settle(d, outs) {
		d.status = acknowledge(w, ep.kind, body) // at once, after the commit
	}
}

// refuseEarly refuses, before any of the body is read, a body declared
// too large and a delivery of a provider at its share (admission).
func (r *Receiver) refuseEarly(w http.ResponseWriter, req *http.Request, ep *endpoint) bool {
	if req.ContentLength > ep.p.MaxBodyBytes {
		r.refuse(w, req, ep, reasonTooLarge, http.StatusRequestEntityTooLarge, fmt.Sprintf("body exceeds %d bytes", ep.p.MaxBodyBytes))
		return true
	}
	if reason := r.adm.Check(ep.share); reason != "" {
		r.refuse(w, req, ep, reason, ep.share.Status(), "overloaded: retry later")
		return true
	}
	return false
}

// fail answers the delivery with status and msg, Retry-After with a 503
// or 429.
func (r *Receiver) fail(d *delivery, status int, outcome DeliveryOutcome, msg string) {
	d.status, d.outcome = status, outcome
	if status == http.StatusServiceUnavailable || status == http.StatusTooManyRequests {
		d.w.Header().Set("Retry-After", strconv.Itoa(int(r.cfg.RetryAfter/time.Second)))
	}
	http.Error(d.w, msg, status)
}

// write stores recs, the inbox rows and, for the new ones, their outbox
// jobs, within WriteTimeout: a batch's events are written together and
// acknowledged once all of them are committed. The time it took teaches
// the admission's capacity estimate (leave).
func (r *Receiver) write(ctx context.Context, d *delivery, recs []inbox.Record) ([]inbox.Outcome, bool) {
	wctx, cancel := context.WithTimeout(ctx, r.cfg.WriteTimeout)
	defer cancel()
	wstart := time.Now()
	outs, err := r.record(wctx, recs)
	d.writeTime = time.Since(wstart)
	if errors.Is(err, inbox.ErrBadEnvelope) { // PostgreSQL refused the content itself
		d.reason = err.Error()
		r.fail(d, http.StatusBadRequest, OutcomeBadRequest, "event cannot be stored: its JSON is refused by the database")
		return nil, false
	}
	if err != nil {
		d.err = err
		r.fail(d, http.StatusServiceUnavailable, OutcomeUnavailable, "event not recorded; retry later")
		return nil, false
	}
	return outs, true
}

// settle reads the write's outcomes into the delivery: accepted when one
// event at least is new, else a duplicate; a token replayed under another
// event id is refused instead (it reports false, answered).
func (r *Receiver) settle(d *delivery, outs []inbox.Outcome) bool {
	ep := d.ep
	if len(outs) == 1 && outs[0].Replayed {
		d.reason, d.verified = "replayed", false
		r.m.verifyFails.WithLabelValues(ep.name, d.reason).Inc()
		r.fail(d, StatusVerificationFailed, OutcomeRejectedSignature, VerificationFailed)
		return false
	}
	d.outcome = OutcomeDuplicate
	for i, out := range outs {
		if i == 0 {
			d.state, d.attempt = out.State, out.Attempts
		}
		if out.WriteSpan.IsValid() && (i == 0 || out.WriteSpan.SpanID() != outs[i-1].WriteSpan.SpanID()) {
			d.span.AddLink(trace.Link{SpanContext: out.WriteSpan}) // the statement(s) that wrote the delivery's events
		}
		if !out.New {
			r.m.duplicates.WithLabelValues(ep.name).Inc()
			if out.DuplicateOf != "" {
				d.reason = "signed content already recorded under another id"
			}
			continue
		}
		if d.outcome != OutcomeAccepted {
			d.outcome, d.queueID = OutcomeAccepted, out.OutboxID.String()
		}
	}
	if len(outs) == 0 { // an empty batch holds no event: nothing to record
		d.outcome = OutcomeAccepted
	}
	return true
}
