package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/sync/errgroup"

	"github.com/gatehouse/gatehouse/deploy/bench/benchenv"
)

// origin aligns partitions exactly as internal/storage does.
const origin = `timestamptz '2000-01-01 00:00:00+00'`

// span is one partition to create: [starts, ends) of parent.
type span struct {
	parent       string
	starts, ends time.Time
}

func (s span) name() string { return s.parent + "_p" + s.starts.UTC().Format("20060102t150405") }

// layout replaces the migration's partitions by the bench's: daily inbox
// partitions from o.days ago to two days ahead, dedupe key partitions
// o.keyInterval wide (aligned like the maintenance's) over the same range,
// and hourly outbox partitions from today on.
// With history it returns the partitions that start before today (to
// load; the key partition covering now among them) and creates the
// others (through storage_create_partition, empty); without, it creates
// them all.
func layout(ctx context.Context, pool *pgxpool.Pool, o options, history bool) (past []span, err error) {
	if err := benchenv.DropPartitions(ctx, pool); err != nil {
		return nil, err
	}
	var today time.Time
	if err := pool.QueryRow(ctx, `SELECT date_trunc('day', now(), 'UTC')`).Scan(&today); err != nil {
		return nil, err
	}
	from, to := today.AddDate(0, 0, -o.days), today.AddDate(0, 0, 3)
	var all []span
	for d := from; d.Before(to); d = d.AddDate(0, 0, 1) {
		all = append(all, span{"inbox", d, d.AddDate(0, 0, 1)})
	}
	var k time.Time
	if err := pool.QueryRow(ctx, `SELECT date_bin($1::interval, $2::timestamptz, `+origin+`)`, o.keyInterval, from).Scan(&k); err != nil {
		return nil, err
	}
	for ; k.Before(to); k = k.Add(o.keyInterval) {
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
		if history && s.starts.Before(today) {
			past = append(past, s)
			continue
		}
		if _, err := pool.Exec(ctx, `SELECT storage_create_partition($1, $2, $3)`, s.parent, s.starts, s.ends); err != nil {
			return nil, fmt.Errorf("create partition %s: %w", s.name(), err)
		}
	}
	return past, nil
}

// load fills the past partitions with n earlier events spread evenly over
// the past days, fast: each partition is a plain table loaded without
// indexes (inbox rows by COPY, generated here; keys by INSERT … SELECT
// from the loaded inbox tables), then indexed (a sorted build instead of n
// random inserts), vacuumed and analyzed, and attached, workers at a time.
// Without history the past partitions are created empty.
func load(ctx context.Context, pool *pgxpool.Pool, o options, past []span, logf func(string, ...any)) error {
	var inboxes, keys []span
	for _, s := range past {
		if s.parent == "inbox" {
			inboxes = append(inboxes, s)
		} else {
			keys = append(keys, s)
		}
	}
	perDay := o.history / max(1, len(inboxes))
	step := func(what string, spans []span, f func(context.Context, int, span) error) error {
		t := time.Now()
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(o.loadWorkers)
		for i, s := range spans {
			g.Go(func() error { return f(gctx, i, s) })
		}
		if err := g.Wait(); err != nil {
			return err
		}
		logf("%s: %s", what, time.Since(t).Round(time.Second))
		return nil
	}
	exec := func(ctx context.Context, sql string, args ...any) error {
		_, err := pool.Exec(ctx, sql, args...)
		return err
	}
	if err := step("tables created", past, func(ctx context.Context, _ int, s span) error {
		return exec(ctx, fmt.Sprintf(`CREATE TABLE %s (LIKE %s INCLUDING DEFAULTS INCLUDING CONSTRAINTS)`, ident(s.name()), ident(s.parent)))
	}); err != nil {
		return err
	}
	if err := step("inbox rows copied", inboxes, func(ctx context.Context, i int, s span) error {
		return copyDay(ctx, pool, s, perDay, uint64(i))
	}); err != nil {
		return err
	}
	if err := step("keys derived", keys, func(ctx context.Context, _ int, k span) error {
		for _, d := range inboxes {
			if d.ends.After(k.starts) && d.starts.Before(k.ends) {
				err := exec(ctx, fmt.Sprintf(`INSERT INTO %s (provider, event_id, gen) SELECT provider, event_id, $1 FROM %s WHERE received_at >= $1 AND received_at < $2`,
					ident(k.name()), ident(d.name())), k.starts, k.ends)
				if err != nil {
					return fmt.Errorf("derive keys of %s: %w", k.name(), err)
				}
			}
		}
		return nil
	}); err != nil {
		return err
	}
	if err := step("indexed, vacuumed, attached", past, func(ctx context.Context, _ int, s span) error {
		return finish(ctx, pool, s)
	}); err != nil {
		return err
	}
	_, err := pool.Exec(ctx, `CHECKPOINT`)
	return err
}

// finish builds s's indexes (storage_create_partition's), vacuums and
// analyzes it, attaches it and records it in storage_partitions.
func finish(ctx context.Context, pool *pgxpool.Pool, s span) error {
	n := ident(s.name())
	stmts := []string{}
	if s.parent == "dedupe_keys" {
		stmts = append(stmts, `ALTER TABLE `+n+` ADD PRIMARY KEY (provider, event_id, gen)`)
	} else {
		rows, err := pool.Query(ctx, `SELECT unnest(indexes) FROM storage_tables WHERE parent = $1`, s.parent)
		if err != nil {
			return err
		}
		cols, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		for _, c := range cols {
			stmts = append(stmts, `CREATE INDEX ON `+n+` `+c)
		}
	}
	stmts = append(stmts, `VACUUM (ANALYZE) `+n,
		fmt.Sprintf(`ALTER TABLE %s ATTACH PARTITION %s FOR VALUES FROM ('%s') TO ('%s')`, ident(s.parent), n,
			s.starts.UTC().Format(time.RFC3339), s.ends.UTC().Format(time.RFC3339)))
	for _, q := range stmts {
		if _, err := pool.Exec(ctx, q); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	_, err := pool.Exec(ctx, `INSERT INTO storage_partitions (parent, name, starts, ends) VALUES ($1, $2, $3, $4)`, s.parent, s.name(), s.starts, s.ends)
	return err
}

func ident(s string) string { return pgx.Identifier{s}.Sanitize() }

// Providers, event types and states of the history, with their shares:
// a few common ones and rare ones (which the API benchmark filters by).
var (
	histProviders = []weighted{{"stripe", 70}, {"github", 20}, {"shopify", 9}, {"hubspot", 1}}
	histTypes     = map[string][]weighted{
		"stripe":  {{"payment_intent.succeeded", 40}, {"charge.succeeded", 30}, {"invoice.paid", 20}, {"customer.updated", 9.9}, {"charge.dispute.created", 0.1}},
		"github":  {{"push", 60}, {"pull_request", 30}, {"issues", 9.99}, {"repository.deleted", 0.01}},
		"shopify": {{"orders/create", 50}, {"orders/updated", 49}, {"refunds/create", 1}},
		"hubspot": {{"contact.creation", 80}, {"contact.deletion", 20}},
	}
	histStates = []weighted{{"succeeded", 97}, {"skipped", 1.5}, {"ignored_stale", 1}, {"retrying", 0.3}, {"dead", 0.2}}
)

type weighted struct {
	v string
	w float64
}

func pick(rng *rand.Rand, ws []weighted) string {
	total := 0.0
	for _, x := range ws {
		total += x.w
	}
	r := rng.Float64() * total
	for _, x := range ws {
		if r -= x.w; r < 0 {
			return x.v
		}
	}
	return ws[len(ws)-1].v
}

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// randID is prefix and n random base62 characters (Stripe-like ids).
func randID(rng *rand.Rand, prefix string, n int) string {
	b := make([]byte, len(prefix)+n)
	copy(b, prefix)
	for i := len(prefix); i < len(b); i++ {
		b[i] = base62[rng.IntN(62)]
	}
	return string(b)
}

// copyDay COPYs n events received during s (a day) into its table: random
// ids, times uniform over the day, a Stripe-like envelope of ~450 bytes.
func copyDay(ctx context.Context, pool *pgxpool.Pool, s span, n int, seed uint64) error {
	rng := rand.New(rand.NewPCG(seed, uint64(s.starts.Unix())))
	width := s.ends.Sub(s.starts)
	i := 0
	src := pgx.CopyFromFunc(func() ([]any, error) {
		if i == n {
			return nil, nil
		}
		i++
		p := pick(rng, histProviders)
		typ := pick(rng, histTypes[p])
		state := pick(rng, histStates)
		at := s.starts.Add(time.Duration(rng.Int64N(int64(width))))
		id := randID(rng, "evt_", 24)
		cust := fmt.Sprintf("cus_%06d", rng.IntN(200_000))
		payload, _ := json.Marshal(map[string]any{
			"id": id, "object": "event", "type": typ, "created": at.Unix(), "livemode": true, "api_version": "2024-06-20",
			"data": map[string]any{"object": map[string]any{
				"id": randID(rng, "pi_", 24), "amount": rng.IntN(100_000), "currency": "usd", "customer": cust,
				"receipt_email": cust + "@example.com", "status": "succeeded", "metadata": map[string]string{"order_id": randID(rng, "ord_", 12)},
			}},
		})
		attempts := 1
		if state == "dead" || state == "retrying" {
			attempts = 3
		}
		return []any{p, id, typ, json.RawMessage(payload), at, at.Add(-time.Second), true, "live", state, attempts, at.Add(time.Second)}, nil
	})
	_, err := pool.CopyFrom(ctx, pgx.Identifier{s.name()},
		[]string{"provider", "event_id", "event_type", "payload", "received_at", "event_created_at", "verified", "secret_id", "processing_state", "attempts", "updated_at"}, src)
	if err != nil {
		return fmt.Errorf("copy into %s: %w", s.name(), err)
	}
	return nil
}
