package relay

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pglogrepl"
)

// horizon moves the log's cursor behind the stream. In replication mode the
// stream publishes every outbox insert in commit order and confirms LSNs;
// the cursor (outbox_cursor) must follow it, so that the queue-age metric,
// the partition drops and a later poll-mode or new-slot window know what is
// published. Each dispatcher cycle samples the server's snapshot and then
// its WAL insert position: a transaction visible in the snapshot committed
// before the position was read, so once the stream has confirmed past the
// position, every row visible in the snapshot is on Kafka and the snapshot
// is the new cursor. When no stream session has reported for
// republish_after (replication broken while the database works) the
// dispatcher publishes the log's windows itself (the stream repeats them
// when it returns: at least once).
type horizon struct {
	mu        sync.Mutex
	confirmed pglogrepl.LSN
	reported  time.Time // last status report of a live stream session
	samples   []walSample
}

type walSample struct {
	snap string // pg_current_snapshot()
	lsn  pglogrepl.LSN
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

// add records a sample.
func (h *horizon) add(s walSample) {
	h.mu.Lock()
	h.samples = append(h.samples, s)
	h.mu.Unlock()
}

// limit returns the newest sample the stream has confirmed past (snap ""
// when none is yet) and whether the stream has been silent for grace (the
// dispatcher then publishes itself). Samples up to the returned one are
// forgotten.
func (h *horizon) limit(now time.Time, grace time.Duration) (snap string, silent bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if now.Sub(h.reported) >= grace {
		h.samples = nil
		return "", true
	}
	i := -1
	for j, s := range h.samples {
		if s.lsn <= h.confirmed {
			i = j
		}
	}
	if i < 0 {
		return "", false
	}
	snap = h.samples[i].snap
	h.samples = append(h.samples[:0], h.samples[i+1:]...)
	return snap, false
}

// dispatchStep samples the server, then moves the cursor to the newest
// confirmed sample or, when the stream is silent, publishes a window; it
// returns how many rows it published.
func (r *Relay) dispatchStep(ctx context.Context) (int, error) {
	var snap, lsn string
	// Two statements, in this order: the snapshot first, the position after.
	if err := r.cfg.Pool.QueryRow(ctx, `SELECT pg_current_snapshot()::text`).Scan(&snap); err != nil {
		return 0, fmt.Errorf("dispatcher: take a snapshot: %w", err)
	}
	if err := r.cfg.Pool.QueryRow(ctx, `SELECT pg_current_wal_insert_lsn()::text`).Scan(&lsn); err != nil {
		return 0, fmt.Errorf("dispatcher: sample the wal position: %w", err)
	}
	pos, err := pglogrepl.ParseLSN(lsn)
	if err != nil {
		return 0, fmt.Errorf("dispatcher: parse wal position %q: %w", lsn, err)
	}
	r.hz.add(walSample{snap: snap, lsn: pos})
	passed, silent := r.hz.limit(time.Now(), r.cfg.Relay.RepublishAfter)
	switch {
	case silent:
		return r.publishWindow(ctx, pathDispatcher)
	case passed != "":
		if _, err := r.loadCursor(ctx); err != nil { // creates the slot's row on first use
			return 0, err
		}
		return 0, r.saveCursor(ctx, passed)
	}
	return 0, nil
}

// finalCursor moves the cursor to the newest sample the stream confirmed
// after the dispatcher's last cycle, when a term ends: a relay stopped
// right after draining a backlog leaves its cursor at the end of what it
// published, not a cycle behind it (a successor in poll mode, or a relay
// of another slot starting from it, would publish that much again).
func (r *Relay) finalCursor() {
	snap, silent := r.hz.limit(time.Now(), r.cfg.Relay.RepublishAfter)
	if silent || snap == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := r.saveCursor(ctx, snap); err != nil {
		r.log.Warn("save the outbox cursor at the end of the term", "err", err)
	}
}
