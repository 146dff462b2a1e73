package relay

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5/pgtype"
)

// horizon keeps the dispatcher behind the stream. In replication mode the
// dispatcher is a safety net for rows the stream will not deliver (a slot
// advanced or re-created past them, a row whose finish was lost); it must
// not re-publish rows the stream is still about to deliver, as it would
// while a backlog drains. So it looks only at rows created before a moment
// the stream has confirmed past: each dispatcher cycle samples the server's
// WAL insert position and clock, and the newest sample whose position the
// stream has confirmed is the horizon (a transaction that committed before
// the sample was taken has been streamed, published and finished by then,
// so a row of it still in the outbox was missed). When no stream session has
// reported for republish_after (replication broken while the database
// works) the dispatcher is unrestricted again.
type horizon struct {
	mu        sync.Mutex
	confirmed pglogrepl.LSN
	reported  time.Time // last status report of a live stream session
	samples   []walSample
}

type walSample struct {
	lsn pglogrepl.LSN
	at  time.Time // the database's clock (the outbox's created_at clock)
}

// restart gives a new term's stream republish_after to report.
func (h *horizon) restart(now time.Time) {
	h.mu.Lock()
	h.reported = now
	h.samples = nil
	h.mu.Unlock()
}

// report records a stream session's confirmed LSN.
func (h *horizon) report(lsn pglogrepl.LSN, now time.Time) {
	h.mu.Lock()
	h.confirmed = max(h.confirmed, lsn)
	h.reported = now
	h.mu.Unlock()
}

// add records a sample of the server's WAL position and clock.
func (h *horizon) add(s walSample) {
	h.mu.Lock()
	h.samples = append(h.samples, s)
	h.mu.Unlock()
}

// limit returns the creation time before which the dispatcher may take
// rows: unlimited (the zero time) when the stream has not reported for
// grace, else the newest confirmed sample's time; ok is false when no
// sample is confirmed yet (the dispatcher then waits).
func (h *horizon) limit(now time.Time, grace time.Duration) (before time.Time, ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if now.Sub(h.reported) >= grace {
		return time.Time{}, true
	}
	i := -1
	for j, s := range h.samples {
		if s.lsn <= h.confirmed {
			i = j
		}
	}
	if i < 0 {
		return time.Time{}, false
	}
	before = h.samples[i].at
	h.samples = append(h.samples[:0], h.samples[i:]...)
	return before, true
}

// dispatchLimit samples the server and returns the dispatcher's limit (see
// horizon.limit).
func (r *Relay) dispatchLimit(ctx context.Context) (time.Time, bool, error) {
	var lsn string
	var at time.Time
	if err := r.cfg.Pool.QueryRow(ctx, `SELECT pg_current_wal_insert_lsn()::text, now()`).Scan(&lsn, &at); err != nil {
		return time.Time{}, false, fmt.Errorf("dispatcher: sample the wal position: %w", err)
	}
	pos, err := pglogrepl.ParseLSN(lsn)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("dispatcher: parse wal position %q: %w", lsn, err)
	}
	r.hz.add(walSample{lsn: pos, at: at})
	before, ok := r.hz.limit(time.Now(), r.cfg.Relay.RepublishAfter)
	return before, ok, nil
}

// createdBefore is the claim's upper bound on created_at: the zero time is
// no bound.
func createdBefore(t time.Time) pgtype.Timestamptz {
	if t.IsZero() {
		return pgtype.Timestamptz{InfinityModifier: pgtype.Infinity, Valid: true}
	}
	return pgtype.Timestamptz{Time: t, Valid: true}
}
