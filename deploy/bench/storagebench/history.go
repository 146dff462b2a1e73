package main

import (
	"context"
	"fmt"
	"io"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/sync/errgroup"

	"github.com/gatehouse/gatehouse/api"
	"github.com/gatehouse/gatehouse/deploy/bench/benchenv"
)

// apiBench times the read model's pages (50, as the console) on the history
// store, the cases interleaved, and writes the subsection.
func apiBench(ctx context.Context, w io.Writer, pool *pgxpool.Pool, o options) error {
	var deep api.EventCursor
	err := pool.QueryRow(ctx, `SELECT received_at, provider, event_id FROM inbox WHERE received_at < now() - make_interval(days => $1)
ORDER BY received_at DESC, provider DESC, event_id DESC LIMIT 1`, o.days/2).Scan(&deep.ReceivedAt, &deep.Provider, &deep.EventID)
	if err != nil {
		return fmt.Errorf("deep cursor: %w", err)
	}
	var someID, someProvider string // the oldest event left (the retention passes dropped the oldest days)
	if err := pool.QueryRow(ctx, `SELECT provider, event_id FROM inbox ORDER BY received_at LIMIT 1`).Scan(&someProvider, &someID); err != nil {
		return fmt.Errorf("an old event: %w", err)
	}
	month := time.Now().AddDate(0, 0, -o.days-1)
	// Each list query's first page and deep keyset page (o.days/2 days back),
	// timed, and the last of each.
	ts := []struct {
		name string
		f    api.EventFilter
		lat  [2]*benchenv.Hist
		page [2]api.EventPage
	}{
		{name: "no filter"},
		{name: "processing_state=dead (indexed)", f: api.EventFilter{State: "dead"}},
		{name: "since 30 days ago (indexed)", f: api.EventFilter{Since: &month}},
		{name: "provider+event_id (indexed)", f: api.EventFilter{Provider: someProvider, EventID: someID}},
		{name: "provider=stripe (70 %, scan)", f: api.EventFilter{Provider: "stripe"}},
		{name: "provider=hubspot (1 %, scan)", f: api.EventFilter{Provider: "hubspot"}},
		{name: "type=charge.dispute.created (0.07 %, scan)", f: api.EventFilter{Type: "charge.dispute.created"}},
		{name: "type=charge.dispute.created since 30 days ago", f: api.EventFilter{Type: "charge.dispute.created", Since: &month}},
		{name: "event_id alone (scan)", f: api.EventFilter{EventID: someID}},
	}
	ib := api.Inbox{Pool: pool}
	for range o.apiSamples {
		for i := range ts {
			t := &ts[i]
			for k, cur := range []*api.EventCursor{nil, &deep} {
				if t.lat[k] == nil {
					t.lat[k] = benchenv.NewHist()
				}
				start := time.Now()
				p, err := ib.ListEvents(ctx, t.f, cur, 50)
				if err != nil {
					return fmt.Errorf("%s: %w", t.name, err)
				}
				t.lat[k].Record(time.Since(start))
				t.page[k] = p
			}
		}
	}
	fmt.Fprintf(w, "\n### API and console pages on the history store\n\n")
	fmt.Fprintf(w, "`api.Inbox.ListEvents` (the read model of `GET /api/v1/events` and the console's events page), 50 a page, on the history store after the runs above; a deep page starts at a keyset cursor %d days back. Median (worst) of %d interleaved samples; target ≤ 200 ms. A scan filter reads at most %d rows a page and, without since/until, only the last 24 h (window).\n\n",
		o.days/2, o.apiSamples, api.ScanBudget)
	tb := benchenv.NewTable(w, "query", "first page ms", "rows", "deep page ms", "rows")
	for _, t := range ts {
		cells := []any{t.name}
		for k, p := range t.page {
			rows := fmt.Sprint(len(p.Events))
			if p.Window != nil {
				rows += ", window"
			}
			if p.Partial {
				rows += ", partial"
			}
			cells = append(cells, fmt.Sprintf("%s (%s)", ms(t.lat[k].Q(0.5)), ms(t.lat[k].Q(1))), rows)
		}
		tb.Row(cells...)
	}
	return nil
}

// span is one partition to create: [starts, ends) of parent.
type span struct {
	parent       string
	starts, ends time.Time
}

// layout replaces the migration's partitions: daily inbox and o.keyInterval
// key partitions from o.days ago to two days ahead, hourly outbox ones from
// today; it returns those before today (the history's).
func layout(ctx context.Context, pool *pgxpool.Pool, o options) (past []span, err error) {
	if err := benchenv.DropPartitions(ctx, pool); err != nil {
		return nil, err
	}
	today := time.Now().UTC().Truncate(24 * time.Hour)
	from, to := today.AddDate(0, 0, -o.days), today.AddDate(0, 0, 3)
	origin := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC) // aligns partitions exactly as internal/storage does
	var all []span
	add := func(parent string, start time.Time, step time.Duration) {
		for t := start; t.Before(to); t = t.Add(step) {
			all = append(all, span{parent, t, t.Add(step)})
		}
	}
	add("inbox", from, 24*time.Hour)
	add("dedupe_keys", origin.Add(from.Sub(origin)/o.keyInterval*o.keyInterval), o.keyInterval)
	add("outbox", today, time.Hour) // as outbox_partition_interval's default (empty in both stores: old ones are never touched)
	for _, s := range all {
		if s.starts.Before(today) {
			past = append(past, s)
		}
		if _, err := pool.Exec(ctx, `SELECT storage_create_partition($1, $2, $3)`, s.parent, s.starts, s.ends); err != nil {
			return nil, fmt.Errorf("create partition %s from %s: %w", s.parent, s.starts, err)
		}
	}
	return past, nil
}

// bytesPerEvent is what an event of the history takes on disk: its inbox row
// and indexes (~840 B) and its keys (~165 B), measured at 50 M.
const bytesPerEvent = 1000

// diskFor fails when the file system holding dir has less room than the
// history needs (with 10 %% and 2 GB to spare for WAL and the runs), so a
// long load does not end in a full disk.
func diskFor(dir string, history int) error {
	var fs syscall.Statfs_t
	if err := syscall.Statfs(dir, &fs); err != nil {
		return fmt.Errorf("free disk under %s: %w", dir, err)
	}
	free, need := int64(fs.Bavail)*int64(fs.Bsize), int64(history)*bytesPerEvent*11/10+2<<30
	if free < need {
		return fmt.Errorf("a history of %d events needs about %.1f GB under %s, %.1f GB free: pass a smaller -history", history, float64(need)/1e9, dir, float64(free)/1e9)
	}
	return nil
}

// load fills the past partitions with o.history events over o.days days and
// their keys, two partitions at a time, and vacuums and analyzes them.
func load(ctx context.Context, pool *pgxpool.Pool, o options, past []span, logf func(string, ...any)) error {
	for _, parent := range []string{"inbox", "dedupe_keys"} {
		t := time.Now()
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(2)
		for _, s := range past {
			if s.parent != parent {
				continue
			}
			g.Go(func() error {
				q, args := fillDaySQL, []any{s.starts, s.ends, o.history / max(1, o.days)}
				if parent == "dedupe_keys" {
					q, args = `INSERT INTO dedupe_keys (provider, event_id, gen) SELECT provider, event_id, $1 FROM inbox WHERE received_at >= $1 AND received_at < $2`, args[:2]
				}
				if _, err := pool.Exec(gctx, q, args...); err != nil {
					return fmt.Errorf("fill %s from %s: %w", s.parent, s.starts, err)
				}
				return nil
			})
		}
		if err := g.Wait(); err != nil {
			return err
		}
		logf("%s loaded: %s", parent, time.Since(t).Round(time.Second))
	}
	for _, q := range []string{`VACUUM (ANALYZE) inbox, dedupe_keys`, `CHECKPOINT`} {
		if _, err := pool.Exec(ctx, q); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	return nil
}

// fillDaySQL fills a day's inbox partition with $3 events received between
// $1 and $2: random ids, ~450-byte Stripe-like envelopes, common and rare
// providers, types and states (each subquery level draws once per row).
const fillDaySQL = `INSERT INTO inbox (provider, event_id, event_type, payload, received_at, event_created_at, verified, secret_id, processing_state, attempts, updated_at)
SELECT p, id, t, jsonb_build_object('id', id, 'object', 'event', 'type', t, 'created', extract(epoch FROM at)::bigint, 'livemode', true,
    'api_version', '2024-06-20', 'data', jsonb_build_object('object', jsonb_build_object('id', 'pi_' || left(md5(id), 24), 'amount', amount,
      'currency', 'usd', 'customer', c, 'receipt_email', c || '@example.com', 'status', 'succeeded',
      'metadata', jsonb_build_object('order_id', 'ord_' || right(md5(id), 12))))),
  at, at - interval '1 second', true, 'live', s, CASE WHEN s IN ('dead', 'retrying') THEN 3 ELSE 1 END, at + interval '1 second'
FROM (SELECT *, CASE p
    WHEN 'stripe' THEN CASE WHEN r < .4 THEN 'payment_intent.succeeded' WHEN r < .7 THEN 'charge.succeeded' WHEN r < .9 THEN 'invoice.paid'
      WHEN r < .999 THEN 'customer.updated' ELSE 'charge.dispute.created' END
    WHEN 'github' THEN CASE WHEN r < .6 THEN 'push' WHEN r < .9 THEN 'pull_request' WHEN r < .9999 THEN 'issues' ELSE 'repository.deleted' END
    WHEN 'shopify' THEN CASE WHEN r < .5 THEN 'orders/create' WHEN r < .99 THEN 'orders/updated' ELSE 'refunds/create' END
    ELSE CASE WHEN r < .8 THEN 'contact.creation' ELSE 'contact.deletion' END END AS t
  FROM (SELECT 'evt_' || left(md5(random()::text), 24) AS id, r2 AS r, at, amount, c,
      CASE WHEN r1 < .7 THEN 'stripe' WHEN r1 < .9 THEN 'github' WHEN r1 < .99 THEN 'shopify' ELSE 'hubspot' END AS p,
      CASE WHEN r3 < .97 THEN 'succeeded' WHEN r3 < .985 THEN 'skipped' WHEN r3 < .995 THEN 'ignored_stale' WHEN r3 < .998 THEN 'retrying' ELSE 'dead' END AS s
    FROM (SELECT random() AS r1, random() AS r2, random() AS r3, $1::timestamptz + random() * ($2::timestamptz - $1::timestamptz) AS at,
        (random() * 100000)::int AS amount, 'cus_' || lpad((random() * 200000)::int::text, 6, '0') AS c
      FROM generate_series(1, $3::int)) d) e) f`
