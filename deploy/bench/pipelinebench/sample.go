package main

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gatehouse/gatehouse/deploy/bench/benchenv"
)

// tables are the tables whose size the run follows: every table the
// pipeline writes for each event.
var tables = []string{"inbox", "dedupe_keys", "outbox", "processed_events", "provider_object_changes", "provider_objects"}

// sample is one reading of the pipeline's processes and database. A gauge
// that no process exported is NaN.
type sample struct {
	at time.Duration // since the open-loop phase started

	accepted  float64            // serve: gatehouse_webhook_deliveries_total{outcome="accepted"}
	published float64            // relay: gatehouse_relay_records_published_total
	processed float64            // consume: gatehouse_consumer_records_processed_total (every outcome)
	outcomes  map[string]float64 // consume: the same by outcome
	paths     map[string]float64 // relay: published by path (stream, dispatcher, poll)

	relayAge    float64 // gatehouse_relay_outbox_oldest_unsent_age_seconds (the relay's)
	consumerLag float64 // sum of gatehouse_consumer_lag_records
	pendingAge  float64 // age of the oldest inbox row pending or processing: accepted, not yet finished by a consumer

	created, dropped float64 // gatehouse_storage_partitions_{created,dropped}_total, every process

	bytes map[string]int64 // table → bytes (with indexes, TOAST, partitions)
	parts map[string]int64 // parent → partitions in storage_partitions
	load  float64          // 1-minute load average
}

func (s sample) totalBytes() int64 {
	var t int64
	for _, b := range s.bytes {
		t += b
	}
	return t
}

// drained reports whether the relay and the consumers have caught up with
// everything the receiver accepted.
func (s sample) drained() bool {
	return s.relayAge == 0 && s.consumerLag == 0 && s.published >= s.accepted && s.processed >= s.accepted
}

// sampler reads the three processes and the database.
type sampler struct {
	serve, relay, consume *benchenv.Proc
	pool                  *pgxpool.Pool
	start                 time.Time
}

// takeRetry is take, tried up to three times two seconds apart (a scrape
// or a size query may time out on a loaded machine); it returns the last
// error and how many attempts failed.
func (sm *sampler) takeRetry(ctx context.Context) (sample, int, error) {
	var err error
	for i := range 3 {
		var s sample
		if s, err = sm.take(ctx); err == nil {
			return s, i, nil
		}
		select {
		case <-ctx.Done():
			return s, i + 1, context.Cause(ctx)
		case <-time.After(2 * time.Second):
		}
	}
	return sample{}, 3, err
}

func (sm *sampler) take(ctx context.Context) (sample, error) {
	s := sample{at: time.Since(sm.start), load: benchenv.LoadAvg()}
	ctx, cancel := context.WithTimeout(ctx, 8*time.Second)
	defer cancel()
	var fs []benchenv.Families
	for _, p := range []*benchenv.Proc{sm.serve, sm.relay, sm.consume} {
		f, err := benchenv.Scrape(ctx, p.Admin)
		if err != nil {
			return s, err
		}
		fs = append(fs, f)
		s.created += f.Sum("gatehouse_storage_partitions_created_total")
		s.dropped += f.Sum("gatehouse_storage_partitions_dropped_total")
	}
	sv, rl, co := fs[0], fs[1], fs[2]
	s.accepted = sv.Sum("gatehouse_webhook_deliveries_total", "outcome", "accepted")
	s.published = rl.Sum("gatehouse_relay_records_published_total")
	s.processed = co.Sum("gatehouse_consumer_records_processed_total")
	s.outcomes = co.By("gatehouse_consumer_records_processed_total", "outcome")
	s.paths = rl.By("gatehouse_relay_records_published_total", "path")
	s.relayAge = rl.Max("gatehouse_relay_outbox_oldest_unsent_age_seconds")
	s.consumerLag = co.Sum("gatehouse_consumer_lag_records")
	// The consumers' queue age measured in the database, whatever their
	// own gauge says: the (processing_state, received_at) index of every
	// inbox partition answers it.
	err := sm.pool.QueryRow(ctx, `SELECT coalesce(extract(epoch FROM now() - min(received_at)), 0)::float8
FROM inbox WHERE processing_state IN ('pending', 'processing')`).Scan(&s.pendingAge)
	if err != nil {
		return s, fmt.Errorf("oldest pending inbox row: %w", err)
	}
	s.bytes = map[string]int64{}
	for _, t := range tables {
		var b int64
		// pg_partition_tree lists nothing for a table that is not
		// partitioned (storage.TableBytes reports 0 for those).
		if err := sm.pool.QueryRow(ctx, `SELECT coalesce((SELECT sum(pg_total_relation_size(relid)) FROM pg_partition_tree($1::regclass)),
  pg_total_relation_size($1::regclass))::bigint`, t).Scan(&b); err != nil {
			return s, fmt.Errorf("size of %s: %w", t, err)
		}
		s.bytes[t] = b
	}
	s.parts = map[string]int64{}
	rows, err := sm.pool.Query(ctx, `SELECT parent, count(*) FROM storage_partitions GROUP BY parent`)
	if err != nil {
		return s, fmt.Errorf("count partitions: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var p string
		var n int64
		if err := rows.Scan(&p, &n); err != nil {
			return s, err
		}
		s.parts[p] = n
	}
	return s, rows.Err()
}
