package console

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// providerStats reads the overview's per-provider figures with three
// queries that each read an index, never the whole inbox (the overview
// refreshes every 5 s, whatever the history kept):
//
//   - received in the last hour: the inbox's time index, in the newest
//     partition(s);
//   - waiting, retrying, dead and the oldest not final: the inbox's
//     (processing_state, received_at) index, over the events in those
//     states only;
//   - finished in the last hour: the consumers' processed_events by its
//     processed_at index (one row per processed event, with its outcome).
func (c *Console) providerStats(ctx context.Context) ([]ProviderStats, error) {
	by := map[string]*ProviderStats{}
	get := func(p string) *ProviderStats {
		if by[p] == nil {
			by[p] = &ProviderStats{Provider: p}
		}
		return by[p]
	}
	type part struct {
		sql  string
		scan func(pgx.Rows) error
	}
	parts := []part{
		{`SELECT provider, count(*) FROM inbox WHERE received_at > now() - interval '1 hour' GROUP BY provider`, func(r pgx.Rows) error {
			var p string
			var n int64
			err := r.Scan(&p, &n)
			get(p).ReceivedHour = n
			return err
		}},
		{`SELECT provider, processing_state, count(*), min(received_at) FROM inbox
WHERE processing_state IN ('pending', 'processing', 'retrying', 'dead') GROUP BY 1, 2`, func(r pgx.Rows) error {
			var p, state string
			var n int64
			var oldest time.Time
			if err := r.Scan(&p, &state, &n, &oldest); err != nil {
				return err
			}
			s := get(p)
			switch state {
			case "pending", "processing":
				s.Pending += n
			case "retrying":
				s.Retrying = n
			case "dead":
				s.Dead = n
				return nil
			}
			if s.OldestOpen == nil || oldest.Before(*s.OldestOpen) {
				s.OldestOpen = &oldest
			}
			return nil
		}},
		{`SELECT provider, outcome, count(*) FROM processed_events WHERE processed_at > now() - interval '1 hour' GROUP BY 1, 2`, func(r pgx.Rows) error {
			var p, outcome string
			var n int64
			if err := r.Scan(&p, &outcome, &n); err != nil {
				return err
			}
			s := get(p)
			switch outcome {
			case "succeeded":
				s.Succeeded = n
			case "ignored_stale":
				s.Stale = n
			case "skipped":
				s.Skipped = n
			}
			return nil
		}},
	}
	for _, q := range parts {
		rows, err := c.cfg.Pool.Query(ctx, q.sql)
		if err != nil {
			return nil, fmt.Errorf("overview: %w", err)
		}
		for rows.Next() {
			if err := q.scan(rows); err != nil {
				rows.Close()
				return nil, fmt.Errorf("overview: %w", err)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("overview: %w", err)
		}
	}
	out := make([]ProviderStats, 0, len(by))
	for _, s := range by {
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b ProviderStats) int { return strings.Compare(a.Provider, b.Provider) })
	return out, nil
}

// Reconciliation is a provider's last reconciliation pass
// (reconcile_passes): when it ran, how it ended, what it found.
type Reconciliation struct {
	Provider, Way, Result   string // Result: running, ok or failed
	StartedAt               time.Time
	FinishedAt, LastSuccess *time.Time
	Listed, Missing, Closed int64
	Error                   string
}

// reconcileStats reads every provider's last reconciliation pass.
func (c *Console) reconcileStats(ctx context.Context) ([]Reconciliation, error) {
	rows, err := c.cfg.Pool.Query(ctx, `SELECT provider, way, result, started_at, finished_at, last_success_at, listed, missing, closed, coalesce(error, '')
FROM reconcile_passes ORDER BY provider`)
	if err != nil {
		return nil, fmt.Errorf("overview: reconciliation: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Reconciliation, error) {
		var x Reconciliation
		err := r.Scan(&x.Provider, &x.Way, &x.Result, &x.StartedAt, &x.FinishedAt, &x.LastSuccess, &x.Listed, &x.Missing, &x.Closed, &x.Error)
		return x, err
	})
	if err != nil {
		return nil, fmt.Errorf("overview: reconciliation: %w", err)
	}
	return out, nil
}
