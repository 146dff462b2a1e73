package ingest

import (
	"context"
	"fmt"
	"net/http"

	"golang.org/x/sync/errgroup"

	"github.com/gatehouse/gatehouse/ingest/envelope"
	"github.com/gatehouse/gatehouse/ingest/inbox"
	"github.com/gatehouse/gatehouse/ingest/signature"
	"github.com/gatehouse/gatehouse/internal/tracing"
)

// records maps evs to the rows to write, each with its aggregate id, and
// refuses the delivery (inbox.ErrBadEnvelope, naming the field and the
// event of a batch) when an id, type or aggregate id exceeds its cap
// (envelope.CheckLengths).
func (r *Receiver) records(ep *endpoint, evs []envelope.Event, secretID, traceparent string) ([]inbox.Record, error) {
	recs := make([]inbox.Record, len(evs))
	for i, ev := range evs {
		agg, found := inbox.AggregateID(ev.Root, ep.p.AggregateIDPath)
		if !found {
			agg = ev.ID
			r.m.noAggregate.WithLabelValues(ep.name).Inc()
		}
		recs[i] = inbox.Record{Provider: ep.name, EventID: ev.ID, Type: ev.Type, CreatedAt: ev.CreatedAt, EventTime: ev.Time, Payload: ev.Payload,
			SecretID: secretID, AggregateID: agg, Topic: ep.p.Topic, KeyLifetime: ep.keyLife,
			Traceparent: traceparent}
		if err := envelope.CheckLengths(recs[i]); err != nil {
			if len(evs) > 1 || ep.kind.Batch {
				return nil, fmt.Errorf("event %d of the batch: %w", i, err)
			}
			return nil, err
		}
	}
	return recs, nil
}

// record writes recs (their inbox rows and outbox jobs) and returns each
// one's outcome; the events of a batch are written concurrently, so the
// Writer coalesces them into as few statements as it can.
func (r *Receiver) record(ctx context.Context, recs []inbox.Record) ([]inbox.Outcome, error) {
	outs := make([]inbox.Outcome, len(recs))
	if len(recs) == 1 {
		out, err := r.cfg.Writer.Write(ctx, recs[0])
		outs[0] = out
		return outs, err
	}
	g, gctx := errgroup.WithContext(ctx)
	for i := range recs {
		g.Go(func() error {
			out, err := r.cfg.Writer.Write(gctx, recs[i])
			outs[i] = out
			return err
		})
	}
	return outs, g.Wait()
}

// parse maps the verified body into the rows to write, each with its
// trace context, a single event's with its replay-guard record.
func (r *Receiver) parse(ctx context.Context, d *delivery, req *http.Request, body []byte, res signature.Result) ([]inbox.Record, bool) {
	ep := d.ep
	evs, err := envelope.Parse(ep.kind, req.Header, body, res, r.cfg.Now())
	if err != nil {
		d.reason = err.Error()
		r.fail(d, http.StatusBadRequest, OutcomeBadRequest, err.Error())
		return nil, false
	}
	d.events, d.batch = len(evs), ep.kind.Batch
	recs, err := r.records(ep, evs, res.SecretID, tracing.Traceparent(ctx))
	if err != nil {
		d.reason = err.Error()
		r.fail(d, http.StatusBadRequest, OutcomeBadRequest, err.Error())
		return nil, false
	}
	if len(evs) > 0 {
		d.eventID, d.typ = evs[0].ID, evs[0].Type
	}
	if len(recs) == 1 { // a Batch kind keeps no guard
		recs[0].Guard = guardKey(ep, req.URL.RawQuery, body, res)
	}
	return recs, true
}
