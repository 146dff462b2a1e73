package main

import (
	"context"
	"sync"
	"time"

	"github.com/gatehouse/gatehouse/deploy/bench/benchenv"
	"github.com/gatehouse/gatehouse/schemas"
)

// monitor samples each stage's queue once a second and keeps the largest
// value seen (a sample is skipped while PostgreSQL is down).
type monitor struct {
	stop func()

	mu           sync.Mutex
	outboxAge    time.Duration // oldest row not yet published
	slotLagBytes int64         // WAL the relay's slot has not confirmed
	inboxAge     time.Duration // oldest acknowledged event not yet final
	retrying     int           // events waiting on a retry topic at once
	samples      int
}

func startMonitor(ctx context.Context, s *stack) *monitor {
	m := &monitor{}
	m.stop = benchenv.Every(ctx, time.Second, func(ctx context.Context) { m.sample(ctx, s) })
	return m
}

func (m *monitor) sample(ctx context.Context, s *stack) {
	qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var outbox, inbox float64
	var lag int64
	var retrying int
	err := s.pool.QueryRow(qctx, `SELECT
  coalesce(extract(epoch FROM now() - (SELECT min(o.created_at) FROM outbox o,
    (SELECT snap FROM outbox_cursor ORDER BY slot = '*', pg_snapshot_xmax(snap) LIMIT 1) c
    WHERE o.txid >= pg_snapshot_xmax(c.snap) OR o.txid = ANY(ARRAY(SELECT pg_snapshot_xip(c.snap))))), 0)::float8,
  coalesce((SELECT (pg_current_wal_lsn() - confirmed_flush_lsn)::bigint FROM pg_replication_slots WHERE slot_name = 'gatehouse_outbox'), 0),
  coalesce(extract(epoch FROM now() - (SELECT min(received_at) FROM inbox
    WHERE processing_state <> ALL($1))), 0)::float8,
  (SELECT count(*) FROM inbox WHERE processing_state = $2)`, schemas.TerminalStates(), schemas.StateRetrying).Scan(&outbox, &lag, &inbox, &retrying)
	if err != nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.samples++
	m.outboxAge = max(m.outboxAge, time.Duration(outbox*float64(time.Second)))
	m.slotLagBytes = max(m.slotLagBytes, lag)
	m.inboxAge = max(m.inboxAge, time.Duration(inbox*float64(time.Second)))
	m.retrying = max(m.retrying, retrying)
}
