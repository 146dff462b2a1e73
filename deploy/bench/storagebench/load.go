package main

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/sync/errgroup"

	"github.com/gatehouse/gatehouse/deploy/bench/benchenv"
)

// origin aligns partitions exactly as internal/storage does.
var origin = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// span is one partition to create: [starts, ends) of parent.
type span struct {
	parent       string
	starts, ends time.Time
}

func (s span) name() string { return s.parent + "_p" + s.starts.UTC().Format("20060102t150405") }

// layout replaces the migration's partitions by the bench's (through
// storage_create_partition, empty): daily inbox partitions from o.days ago
// to two days ahead, dedupe key partitions o.keyInterval wide (aligned like
// the maintenance's) over the same range, and hourly outbox partitions
// from today on. It returns those that start before today: the history's.
func layout(ctx context.Context, pool *pgxpool.Pool, o options) (past []span, err error) {
	if err := benchenv.DropPartitions(ctx, pool); err != nil {
		return nil, err
	}
	today := time.Now().UTC().Truncate(24 * time.Hour)
	from, to := today.AddDate(0, 0, -o.days), today.AddDate(0, 0, 3)
	var all []span
	for d := from; d.Before(to); d = d.AddDate(0, 0, 1) {
		all = append(all, span{"inbox", d, d.AddDate(0, 0, 1)})
	}
	for k := origin.Add(from.Sub(origin) / o.keyInterval * o.keyInterval); k.Before(to); k = k.Add(o.keyInterval) {
		all = append(all, span{"dedupe_keys", k, k.Add(o.keyInterval)})
	}
	// The outbox log, hourly as storage.outbox_partition_interval's
	// default, from today to the end of the layout (empty in both stores:
	// the outbox keeps a day, and its old partitions are tables the
	// receiver's insert never touches).
	for h := today; h.Before(to); h = h.Add(time.Hour) {
		all = append(all, span{"outbox", h, h.Add(time.Hour)})
	}
	for _, s := range all {
		if s.starts.Before(today) {
			past = append(past, s)
		}
		if _, err := pool.Exec(ctx, `SELECT storage_create_partition($1, $2, $3)`, s.parent, s.starts, s.ends); err != nil {
			return nil, fmt.Errorf("create partition %s: %w", s.name(), err)
		}
	}
	return past, nil
}

// load fills the past partitions with o.history earlier events spread
// evenly over the past days (fillDaySQL), then their keys from the inbox,
// o.loadWorkers partitions at a time, and vacuums and analyzes them.
func load(ctx context.Context, pool *pgxpool.Pool, o options, past []span, logf func(string, ...any)) error {
	days := 0
	for _, s := range past {
		if s.parent == "inbox" {
			days++
		}
	}
	for _, parent := range []string{"inbox", "dedupe_keys"} {
		t := time.Now()
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(o.loadWorkers)
		for _, s := range past {
			if s.parent != parent {
				continue
			}
			g.Go(func() error {
				q, args := fillDaySQL, []any{s.starts, s.ends, o.history / max(1, days)}
				if parent == "dedupe_keys" {
					q, args = `INSERT INTO dedupe_keys (provider, event_id, gen) SELECT provider, event_id, $1 FROM inbox WHERE received_at >= $1 AND received_at < $2`, args[:2]
				}
				if _, err := pool.Exec(gctx, q, args...); err != nil {
					return fmt.Errorf("fill %s: %w", s.name(), err)
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

// fillDaySQL fills a day's inbox partition with $3 events received between $1
// and $2: random ids, a Stripe-like envelope of ~450 bytes, and a few
// common and rare providers, types and states (the API benchmark filters
// by the rare ones). Each level of subqueries draws its random values once
// per row (a subquery with volatile functions is not flattened).
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
