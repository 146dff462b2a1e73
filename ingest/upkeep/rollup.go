package upkeep

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// AckBuckets are the upper bounds (seconds) of the ack latency buckets of
// gatehouse_webhook_ack_seconds and of pipeline_minutes.ack_buckets (the
// latter with one more, +Inf).
var AckBuckets = [...]float64{.0005, .001, .002, .005, .01, .02, .05, .1, .25, .5, 1, 2.5}

// Rollup keeps pipeline_minutes, the per-minute aggregates the console
// draws (api.Charts): what the receiver answered per provider and minute
// (a class of answer and its latency, added in memory and flushed every
// few seconds as one upsert per provider and minute, so a delivery costs a
// map update, not a statement), and each stage's queue age sampled at
// every flush (the relay's oldest unpublished outbox row, the consumers'
// oldest unfinished inbox row; each a few index probes). Several serve
// processes add to the same rows.
type Rollup struct {
	// RelayOldest, when set, gives the time of the oldest outbox row no
	// relay has published (nil when none): the relay stage's queue age
	// (cmd/gatehouse passes relay.Backlog's).
	RelayOldest func(ctx context.Context) (*time.Time, error)
	pool        *pgxpool.Pool
	log         *slog.Logger
	now         func() time.Time
	every       time.Duration
	mu          sync.Mutex
	cur         map[rollupKey]*rollupRow
}

type rollupKey struct {
	provider string
	minute   time.Time
}

type rollupRow struct {
	accepted, duplicate, rejected, refused int32
	buckets                                [len(AckBuckets) + 1]int32
}

// NewRollup returns a Rollup flushing every every (default 10 s) once Run.
func NewRollup(pool *pgxpool.Pool, every time.Duration, log *slog.Logger) *Rollup {
	if every <= 0 {
		every = 10 * time.Second
	}
	if log == nil {
		log = slog.Default()
	}
	return &Rollup{pool: pool, log: log, now: time.Now, every: every, cur: map[rollupKey]*rollupRow{}}
}

// Observe adds one answer of provider: its outcome, status and latency.
func (r *Rollup) Observe(provider, outcome string, status int, lat time.Duration) {
	if r == nil {
		return
	}
	k := rollupKey{provider, r.now().UTC().Truncate(time.Minute)}
	b := len(AckBuckets)
	for i, le := range AckBuckets {
		if lat.Seconds() <= le {
			b = i
			break
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	row := r.cur[k]
	if row == nil {
		row = &rollupRow{}
		r.cur[k] = row
	}
	switch {
	case status/100 == 2 && outcome == "duplicate":
		row.duplicate++
	case status/100 == 2:
		row.accepted++
	case status == http.StatusTooManyRequests || status >= 500:
		row.refused++
	default:
		row.rejected++
	}
	row.buckets[b]++
}

// Run flushes until ctx ends (a last flush then).
func (r *Rollup) Run(ctx context.Context) error {
	t := time.NewTicker(r.every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			if err := r.Flush(fctx); err != nil {
				r.log.Warn("rollup: last flush", "err", err)
			}
			return nil
		case <-t.C:
			if err := r.Flush(ctx); err != nil && ctx.Err() == nil {
				r.log.Warn("rollup: flush", "err", err)
			}
		}
	}
}

const rollupUpsert = `INSERT INTO pipeline_minutes AS p (provider, minute, accepted, duplicate, rejected, refused, ack_buckets)
VALUES ($1, $2, $3, $4, $5, $6, $7)
ON CONFLICT (provider, minute) DO UPDATE SET
  accepted = p.accepted + excluded.accepted, duplicate = p.duplicate + excluded.duplicate,
  rejected = p.rejected + excluded.rejected, refused = p.refused + excluded.refused,
  ack_buckets = CASE WHEN cardinality(p.ack_buckets) = 0 THEN excluded.ack_buckets ELSE
    (SELECT array_agg(coalesce(a, 0) + coalesce(b, 0) ORDER BY i) FROM unnest(p.ack_buckets, excluded.ack_buckets) WITH ORDINALITY AS t(a, b, i)) END`

const ageUpsert = `INSERT INTO pipeline_minutes AS p (provider, minute, relay_age_s, consume_age_s) VALUES ('', $1, $2, $3)
ON CONFLICT (provider, minute) DO UPDATE SET
  relay_age_s = greatest(p.relay_age_s, excluded.relay_age_s), consume_age_s = greatest(p.consume_age_s, excluded.consume_age_s)`

// consumeAgeSQL is the oldest inbox row not finished by the consumers:
// per state, the first entry of each partition's (processing_state,
// received_at) index.
const consumeAgeSQL = `SELECT extract(epoch FROM now() - min(m))::real FROM (
  SELECT (SELECT min(received_at) FROM inbox WHERE processing_state = s) AS m FROM unnest(ARRAY['pending', 'processing', 'retrying']) s) x`

// Flush writes what was observed since the last flush and samples the
// queue ages. What it could not write is kept for the next flush.
func (r *Rollup) Flush(ctx context.Context) error {
	r.mu.Lock()
	cur := r.cur
	r.cur = map[rollupKey]*rollupRow{}
	r.mu.Unlock()
	b := &pgx.Batch{}
	for k, row := range cur {
		b.Queue(rollupUpsert, k.provider, k.minute, row.accepted, row.duplicate, row.rejected, row.refused, row.buckets[:])
	}
	minute := r.now().UTC().Truncate(time.Minute)
	var relayAge, consumeAge *float32
	if r.RelayOldest != nil {
		if oldest, err := r.RelayOldest(ctx); err == nil {
			a := float32(0)
			if oldest != nil {
				a = float32(max(0, r.now().Sub(*oldest).Seconds()))
			}
			relayAge = &a
		}
	}
	var ca *float32
	if err := r.pool.QueryRow(ctx, consumeAgeSQL).Scan(&ca); err == nil {
		consumeAge = ca
		if consumeAge == nil {
			z := float32(0)
			consumeAge = &z
		}
	}
	b.Queue(ageUpsert, minute, relayAge, consumeAge)
	if err := r.pool.SendBatch(ctx, b).Close(); err != nil {
		r.mu.Lock() // keep the counts for the next flush
		for k, row := range cur {
			if have := r.cur[k]; have != nil {
				have.add(row)
			} else {
				r.cur[k] = row
			}
		}
		r.mu.Unlock()
		return fmt.Errorf("write pipeline_minutes: %w", err)
	}
	return nil
}

func (a *rollupRow) add(b *rollupRow) {
	a.accepted += b.accepted
	a.duplicate += b.duplicate
	a.rejected += b.rejected
	a.refused += b.refused
	for i := range a.buckets {
		a.buckets[i] += b.buckets[i]
	}
}
