package consumers

import (
	"context"
	"strconv"
	"time"

	"github.com/gatehouse/gatehouse/internal/text"
	"github.com/gatehouse/gatehouse/internal/tracing"
	"github.com/gatehouse/gatehouse/schemas"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gatehouse/gatehouse/consumers/event"
)

// handle processes one record of a retry topic to its end, through the
// stages of a batch of one: decode, claim, handle and apply
// (processEvent), settle: applied, ignored, or forwarded to the next retry
// topic or the dead-letter topic. It returns false when the record could
// not be finished (the forward failed or processing was cut off by the
// drain timeout); the record must then stay unmarked.
func (m *membership) handle(ctx context.Context, rec *kgo.Record, role topicRole) bool {
	r := m.r
	start := r.cfg.Now()
	w := &work{rec: rec, role: role}
	w.ctx, w.span = r.startEvent(ctx, rec)
	if w.ev, w.err = decode(rec, role.provider); w.err == nil {
		w.outcome, w.err = r.processEvent(w.ctx, w.ev)
	}
	if w.err != nil {
		w.outcome, w.done = m.fail(w.ctx, rec, role, w.ev, w.err)
	} else {
		w.done = true
	}
	r.settleRecord(w, start)
	return w.done
}

// fail finishes a record whose processing failed: it forwards the record to
// the next retry topic or the dead-letter topic and records the failure on
// the inbox row. It returns the outcome, and false when the record could
// not be finished (ctx ended, or the forward was not acknowledged): the
// record must then stay unmarked.
func (m *membership) fail(ctx context.Context, rec *kgo.Record, role topicRole, ev *event.Event, err error) (string, bool) {
	r := m.r
	if ctx.Err() != nil {
		return "", false
	}
	attempt := 1
	if ev != nil {
		attempt = ev.Attempt
	}
	class := event.Classify(err)
	f := r.layout.next(role, attempt, class, r.cfg.Now())
	out := forwardRecord(rec, f, class, err)
	fspan := r.traceForward(ctx, out, f.dead)
	perr := produce(ctx, m.cl, out)
	endSpan(fspan, perr)
	if perr != nil {
		r.log.ErrorContext(ctx, "forward failed; record left unmarked", "topic", rec.Topic, "partition", rec.Partition,
			"offset", rec.Offset, "to", f.topic, "err", perr)
		return "", false
	}
	state, next, outcome := schemas.StateRetrying, &f.dueAt, OutcomeRetried
	if f.dead {
		state, next, outcome = schemas.StateDead, nil, OutcomeDeadLettered
	}
	provider, id := peekIdentity(rec)
	if f.dead && r.cfg.Handlers.Ordered() && provider == role.provider && id != "" {
		if herr := r.store.headDead(ctx, provider, id, FailureSummary(err)); herr != nil { // on_dead of the keys parked behind it (parking.go)
			r.log.ErrorContext(ctx, "parked keys behind a dead-lettered event", "provider", provider, "event_id", id, "err", herr)
		}
		if perr := r.store.dropPending(ctx, provider, id); perr != nil { // its place among parked events, when it had no row (parking_late.go)
			r.log.ErrorContext(ctx, "pending parked event of a dead-lettered event", "provider", provider, "event_id", id, "err", perr)
		}
	}
	if provider == role.provider && id != "" {
		var at *time.Time
		if ev != nil && ev.Provider == provider && ev.ID == id {
			at = receivedAt(ev)
		}
		ierr, ferr := r.store.recordFailure(ctx, provider, id, at, state, class, text.Truncate(err.Error(), maxErrorMessage), FailureSummary(err), next, event.Stage(err))
		if ferr != nil {
			r.log.ErrorContext(ctx, "record failure state", "provider", provider, "event_id", id, "err", ferr)
		}
		if ierr != nil {
			r.log.ErrorContext(ctx, "record failure issue", "provider", provider, "event_id", id, "err", ierr)
		}
	}
	r.log.WarnContext(ctx, "event processing failed", "provider", provider, "event_id", id, "topic", rec.Topic,
		"partition", rec.Partition, "offset", rec.Offset, "attempt", attempt, "error_class", class,
		"forwarded_to", f.topic, "processing_state", state, "err", err)
	return outcome, true
}

func (r *Runner) logProcessed(ctx context.Context, rec *kgo.Record, ev *event.Event, outcome string) {
	r.log.DebugContext(ctx, "event processed", "provider", ev.Provider, "event_id", ev.ID, "type", ev.Type,
		"topic", rec.Topic, "partition", rec.Partition, "offset", rec.Offset, "attempt", ev.Attempt, "outcome", outcome)
}

func (r *Runner) count(ctx context.Context, rec *kgo.Record, outcome string, start time.Time) {
	r.m.processed.WithLabelValues(r.cfg.Group, rec.Topic, itoa(rec.Partition), outcome).Inc()
	tracing.Observe(ctx, r.m.duration.WithLabelValues(r.cfg.Group, rec.Topic, outcome), r.cfg.Now().Sub(start).Seconds())
}

// processEvent runs one attempt of an event on a retry topic: claim the
// inbox row, then handle and apply it alone (handleAndApply). The retry delay has passed, so a missing row is not
// waited for: the record goes on along the ladder and ends in the
// dead-letter topic if its row never appears. Nothing is done for an event
// gatehouse has not stored as verified.
func (r *Runner) processEvent(ctx context.Context, ev *event.Event) (string, error) {
	if isNotice(ev) {
		return r.notify(ctx, ev) // not an event: sent on to the forward destinations (a batch's handle stage does the same)
	}
	prev, _, err := r.store.claim(ctx, ev)
	if err != nil {
		return "", err
	}
	if schemas.Final(prev) {
		return OutcomeDuplicate, nil
	}
	return r.handleAndApply(ctx, ev)
}

func itoa(p int32) string { return strconv.Itoa(int(p)) }
