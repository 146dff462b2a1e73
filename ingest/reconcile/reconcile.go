// Package reconcile compares a provider's own record of what it sent with
// the inbox over a window and closes the difference: it backfills, through
// ingest/inbox's Writer, each event of the provider's event list the inbox
// lacks (Stripe), or asks the provider to redeliver each delivery whose
// event was never stored (GitHub, and GitLab's resend of a hook's event),
// as the catalogue declares per scheme
// (providers.Reconcile). A pass runs on one instance at a time per
// provider, resumes from a durable cursor (reconcile_passes) and is
// bounded (max_events).
package reconcile

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/time/rate"

	"github.com/gatehouse/gatehouse/ingest/inbox"
	"github.com/gatehouse/gatehouse/internal/settings"
	"github.com/gatehouse/gatehouse/schemas/providers"
)

// Writer stores a backfilled event: *inbox.Writer.
type Writer interface {
	Write(ctx context.Context, rec inbox.Record) (inbox.Outcome, error)
}

// Config configures the Reconciler of one provider.
type Config struct {
	// Provider is the endpoint's name (providers.<name>); Kind its
	// scheme's catalogue entry, whose Reconcile.Way says how.
	Provider string
	Kind     providers.Kind
	Settings settings.Reconcile
	// APIURL and APIKey reach the provider's API with the account's
	// credential; APIVersion is sent in VersionHeader when both are set.
	APIURL        string
	APIKey        []byte
	APIVersion    string
	VersionHeader string
	// RateLimit caps calls per second (api_rate_limit; 0: none), with
	// bursts of RateBurst (default 5% of the limit, at least 1).
	RateLimit float64
	RateBurst int
	// DedupeWindow is the provider's dedupe window (dedupe_window): a pass
	// never reaches further back than it, less a margin, so an event whose
	// key may be forgotten is never stored twice. Required.
	DedupeWindow time.Duration
	// KeyLifetime is a backfilled event's inbox.Record KeyLifetime, the
	// receiver's for the provider; default DedupeWindow.
	KeyLifetime time.Duration
	// Topic and AggregateIDPath make a backfilled event's outbox row as
	// the receiver makes a webhook's.
	Topic           string
	AggregateIDPath []string
	Pool            *pgxpool.Pool
	Writer          Writer // required for backfill
	Logger          *slog.Logger
	Metrics         *Metrics // nil: NewMetrics(nil)
	Now             func() time.Time
	// Timeout bounds one API call; default 30s.
	Timeout time.Duration
}

// Reconciler runs the passes of one provider.
type Reconciler struct {
	cfg  Config
	way  string
	list providers.EventList // the event list a backfill reads
	// gitlab: the hook's events are resent (resendGitLab), paced by
	// resends across passes.
	gitlab  bool
	resends *rate.Limiter
}

// margin keeps a pass this far inside the dedupe window: a key written at
// the window's very edge, or a provider clock ahead of gatehouse's, could
// otherwise expire between the check and the write.
const margin = 10 * time.Minute

// New returns the Reconciler of cfg.Provider. It fails when the scheme
// cannot be reconciled or a required setting is missing.
func New(cfg Config) (*Reconciler, error) {
	way := cfg.Kind.Reconcile.Way
	var list providers.EventList
	switch {
	case cfg.Settings.List != nil && way != providers.ReconcileRedeliver:
		way, list = providers.ReconcileBackfill, *cfg.Settings.List
	case cfg.Kind.Reconcile.Events != nil:
		list = *cfg.Kind.Reconcile.Events
	}
	if way == providers.ReconcileBackfill {
		if err := list.Validate("reconcile.list"); err != nil {
			return nil, fmt.Errorf("reconcile %s: %w", cfg.Provider, err)
		}
	}
	if way == "" {
		return nil, fmt.Errorf("reconcile %s: scheme %q cannot be reconciled: %s", cfg.Provider, cfg.Kind.Scheme, cfg.Kind.Reconcile.Reason)
	}
	if cfg.Pool == nil || cfg.APIURL == "" || cfg.DedupeWindow <= margin {
		return nil, fmt.Errorf("reconcile %s: a pool, an api_url and a dedupe window longer than %s are required", cfg.Provider, margin)
	}
	if way == providers.ReconcileBackfill && cfg.Writer == nil {
		return nil, fmt.Errorf("reconcile %s: backfill needs a Writer", cfg.Provider)
	}
	gitlab := cfg.Kind.Scheme == "gitlab"
	hook := cfg.Settings.Hook
	switch {
	case way != providers.ReconcileRedeliver:
	case gitlab && !gitlabHook(hook):
		return nil, fmt.Errorf("reconcile %s: hook: %q is not project or group", cfg.Provider, hook)
	case !gitlab && (gitlabHook(hook) || cfg.Settings.DeliveriesPath() == ""):
		return nil, fmt.Errorf("reconcile %s: hook: %q is not repository, organization or app", cfg.Provider, hook)
	}
	if gitlab && cfg.DedupeWindow < settings.GitLabDedupeWindow {
		return nil, fmt.Errorf("reconcile %s: the dedupe window %s is shorter than %s: GitLab's hook events carry no time, so it must cover their %s",
			cfg.Provider, cfg.DedupeWindow, settings.GitLabDedupeWindow, settings.GitLabHistory)
	}
	cfg.Settings.ApplyDefaults()
	if cfg.KeyLifetime < cfg.DedupeWindow {
		cfg.KeyLifetime = cfg.DedupeWindow
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Metrics == nil {
		cfg.Metrics = NewMetrics(nil)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	r := &Reconciler{cfg: cfg, way: way, list: list, gitlab: gitlab}
	if gitlab {
		r.resends = newResendLimiter()
	}
	return r, nil
}

// Way is how the provider is reconciled: providers.ReconcileBackfill or
// ReconcileRedeliver.
func (r *Reconciler) Way() string { return r.way }

// Options shape one pass.
type Options struct {
	// Since, when set, checks the window (now-Since, now] (clamped to the
	// dedupe window) instead of the one the durable cursor gives, and
	// leaves the cursor where it is (`gatehouse reconcile --since`).
	Since time.Duration
	// DryRun lists what is missing and changes nothing: no event stored,
	// no redelivery asked for, no cursor moved.
	DryRun bool
	// Progress, when set, is called after each page with the counts so far.
	Progress func(Result)
}

// Result is what a pass did.
type Result struct {
	Way      string
	From, To time.Time // the window checked
	Listed   int       // events or deliveries the provider listed in it
	// Missing are the ids of the events the inbox lacked (backfill: event
	// ids; redeliver: delivery guids), in the order found.
	Missing []string
	// Closed is how many of them were stored (backfill) or redelivered.
	Closed int
	// Raced counts missing events stored meanwhile by their webhook: the
	// backfill's write was a duplicate.
	Raced int
	// Truncated: the pass stopped at max_events; the next one resumes
	// (GitLab: the older hook events were not checked).
	Truncated bool
	// Deferred counts missing events whose resend did not fit in the pass
	// (GitLab: five a minute for each hook); a later pass resends them.
	Deferred int
	Calls    int // API calls made
}

// ErrNoProgress is Pass's error when max_events items share the time the
// pass stopped at: resuming there would list them again for ever.
var ErrNoProgress = errors.New("a bounded pass cannot make progress")

// ErrBusy is Pass's error when another instance runs a pass of the same
// provider.
var ErrBusy = errors.New("another instance is reconciling this provider")

// Pass runs one pass: it takes the provider's lock, reads the cursor,
// lists the provider's record over the window, closes what is missing and
// moves the cursor. A failed pass moves no cursor and keeps what it
// stored; the next pass checks the same window again.
func (r *Reconciler) Pass(ctx context.Context, opt Options) (Result, error) {
	start := r.cfg.Now()
	res := Result{Way: r.way}
	conn, err := r.cfg.Pool.Acquire(ctx)
	if err != nil {
		return res, fmt.Errorf("reconcile %s: %w", r.cfg.Provider, err)
	}
	defer conn.Release()
	var locked bool
	if err := conn.QueryRow(ctx, tryLockSQL, r.cfg.Provider).Scan(&locked); err != nil {
		return res, fmt.Errorf("reconcile %s: lock: %w", r.cfg.Provider, err)
	}
	if !locked {
		return res, ErrBusy
	}
	defer func() {
		// a fresh context: the lock must go back even when ctx ended
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_, _ = conn.Exec(uctx, unlockSQL, r.cfg.Provider)
	}()

	st, err := loadState(ctx, r.cfg.Pool, r.cfg.Provider)
	if err != nil {
		return res, fmt.Errorf("reconcile %s: %w", r.cfg.Provider, err)
	}
	w := r.window(st, start, opt.Since)
	res.From, res.To = w.from, w.before
	if !opt.DryRun {
		if err := markRunning(ctx, r.cfg.Pool, r.cfg.Provider, r.way, start); err != nil {
			return res, fmt.Errorf("reconcile %s: %w", r.cfg.Provider, err)
		}
	}
	oldest, err := r.run(ctx, w, opt, &res)
	// GitLab's hook events carry no time: each pass lists them all again,
	// and the cursor only records the pass
	timed := !r.gitlab
	if err == nil && timed && res.Truncated && !oldest.Before(w.before) {
		// the bound was reached within one instant: the next pass would
		// list the same items again and never get past them
		err = fmt.Errorf("%w: more than max_events (%d) items at %s: raise max_events", ErrNoProgress, r.cfg.Settings.MaxEvents, oldest.UTC().Format(time.RFC3339))
	}
	end := r.cfg.Now()
	r.cfg.Metrics.duration.WithLabelValues(r.cfg.Provider).Observe(end.Sub(start).Seconds())
	if err != nil {
		err = fmt.Errorf("reconcile %s: %w", r.cfg.Provider, err)
		r.cfg.Metrics.passes.WithLabelValues(r.cfg.Provider, "failed").Inc()
		r.cfg.Logger.Error("reconciliation pass failed", "provider", r.cfg.Provider, "way", r.way,
			"listed", res.Listed, "missing", len(res.Missing), "closed", res.Closed, "err", err)
		if !opt.DryRun {
			if serr := saveFailed(context.WithoutCancel(ctx), r.cfg.Pool, r.cfg.Provider, end, res, err); serr != nil {
				r.cfg.Logger.Error("record the failed pass", "provider", r.cfg.Provider, "err", serr)
			}
		}
		return res, err
	}
	r.cfg.Metrics.passes.WithLabelValues(r.cfg.Provider, "ok").Inc()
	r.cfg.Metrics.lastSuccess.WithLabelValues(r.cfg.Provider).Set(float64(end.UnixMilli()) / 1000)
	r.cfg.Logger.Info("reconciliation pass", "provider", r.cfg.Provider, "way", r.way, "from", w.from, "to", w.before,
		"listed", res.Listed, "missing", len(res.Missing), "closed", res.Closed, "raced", res.Raced,
		"truncated", res.Truncated, "deferred", res.Deferred, "calls", res.Calls, "dry_run", opt.DryRun)
	if opt.DryRun {
		return res, nil
	}
	next := st.next(w, timed && res.Truncated, oldest, opt.Since > 0)
	if err := saveOK(ctx, r.cfg.Pool, r.cfg.Provider, end, res, next); err != nil {
		return res, fmt.Errorf("reconcile %s: %w", r.cfg.Provider, err)
	}
	return res, nil
}

// run lists and closes the window's difference the provider's way; oldest
// is the time of the oldest item listed when the pass was truncated.
func (r *Reconciler) run(ctx context.Context, w window, opt Options, res *Result) (time.Time, error) {
	c, err := newClient(r.cfg.APIURL, r.cfg.APIKey, r.cfg.APIVersion, r.cfg.VersionHeader, r.cfg.RateLimit, r.cfg.RateBurst,
		r.cfg.Timeout, func() { r.cfg.Metrics.apiErrors.WithLabelValues(r.cfg.Provider).Inc() })
	if err != nil {
		return time.Time{}, err
	}
	c.basic = r.list.Auth == providers.AuthBasic
	defer func() { res.Calls = c.calls }()
	if r.gitlab {
		c.authHeader = gitlabAuthHeader
		return time.Time{}, r.resendGitLab(ctx, c, opt, res)
	}
	if !w.before.After(w.from) {
		return time.Time{}, nil
	}
	if r.way == providers.ReconcileBackfill {
		return r.backfill(ctx, c, w, opt, res)
	}
	return r.redeliver(ctx, c, w, opt, res)
}

// missing records one missing event: counted, logged by its id (never its
// payload).
func (r *Reconciler) missing(res *Result, id string, at time.Time, opt Options) {
	res.Missing = append(res.Missing, id)
	r.cfg.Metrics.missing.WithLabelValues(r.cfg.Provider, r.way).Inc()
	attrs := []any{"provider", r.cfg.Provider, "way", r.way, "id", id, "dry_run", opt.DryRun}
	if !at.IsZero() { // GitLab's hook events carry no time
		attrs = append(attrs, "at", at)
	}
	r.cfg.Logger.Warn("event missing from the inbox", attrs...)
}

// Run runs a pass every Settings.Interval until ctx ends, the first one
// at once; a pass another instance holds the lock for is skipped (that
// instance runs it). A failed pass is logged and counted; the next one
// checks its window again. It returns nil when ctx ends.
func (r *Reconciler) Run(ctx context.Context) error {
	t := time.NewTicker(r.cfg.Settings.Interval)
	defer t.Stop()
	for {
		if _, err := r.Pass(ctx, Options{}); errors.Is(err, ErrBusy) {
			r.cfg.Logger.Debug("reconciliation pass skipped: another instance holds the lock", "provider", r.cfg.Provider)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
