package consumers

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gatehouse/gatehouse/consumers/event"
	"github.com/gatehouse/gatehouse/schemas"
)

// The store's parking of ordered destinations (parking.go): tables
// parked_keys and parked_events (migrations/00008_parking.sql, the
// parked origin 00009_parked_origin.sql).

// deadParked writes the parked events evs, dead-lettered with reason, to
// the dead-letter topic (deadLetters).
type deadParked func(ctx context.Context, reason string, evs []parkedEvent) error

// parkKey names one parked key: a destination, a provider, a Kafka key.
type parkKey struct{ dest, provider, key string }

// parkResult is what park found for an event of a key.
type parkResult int

const (
	parkNone   parkResult = iota // the key is not parked: deliver
	parkHead                     // the event is the key's head: deliver (its retry)
	parkParked                   // parked behind the head: not delivered now
)

// park parks ev (with obj, the fetched object; ev is the caller's copy)
// behind k's head when k is parked and ev is not its head, in one
// statement: k's row is read FOR SHARE, so a drain finishing the key
// (FOR UPDATE, then delete) either sees the new event or is waited for,
// after which the key is gone and ev is delivered at once. A repeat of a
// parked event is parked once. A key not parked costs one index probe.
//
// The same statement tells whether ev's record is a replay (a row of
// replays names its outbox id): ev.Replay is set then, and the parked
// event keeps it.
func (s store) park(ctx context.Context, k parkKey, ev *event.Event, obj []byte) (parkResult, error) {
	var head *string
	args := append(parkedRowArgs(k, ev, obj, false, false), ev.OutboxID)
	err := s.pool.QueryRow(ctx, `WITH k AS (
  SELECT head_event_id FROM parked_keys WHERE destination = $1 AND provider = $2 AND kafka_key = $3 FOR SHARE
), r AS (
  SELECT $17::text <> '' AND EXISTS (SELECT 1 FROM replays WHERE provider = $2 AND event_id = $4 AND outbox_id::text = $17::text) AS replay
), ins AS (
  INSERT INTO parked_events (`+parkedColumns+`)
  SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, r.replay FROM k, r WHERE k.head_event_id <> $4
  `+parkedConflict+`
  RETURNING 1
)
SELECT (SELECT head_event_id FROM k), (SELECT replay FROM r)`, args...).Scan(&head, &ev.Replay)
	switch {
	case err != nil:
		return parkNone, fmt.Errorf("park: %w", err)
	case head == nil:
		return parkNone, nil
	case *head == ev.ID:
		return parkHead, nil
	}
	return parkParked, nil
}

// parkBehind parks k behind its head event headID, which failed with
// msg (a retryable error): the key's later events wait for it. A key
// already parked behind headID records the new error.
func (s store) parkBehind(ctx context.Context, k parkKey, headID, msg, onDead string) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO parked_keys (destination, provider, kafka_key, head_event_id, head_error, on_dead)
VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (destination, provider, kafka_key) DO UPDATE SET head_error = EXCLUDED.head_error
WHERE parked_keys.head_event_id = EXCLUDED.head_event_id`, k.dest, k.provider, k.key, headID, msg, onDead)
	if err != nil {
		return fmt.Errorf("park key: %w", err)
	}
	return nil
}

// parkOpen parks ev, of key k that is not parked, while its destination's
// circuit is open: k is parked ready, with no head, and ev is its first
// parked event; the drain delivers it when the circuit lets it.
func (s store) parkOpen(ctx context.Context, k parkKey, ev *event.Event, obj []byte, onDead string) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("park while the circuit is open: %w", err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `INSERT INTO parked_keys (destination, provider, kafka_key, head_event_id, head_error, state, on_dead)
VALUES ($1, $2, $3, '', 'circuit open', 'ready', $4) ON CONFLICT DO NOTHING`, k.dest, k.provider, k.key, onDead); err != nil {
		return fmt.Errorf("park while the circuit is open: %w", err)
	}
	if err := insertParked(ctx, tx, k, ev, obj); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("park while the circuit is open: %w", err)
	}
	return nil
}

// parkHeadOpen parks k's head ev, on a retry while its destination's
// circuit is open, in front of the key's parked events: the key becomes
// ready without a head, and the drain delivers ev first, then the rest, as
// the circuit lets it. The retry then finishes (the event is parked, not
// failed), so nothing waits on the circuit.
func (s store) parkHeadOpen(ctx context.Context, k parkKey, ev *event.Event, obj []byte) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("park the head while the circuit is open: %w", err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if err := insertParkedAs(ctx, tx, k, ev, obj, true); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `UPDATE parked_keys SET head_event_id = '', head_error = 'circuit open', state = 'ready', next_at = now()
WHERE destination = $1 AND provider = $2 AND kafka_key = $3 AND head_event_id = $4`, k.dest, k.provider, k.key, ev.ID); err != nil {
		return fmt.Errorf("park the head while the circuit is open: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("park the head while the circuit is open: %w", err)
	}
	return nil
}

// insertParked stores ev (with obj) as k's latest parked event; a repeat
// is stored once.
func insertParked(ctx context.Context, tx pgx.Tx, k parkKey, ev *event.Event, obj []byte) error {
	return insertParkedAs(ctx, tx, k, ev, obj, false)
}

// insertParkedAs is insertParked; head puts ev in front of the key's
// other parked events.
func insertParkedAs(ctx context.Context, tx pgx.Tx, k parkKey, ev *event.Event, obj []byte, head bool) error {
	return insertParkedRow(ctx, tx, k, ev, obj, head, false)
}

// insertParkedRow is insertParkedAs; pending keeps ev's place for an event
// whose inbox row was not visible yet (parkLate). Parking an event whose
// place is pending fills it in (its fetched object) and ends pending.
func insertParkedRow(ctx context.Context, tx pgx.Tx, k parkKey, ev *event.Event, obj []byte, head, pending bool) error {
	_, err := tx.Exec(ctx, `INSERT INTO parked_events (`+parkedColumns+`)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)
`+parkedConflict, append(parkedRowArgs(k, ev, obj, head, pending), ev.Replay)...)
	if err != nil {
		return fmt.Errorf("park: %w", err)
	}
	return nil
}

// parkedColumns are the columns of a parked event, in the order of
// parkedRowArgs then its replay flag.
const parkedColumns = `destination, provider, kafka_key, event_id, event_type, envelope, object, created_at, received_at, head,
  origin_topic, origin_partition, origin_offset, origin_timestamp, outbox_id, pending, replay`

// parkedConflict stores a repeat of a parked event once, and fills in the
// place an event whose inbox row was not visible kept (pending).
const parkedConflict = `ON CONFLICT (destination, provider, kafka_key, event_id) DO UPDATE SET object = EXCLUDED.object, received_at = EXCLUDED.received_at,
  replay = EXCLUDED.replay, pending = false
WHERE parked_events.pending AND NOT EXCLUDED.pending`

// parkedRowArgs are the values of parkedColumns but the last (replay) for
// ev of key k with obj: $1 to $16.
func parkedRowArgs(k parkKey, ev *event.Event, obj []byte, head, pending bool) []any {
	var created *time.Time
	if !ev.CreatedAt.IsZero() {
		created = &ev.CreatedAt
	}
	var otopic, outbox *string
	var opart *int32
	var ooff *int64
	var ots *time.Time
	if o := ev.Origin; o.Topic != "" {
		otopic, opart, ooff, ots = &o.Topic, &o.Partition, &o.Offset, &o.Timestamp
	}
	if ev.OutboxID != "" {
		outbox = &ev.OutboxID
	}
	return []any{k.dest, k.provider, k.key, ev.ID, ev.Type, []byte(ev.StoredEnvelope()), obj, created, receivedAt(ev), head,
		otopic, opart, ooff, ots, outbox, pending}
}

// headDelivered marks k ready once its head headID was delivered: its
// parked events go out in order (drain).
func (s store) headDelivered(ctx context.Context, k parkKey, headID string) error {
	_, err := s.pool.Exec(ctx, `UPDATE parked_keys SET state = 'ready', head_error = '', next_at = now()
WHERE destination = $1 AND provider = $2 AND kafka_key = $3 AND head_event_id = $4`, k.dest, k.provider, k.key, headID)
	if err != nil {
		return fmt.Errorf("unpark key: %w", err)
	}
	return nil
}

// headDead applies on_dead to every key whose head is the event
// (provider, eventID), dead-lettered with msg: skip makes it ready, hold
// holds it.
func (s store) headDead(ctx context.Context, provider, eventID, msg string) error {
	_, err := s.pool.Exec(ctx, `UPDATE parked_keys SET state = CASE on_dead WHEN 'hold' THEN 'held' ELSE 'ready' END,
  head_error = $3, next_at = now()
WHERE provider = $1 AND head_event_id = $2 AND state = 'waiting'`, provider, eventID, msg)
	if err != nil {
		return fmt.Errorf("dead head of parked keys: %w", err)
	}
	return nil
}

// parkedCounts counts destination dest's parked keys and events of
// provider, in tx.
func parkedCounts(ctx context.Context, tx pgx.Tx, dest, provider string) (keys, events int, err error) {
	err = tx.QueryRow(ctx, `SELECT (SELECT count(*) FROM parked_keys WHERE destination = $1 AND provider = $2),
  (SELECT count(*) FROM parked_events WHERE destination = $1 AND provider = $2)`, dest, provider).Scan(&keys, &events)
	if err != nil {
		return 0, 0, fmt.Errorf("count parked: %w", err)
	}
	return keys, events, nil
}

// parkBoundLock is the seed of the advisory lock a bound's eviction takes
// per (destination, provider): hashtextextended(destination chr(1) provider,
// parkBoundLock). Two keys hashing alike only wait for each other.
const parkBoundLock = 0x67617465_70617262

// deadLetterOldest dead-letters destination dest's oldest parked key of
// provider when it parks more than maxKeys keys or maxEvents events: every
// parked event of it is recorded dead on its inbox row (replayable), with
// the bound in the reason, and the key is removed. The count and the
// eviction are one transaction under the destination's advisory lock, so
// two members bounding it at once (a rebalance) evict one key between
// them, never one each. Only a key whose parked events' batches have
// applied (their inbox rows final) is taken, so no apply finishing later
// records one of them succeeded; a key a drain holds is passed over. It
// returns the key, "" when none was taken (within the bounds, or none
// eligible). The key's parked events are handed to dead (the dead-letter
// topic) before anything is changed: when it fails, nothing is.
func (s store) deadLetterOldest(ctx context.Context, dest, provider string, maxKeys, maxEvents int, dead deadParked) (string, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return "", fmt.Errorf("dead-letter parked key: %w", err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1 || chr(1) || $2, $3))`,
		dest, provider, int64(parkBoundLock)); err != nil {
		return "", fmt.Errorf("dead-letter parked key: %w", err)
	}
	keys, events, err := parkedCounts(ctx, tx, dest, provider)
	if err != nil || (keys <= maxKeys && events <= maxEvents) {
		return "", err
	}
	reason := fmt.Sprintf("forward to %s: parked bound reached (%d keys, %d events; max_parked_keys %d, max_parked_events %d): "+
		"the oldest parked key was dead-lettered", dest, keys, events, maxKeys, maxEvents)
	var key string
	err = tx.QueryRow(ctx, `SELECT k.kafka_key FROM parked_keys k WHERE k.destination = $1 AND k.provider = $2
  AND NOT EXISTS (SELECT 1 FROM parked_events e JOIN inbox i ON i.provider = e.provider AND i.event_id = e.event_id
    WHERE e.destination = k.destination AND e.provider = k.provider AND e.kafka_key = k.kafka_key AND i.processing_state <> ALL($3))
ORDER BY k.parked_at, k.kafka_key LIMIT 1 FOR UPDATE SKIP LOCKED`, dest, provider, schemas.FinalStates()).Scan(&key)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("dead-letter parked key: %w", err)
	}
	evs, err := parkedOf(ctx, tx, parkKey{dest: dest, provider: provider, key: key})
	if err != nil {
		return "", err
	}
	if err := dead(ctx, reason, evs); err != nil {
		return "", err
	}
	if _, err := tx.Exec(ctx, `UPDATE inbox i SET processing_state = $4, last_error = $5, last_error_class = $6, next_attempt_at = NULL, updated_at = now()
FROM parked_events p WHERE p.destination = $1 AND p.provider = $2 AND p.kafka_key = $3
  AND i.provider = p.provider AND i.event_id = p.event_id`,
		dest, provider, key, schemas.StateDead, reason, event.ClassPermanent); err != nil {
		return "", fmt.Errorf("dead-letter parked key: %w", err)
	}
	if _, err := tx.Exec(ctx, `DELETE FROM parked_keys WHERE destination = $1 AND provider = $2 AND kafka_key = $3`, dest, provider, key); err != nil {
		return "", fmt.Errorf("dead-letter parked key: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return "", fmt.Errorf("dead-letter parked key: %w", err)
	}
	return key, nil
}

// parkedEvent is one parked event as the drain reads it.
type parkedEvent struct {
	seq int64
	ev  event.Event
	obj []byte
	// applied: the batch that parked the event has committed its inbox
	// row's state (terminal, or no row), and its place is not pending
	// (parkLate): until then the drain leaves it parked (parking_drain.go).
	applied bool
}

// readyKeys lists up to limit keys whose parked events may go out now.
func (s store) readyKeys(ctx context.Context, limit int) ([]parkKey, error) {
	rows, err := s.pool.Query(ctx, `SELECT destination, provider, kafka_key FROM parked_keys
WHERE state = 'ready' AND next_at <= now() ORDER BY next_at LIMIT $1`, limit)
	if err != nil {
		return nil, fmt.Errorf("ready parked keys: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (parkKey, error) {
		var k parkKey
		err := r.Scan(&k.dest, &k.provider, &k.key)
		return k, err
	})
}

// parkedOf reads k's parked events in order (a head parked while the
// circuit was open first), in tx, each with whether its inbox row is
// terminal (its batch applied).
func parkedOf(ctx context.Context, tx pgx.Tx, k parkKey) ([]parkedEvent, error) {
	rows, err := tx.Query(ctx, `SELECT e.seq, e.event_id, e.event_type, e.envelope, e.object, e.created_at, e.received_at,
  NOT e.pending AND coalesce(i.processing_state = ANY($4), true), coalesce(e.origin_topic, ''), coalesce(e.origin_partition, 0),
  coalesce(e.origin_offset, -1), e.origin_timestamp, coalesce(e.outbox_id, ''), e.replay
FROM parked_events e LEFT JOIN inbox i ON i.provider = e.provider AND i.event_id = e.event_id
WHERE e.destination = $1 AND e.provider = $2 AND e.kafka_key = $3 ORDER BY e.head DESC, e.seq`,
		k.dest, k.provider, k.key, schemas.TerminalStates())
	if err != nil {
		return nil, fmt.Errorf("read parked events: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (parkedEvent, error) {
		var p parkedEvent
		var env []byte
		var created, received, ots *time.Time
		err := r.Scan(&p.seq, &p.ev.ID, &p.ev.Type, &env, &p.obj, &created, &received, &p.applied,
			&p.ev.Origin.Topic, &p.ev.Origin.Partition, &p.ev.Origin.Offset, &ots, &p.ev.OutboxID, &p.ev.Replay)
		if ots != nil {
			p.ev.Origin.Timestamp = *ots
		}
		p.ev.Provider, p.ev.ObjectKey, p.ev.Envelope, p.ev.Attempt = k.provider, k.key, env, 1
		if created != nil {
			p.ev.CreatedAt = *created
		}
		if received != nil {
			p.ev.ReceivedAt = *received
		}
		return p, err
	})
}
