package ingest

import (
	"context"
	"github.com/gatehouse/gatehouse/ingest/admission"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Refusal reasons the edge adds to admission's (the reason label of
// gatehouse_webhook_refused_total).
const (
	reasonTooLarge = "too_large" // Content-Length or the body past max_body_bytes (413)
	reasonSlowBody = "slow_body" // the body came slower than min_body_rate (408)
	// reasonBodyBudget: the unverified bodies being read hold what the
	// provider may of max_unverified_bytes (503, admission.Bytes);
	// reasonClientBytes: those of the client's address hold
	// max_unverified_bytes_per_client.
	reasonBodyBudget  = "unverified_bytes"
	reasonClientBytes = "client_unverified_bytes"
)

// refusalLog logs refusals at most once per second per provider and
// reason, with the number since the last line: a flood is refused at the
// cost of a counter, not of a log line each.
type refusalLog struct {
	mu   sync.Mutex
	last map[[2]string]time.Time
	n    map[[2]string]*atomic.Int64
}

func (l *refusalLog) log(ctx context.Context, logger *slog.Logger, provider, reason string, status int) {
	k := [2]string{provider, reason}
	l.mu.Lock()
	if l.last == nil {
		l.last, l.n = map[[2]string]time.Time{}, map[[2]string]*atomic.Int64{}
	}
	c := l.n[k]
	if c == nil {
		c = &atomic.Int64{}
		l.n[k] = c
	}
	now := time.Now()
	due := now.Sub(l.last[k]) >= time.Second
	if due {
		l.last[k] = now
	}
	l.mu.Unlock()
	n := c.Add(1)
	if !due {
		return
	}
	c.Add(-n)
	logger.LogAttrs(ctx, slog.LevelWarn, "webhook refused", slog.String("provider", provider), slog.String("reason", reason),
		slog.Int("response_status", status), slog.Int64("refused", n))
}

// refuse answers a delivery refused before its body was read: the status,
// Retry-After when a retry can succeed, counted and (sampled) logged.
func (r *Receiver) refuse(w http.ResponseWriter, req *http.Request, ep *endpoint, reason string, status int, msg string) {
	r.m.refused.WithLabelValues(ep.name, reason).Inc()
	if reason == admission.ReasonOverShare && !r.hold(req.Context()) {
		w.Header().Set("Connection", "close")
	}
	if status == http.StatusServiceUnavailable || status == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", strconv.Itoa(int(r.cfg.RetryAfter/time.Second)))
	}
	if reason == reasonTooLarge || reason == reasonSlowBody {
		w.Header().Set("Connection", "close") // the rest of the body is not worth reading
	} else if req.ContentLength != 0 {
		// net/http reads what is left of an unread body before it writes
		// the answer (to keep the connection); a body still on its way
		// would hold the refusal until the read timeout. It gets
		// refuseDrain, then the answer goes with Connection: close.
		_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(refuseDrain))
	}
	http.Error(w, msg, status)
	r.cfg.Rollup.Observe(ep.name, string(OutcomeRefused), status, 0)
	r.refusals.log(req.Context(), r.cfg.Logger, ep.name, reason, status)
}

// admit takes a slot of the delivery's provider share (admission.Slots.Acquire), or
// answers its refusal: an over-share one held first (hold).
func (r *Receiver) admit(ctx context.Context, d *delivery) bool {
	reason := r.adm.Acquire(ctx, d.ep.share, r.cfg.QueueWait)
	if reason == "" {
		return true
	}
	r.m.refused.WithLabelValues(d.ep.name, reason).Inc()
	d.reason = reason
	if reason == admission.ReasonOverShare && !r.hold(ctx) {
		d.w.Header().Set("Connection", "close")
	}
	r.fail(d, d.ep.share.Status(), OutcomeRefused, "overloaded: retry later")
	return false
}

// leave gives back the slot admit took, the capacity estimate learning
// from the write's time.
func (r *Receiver) leave(d *delivery) { r.adm.Release(d.ep.share, d.writeTime) }

// hold holds an over-share refusal for RefusalHold before it is answered
// (admission), or until ctx ends. It reports false, without waiting, when
// MaxHeldRefusals are held already: that refusal is answered at once and
// its connection closed.
func (r *Receiver) hold(ctx context.Context) bool {
	if r.cfg.RefusalHold <= 0 {
		return true
	}
	defer r.held.Add(-1)
	if r.held.Add(1) > int64(r.cfg.MaxHeldRefusals) {
		return false
	}
	t := time.NewTimer(r.cfg.RefusalHold)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
	return true
}

// refuseDrain bounds how long a refusal waits for the rest of a body the
// handler did not read (a provider's small body has arrived by then).
const refuseDrain = 20 * time.Millisecond

// newShare is p's share of a global bound of total; unset fields (a
// Provider not built by config.Parse) take config's defaults.
func newShare(p *Provider, total int) *admission.Share {
	return admission.NewShare(p.MaxInFlight, p.ReservedInFlight, p.OverloadStatus, total)
}
