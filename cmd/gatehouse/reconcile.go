package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gatehouse/gatehouse/ingest/inbox"
	"github.com/gatehouse/gatehouse/ingest/reconcile"
	"github.com/gatehouse/gatehouse/wiring"
)

// runReconcile runs one reconciliation pass of a provider now
// (`gatehouse reconcile --provider stripe --since 72h [--dry-run]`): after
// an outage, it backfills (or asks for the redelivery of) what the
// provider recorded and the inbox lacks, over the window given, printing
// a progress line per page and the counts at the end. The provider's
// reconcile section need not be enabled (its hook settings are read for
// GitHub); api_url and api_key are required.
func runReconcile(ctx context.Context, e env, args []string) error {
	fs, cfgPath := newFlags("reconcile", e)
	provider := fs.String("provider", "", "the provider to reconcile (required)")
	since := fs.Duration("since", 0, "check the provider's record of this long ago until now (e.g. 72h; default: from the durable cursor, as the scheduled pass)")
	dryRun := fs.Bool("dry-run", false, "list what is missing, change nothing (no event stored, no redelivery, no cursor moved)")
	b, err := loadBase(ctx, e, fs, cfgPath, args)
	if err != nil {
		return err
	}
	defer b.close()
	if *provider == "" {
		return errors.New("reconcile: --provider is required")
	}
	rc, ok := wiring.Reconcile(b.cfg, *provider)
	if !ok {
		return fmt.Errorf("reconcile: provider %q is not configured", *provider)
	}
	if rc.APIURL == "" {
		return fmt.Errorf("reconcile: providers.%s.api_url and api_key are required", *provider)
	}
	w, err := inbox.NewWriter(b.pool, 1, 64)
	if err != nil {
		return err
	}
	defer w.Close()
	rc.Pool, rc.Writer, rc.Logger, rc.Metrics = b.pool, w, b.log, reconcile.NewMetrics(b.reg)
	r, err := reconcile.New(rc)
	if err != nil {
		return err
	}
	verb := map[string]string{"backfill": "stored", "redeliver": "redelivered"}[r.Way()]
	start := time.Now()
	res, err := r.Pass(ctx, reconcile.Options{Since: *since, DryRun: *dryRun, Progress: func(p reconcile.Result) {
		fmt.Fprintf(e.stdout, "%s %s: listed %d, missing %d, %s %d (%s)\n", *provider, r.Way(), p.Listed, len(p.Missing), verb, p.Closed,
			time.Since(start).Round(time.Millisecond))
	}})
	if *dryRun {
		for _, id := range res.Missing {
			fmt.Fprintf(e.stdout, "missing %s/%s\n", *provider, id)
		}
	}
	if err != nil {
		if errors.Is(err, reconcile.ErrBusy) {
			return fmt.Errorf("reconcile %s: %w; try again after its pass", *provider, err)
		}
		return err
	}
	dry := ""
	if res.Deferred > 0 { // GitLab: beyond the resends a pass may ask for
		dry = fmt.Sprintf(", deferred to the next pass %d", res.Deferred)
	}
	if *dryRun {
		dry += " (dry run: nothing changed)"
	}
	fmt.Fprintf(e.stdout, "reconciled %s by %s from %s to %s: listed %d, missing %d, %s %d, stored meanwhile by their webhook %d, api calls %d, truncated %v%s\n",
		*provider, r.Way(), res.From.UTC().Format(time.RFC3339), res.To.UTC().Format(time.RFC3339),
		res.Listed, len(res.Missing), verb, res.Closed, res.Raced, res.Calls, res.Truncated, dry)
	return nil
}

// scheduledReconcile builds the reconciliation of every provider with
// reconcile.enabled, for serve to run in the background: one pass per
// interval, each under the provider's advisory lock, so one instance
// reconciles a provider at a time.
func scheduledReconcile(b *base, w *inbox.Writer) ([]func(context.Context) error, error) {
	var runs []func(context.Context) error
	var m *reconcile.Metrics
	for _, rc := range wiring.Reconciled(b.cfg) {
		if m == nil {
			m = reconcile.NewMetrics(b.reg)
		}
		rc.Pool, rc.Writer, rc.Logger, rc.Metrics = b.pool, w, b.log, m
		r, err := reconcile.New(rc)
		if err != nil {
			return nil, err
		}
		runs = append(runs, r.Run)
	}
	return runs, nil
}
