package ingest

import (
	"context"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Admission control. Each provider has a share of the bound on deliveries
// in flight: ReservedInFlight slots that are always its own, and up to
// MaxInFlight in all (admitted or waiting), the slots past its reserve
// taken from a pool shared by every provider. The pool's size is the
// adaptive limit (gradient, limiter.go) less every reserve: what the write
// path carries at the latency it has when not saturated, never more than
// the global bound. The adaptive limit applies only while two providers
// or more are active (a delivery within the last second): it exists to
// keep one provider's flood from queueing another's deliveries, and a
// provider alone may use the whole bound.
//
//   - A delivery of a provider at its MaxInFlight is refused (over_share),
//     before its body is read; the refusal is held on a timer (RefusalHold)
//     before it is answered, as nginx's limit_req delays excess requests,
//     so a closed-loop flood waits instead of spinning on refusals: each
//     of its connections costs a timer, not a request a millisecond.
//   - A verified delivery within its share that finds the pool empty waits
//     for a slot, at most QueueWait; freed slots go to the waiting
//     providers in turn (round robin), so a provider's wait does not grow
//     with another's flood, and a latency spike makes deliveries wait
//     rather than be refused. Past QueueWait it is refused (saturated).
//
// Every refusal is 503 (or the provider's 429) with Retry-After.
type admission struct {
	mu         sync.Mutex
	shared     int // slots of the shared pool in use
	sharedSize int // its size now: the adaptive limit less the reserves (two providers active), else the global bound less them
	maxShared  int // the global bound less the reserves
	limited    int // the adaptive limit less the reserves
	shares     []*share
	reserved   int // every provider's reserve
	total      int // deliveries admitted, all providers
	limit      gradient
	waiting    []*share // shares with waiters, served in turn
	turn       int
}

// share is one provider's part of the admission bound.
type share struct {
	inFlight, max, reserved int
	status                  int             // 503 or 429
	last                    time.Time       // of its latest delivery's acquire
	queue                   []chan struct{} // waiters for a slot, oldest first
}

// Refusal reasons (the reason label of gatehouse_webhook_refused_total).
const (
	reasonOverShare = "over_share" // the provider is at its max_in_flight
	reasonSaturated = "saturated"  // no slot freed within queue_wait: the write path is behind
	reasonTooLarge  = "too_large"  // Content-Length or the body past max_body_bytes (413)
	reasonSlowBody  = "slow_body"  // the body came slower than min_body_rate (408)
	// reasonBodyBudget: the unverified bodies being read hold what the
	// provider may of max_unverified_bytes (503, bodyBudget);
	// reasonClientBytes: those of the client's address hold
	// max_unverified_bytes_per_client.
	reasonBodyBudget  = "unverified_bytes"
	reasonClientBytes = "client_unverified_bytes"
)

// setLimits sets the global bound and the providers' shares (New).
func (a *admission) setLimits(maxInFlight int, shares []*share) {
	a.shares = shares
	a.reserved = 0
	for _, s := range shares {
		a.reserved += s.reserved
	}
	a.limit = newGradient(min(maxInFlight, a.reserved+max(8, maxInFlight/16)), maxInFlight)
	a.maxShared = max(0, maxInFlight-a.reserved)
	a.limited, a.sharedSize = a.maxShared, a.maxShared
}

// activeWindow is how recently a provider must have had a delivery to
// count as active (admission).
const activeWindow = time.Second

// resize sets sharedSize from the adaptive limit when two providers or
// more are active, else the global bound (a.mu held).
func (a *admission) resize(now time.Time) {
	active := 0
	for _, s := range a.shares {
		if s.inFlight > 0 || len(s.queue) > 0 || now.Sub(s.last) < activeWindow {
			active++
		}
	}
	a.sharedSize = a.maxShared
	if active >= 2 {
		a.sharedSize = a.limited
	}
}

// check says why a delivery of s would be refused now ("" when it may go
// on), without taking a slot: the refusal before the body is read.
func (a *admission) check(s *share) (reason string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if s.inFlight+len(s.queue) >= s.max {
		return reasonOverShare
	}
	return ""
}

// acquire admits one delivery of s, waiting at most wait for a slot, or
// says why not.
func (a *admission) acquire(ctx context.Context, s *share, wait time.Duration) (reason string) {
	now := time.Now()
	a.mu.Lock()
	if now.Sub(s.last) >= activeWindow {
		s.last = now
		a.resize(now)
	} else {
		s.last = now
	}
	switch {
	case s.inFlight+len(s.queue) >= s.max:
		a.mu.Unlock()
		return reasonOverShare
	case s.inFlight < s.reserved && len(s.queue) == 0:
	case a.shared < a.sharedSize && len(a.waiting) == 0:
		a.shared++
	default:
		ch := make(chan struct{})
		s.queue = append(s.queue, ch)
		if len(s.queue) == 1 {
			a.waiting = append(a.waiting, s)
		}
		a.mu.Unlock()
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-ch:
			return ""
		case <-t.C:
		case <-ctx.Done():
		}
		a.mu.Lock()
		defer a.mu.Unlock()
		select {
		case <-ch: // granted while the timer fired
			return ""
		default:
		}
		s.queue = slices.DeleteFunc(s.queue, func(c chan struct{}) bool { return c == ch })
		if len(s.queue) == 0 {
			a.dropWaiting(s)
		}
		return reasonSaturated
	}
	s.inFlight++
	a.total++
	a.mu.Unlock()
	return ""
}

// inFlight is s's deliveries being served.
func (a *admission) inFlight(s *share) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return s.inFlight
}

// release gives back the slot of a delivery of s that acquire admitted,
// with the latency of its write (0: none measured), and hands freed slots
// to waiters.
func (a *admission) release(s *share, write time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if write > 0 {
		a.limited = max(0, a.limit.observe(write, a.total)-a.reserved)
		a.resize(time.Now())
	}
	if s.inFlight > s.reserved {
		a.shared--
	}
	s.inFlight--
	a.total--
	if len(s.queue) > 0 && s.inFlight < s.reserved { // its own reserved slot
		a.grant(s)
	}
	for a.shared < a.sharedSize && len(a.waiting) > 0 {
		a.turn %= len(a.waiting)
		w := a.waiting[a.turn]
		if w.inFlight >= w.reserved {
			a.shared++
		}
		a.grant(w)
		a.turn++
	}
}

// grant gives s's oldest waiter a slot (a.mu held).
func (a *admission) grant(s *share) {
	ch := s.queue[0]
	s.queue = s.queue[1:]
	s.inFlight++
	a.total++
	close(ch)
	if len(s.queue) == 0 {
		a.dropWaiting(s)
	}
}

func (a *admission) dropWaiting(s *share) {
	if i := slices.Index(a.waiting, s); i >= 0 {
		a.waiting = slices.Delete(a.waiting, i, i+1)
		if a.turn > i {
			a.turn--
		}
	}
}

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
	if reason == reasonOverShare && !r.hold(req.Context()) {
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

// admit takes a slot of the delivery's provider share (acquire), or
// answers its refusal: an over-share one held first (hold).
func (r *Receiver) admit(ctx context.Context, d *delivery) bool {
	reason := r.adm.acquire(ctx, d.ep.share, r.cfg.QueueWait)
	if reason == "" {
		return true
	}
	r.m.refused.WithLabelValues(d.ep.name, reason).Inc()
	d.reason = reason
	if reason == reasonOverShare && !r.hold(ctx) {
		d.w.Header().Set("Connection", "close")
	}
	r.fail(d, d.ep.share.status, OutcomeRefused, "overloaded: retry later")
	return false
}

// leave gives back the slot admit took, the capacity estimate learning
// from the write's time.
func (r *Receiver) leave(d *delivery) { r.adm.release(d.ep.share, d.writeTime) }

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
func newShare(p *Provider, total int) *share {
	s := &share{max: p.MaxInFlight, reserved: p.ReservedInFlight, status: p.OverloadStatus}
	if s.max <= 0 {
		s.max = max(1, total/4)
	}
	if s.reserved <= 0 {
		s.reserved = min(16, s.max)
	}
	if s.status != http.StatusTooManyRequests {
		s.status = http.StatusServiceUnavailable
	}
	return s
}
