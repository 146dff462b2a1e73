package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/user"
	"strings"
	"time"

	"github.com/gatehouse/gatehouse/ingest/admin"
	"github.com/gatehouse/gatehouse/wiring"
)

func runReplay(ctx context.Context, e env, args []string) error {
	fs, cfgPath := newFlags("replay", e)
	provider := fs.String("provider", "", "provider of the event(s); required with --event-id")
	eventID := fs.String("event-id", "", "replay this one event")
	dead := fs.Bool("dead", false, "replay every dead event matching --provider, --type and --since")
	typ := fs.String("type", "", "with --dead: only this event type")
	since := fs.String("since", "", "with --dead: only events dead since this RFC 3339 time or for this long (e.g. 24h)")
	limit := fs.Int("limit", 0, "with --dead: at most this many events (0: all)")
	dryRun := fs.Bool("dry-run", false, "list what would be replayed, change nothing")
	force := fs.Bool("force", false, "also replay an event that already finished (succeeded, ignored_stale, skipped) or is in processing")
	b, err := loadBase(ctx, e, fs, cfgPath, args)
	if err != nil {
		return err
	}
	defer b.close()
	who := "gatehouse replay"
	if u, err := user.Current(); err == nil {
		who += " by " + u.Username
	}
	switch {
	case *dead == (*eventID != ""):
		return errors.New("replay: give either --event-id (with --provider) or --dead")
	case *eventID != "":
		if *provider == "" {
			return errors.New("replay: --event-id needs --provider")
		}
		target, err := replayTarget(wiring.ReplayTargets(b.cfg), *provider)
		if err != nil {
			return err
		}
		if *dryRun {
			fmt.Fprintf(e.stdout, "dry run: would replay %s/%s to %s\n", *provider, *eventID, target.Topic)
			return nil
		}
		res, err := admin.Replay(ctx, b.pool, target, admin.ReplayRequest{
			Provider: *provider, EventID: *eventID, Force: *force, RequestedBy: who, Tracer: b.tp})
		if err != nil {
			return err
		}
		traced := ""
		attrs := []any{"provider", *provider, "event_id", *eventID, "queue_id", res.OutboxID.String(),
			"previous_state", res.PreviousState, "attempt", res.PrevAttempts}
		if res.Trace.IsValid() {
			traced = " trace_id=" + res.Trace.String()
			attrs = append(attrs, "trace_id", res.Trace.String())
		}
		fmt.Fprintf(e.stdout, "replayed %s/%s outbox_id=%s previous_state=%s previous_attempts=%d%s\n",
			*provider, *eventID, res.OutboxID, res.PreviousState, res.PrevAttempts, traced)
		b.log.Info("event replayed", attrs...)
		return nil
	}
	f := admin.DeadFilter{Provider: *provider, Type: *typ, Limit: *limit}
	if *since != "" {
		if f.Since, err = parseSince(*since, time.Now()); err != nil {
			return err
		}
	}
	if *provider != "" {
		if _, ok := b.cfg.Providers[*provider]; !ok {
			return fmt.Errorf("replay: provider %q is not configured", *provider)
		}
	}
	evs, err := admin.FindDead(ctx, b.pool, f)
	if err != nil {
		return err
	}
	if *dryRun {
		for _, d := range evs {
			fmt.Fprintf(e.stdout, "%s\t%s\t%s\tattempts=%d\tdead_since=%s\t%s\n", d.Provider, d.EventID, d.Type,
				d.Attempts, d.UpdatedAt.UTC().Format(time.RFC3339), d.LastError)
		}
		fmt.Fprintf(e.stdout, "dry run: %d dead event(s) would be replayed\n", len(evs))
		return nil
	}
	bar := newProgress(e.stderr, len(evs))
	replayed, failed := 0, 0
	targets := wiring.ReplayTargets(b.cfg) // once, not per event
	for _, d := range evs {
		if ctx.Err() != nil {
			break
		}
		target, err := replayTarget(targets, d.Provider)
		if err == nil {
			_, err = admin.Replay(ctx, b.pool, target, admin.ReplayRequest{
				Provider: d.Provider, EventID: d.EventID, RequestedBy: who, Tracer: b.tp})
		}
		if err != nil {
			failed++
			b.log.Warn("replay failed", "provider", d.Provider, "event_id", d.EventID, "err", err)
		} else {
			replayed++
		}
		bar.step()
	}
	bar.finish()
	fmt.Fprintf(e.stdout, "replayed %d of %d dead event(s), %d failed\n", replayed, len(evs), failed)
	if failed > 0 {
		return fmt.Errorf("replay: %d event(s) could not be replayed", failed)
	}
	return ctx.Err()
}

func replayTarget(targets map[string]admin.ReplayTarget, provider string) (admin.ReplayTarget, error) {
	t, err := admin.ReplayTargetFor(targets, provider)
	if err != nil {
		return t, fmt.Errorf("replay: %w", err)
	}
	return t, nil
}

// parseSince accepts an RFC 3339 time or a duration before now.
func parseSince(v string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return time.Time{}, fmt.Errorf("replay: --since %q is neither an RFC 3339 time nor a positive duration", v)
	}
	return now.Add(-d), nil
}

// progress draws a one-line progress bar on w.
type progress struct {
	w      io.Writer
	total  int
	done   int
	drawn  time.Time
	width  int
	closed bool
}

func newProgress(w io.Writer, total int) *progress {
	p := &progress{w: w, total: total, width: 30}
	p.draw()
	return p
}

func (p *progress) step() {
	p.done++
	if time.Since(p.drawn) > 100*time.Millisecond || p.done == p.total {
		p.draw()
	}
}

func (p *progress) draw() {
	p.drawn = time.Now()
	filled := p.width
	if p.total > 0 {
		filled = p.width * p.done / p.total
	}
	pct := 100
	if p.total > 0 {
		pct = 100 * p.done / p.total
	}
	fmt.Fprintf(p.w, "\r[%s%s] %d/%d %3d%%", strings.Repeat("#", filled), strings.Repeat(".", p.width-filled), p.done, p.total, pct)
}

func (p *progress) finish() {
	if !p.closed {
		p.draw()
		fmt.Fprintln(p.w)
		p.closed = true
	}
}
