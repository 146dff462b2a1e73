package consumers

import (
	"context"
	"fmt"
	"sync"

	"github.com/jackc/pgx/v5"

	"github.com/gatehouse/gatehouse/consumers/event"
)

// The parking probe of a main-topic batch: which of its keys are parked,
// and which of its records are replays, read once for the whole batch
// instead of once per delivery (parking.go's park).
//
// A key that is not parked when the batch's handle stage starts can only
// become parked during the stage by its own chain: the chain's records are
// the only ones of the key being handled (one batch of a partition is
// handled at a time; a head's retry, on a retry topic, belongs to a key
// that is already parked), and the drain, the console and the API only
// unpark. So for a key the snapshot found not parked, park is skipped
// until the chain parks it itself (parkBehind, parkOpen, parkLate), which
// marks it here; a key the snapshot found parked goes through park's own
// probe and lock, which also sees a drain that has finished it since.

// batchParking is the forward ledger of a main-topic batch when a
// destination is ordered per object: the runner's store, with the parked
// keys and replays of the batch's records as the handle stage started.
type batchParking struct {
	store
	mu      sync.Mutex
	parked  map[parkKey]bool  // parked when the stage started, or since by the key's own chain
	replays map[replayOf]bool // the batch's records that are replays
}

// replayOf names a record that a replay re-enqueued: its event and outbox id.
type replayOf struct{ provider, eventID, outboxID string }

// probeParking reads, in one statement each, which of the keys of todo's
// events are parked for a destination ordered per object that takes them
// and which of the events are replays (a row of replays names the record's
// outbox id).
func (r *Runner) probeParking(ctx context.Context, todo []*work) (*batchParking, error) {
	bp := &batchParking{store: r.store, parked: map[parkKey]bool{}, replays: map[replayOf]bool{}}
	var dests, provs, keys, rprovs, rids, routs []string
	for _, w := range todo {
		ev := w.ev
		if ev == nil || ev.ObjectKey == "" {
			continue
		}
		fws := r.cfg.Handlers.ordered[ev.Provider]
		for dest := range fws {
			dests, provs, keys = append(dests, dest), append(provs, ev.Provider), append(keys, ev.ObjectKey)
		}
		if len(fws) > 0 && ev.OutboxID != "" {
			rprovs, rids, routs = append(rprovs, ev.Provider), append(rids, ev.ID), append(routs, ev.OutboxID)
		}
	}
	err := r.store.triples(ctx, `SELECT p.destination, p.provider, p.kafka_key
FROM unnest($1::text[], $2::text[], $3::text[]) AS k(destination, provider, kafka_key)
JOIN parked_keys p USING (destination, provider, kafka_key)`, dests, provs, keys, func(dest, provider, key string) {
		bp.parked[parkKey{dest, provider, key}] = true
	})
	if err != nil {
		return nil, fmt.Errorf("probe the batch's parked keys: %w", err)
	}
	err = r.store.triples(ctx, `SELECT DISTINCT r.provider, r.event_id, r.outbox_id::text
FROM unnest($1::text[], $2::text[], $3::text[]) AS k(provider, event_id, outbox_id)
JOIN replays r ON r.provider = k.provider AND r.event_id = k.event_id AND r.outbox_id::text = k.outbox_id`, rprovs, rids, routs,
		func(provider, eventID, outboxID string) { bp.replays[replayOf{provider, eventID, outboxID}] = true })
	if err != nil {
		return nil, fmt.Errorf("probe the batch's replays: %w", err)
	}
	return bp, nil
}

// triples runs query over three text arrays of one length (none when
// empty) and hands each of its rows, three text columns, to each.
func (s store) triples(ctx context.Context, query string, a, b, c []string, each func(x, y, z string)) error {
	if len(a) == 0 {
		return nil
	}
	rows, err := s.pool.Query(ctx, query, a, b, c)
	if err != nil {
		return err
	}
	var x, y, z string
	_, err = pgx.ForEachRow(rows, []any{&x, &y, &z}, func() error { each(x, y, z); return nil })
	return err
}

// park is store.park for a record of the batch: a key the snapshot found
// not parked, and that its chain has not parked since, is not probed again.
func (bp *batchParking) park(ctx context.Context, k parkKey, ev *event.Event, obj []byte) (parkResult, error) {
	bp.mu.Lock()
	parked := bp.parked[k]
	ev.Replay = ev.OutboxID != "" && bp.replays[replayOf{ev.Provider, ev.ID, ev.OutboxID}]
	bp.mu.Unlock()
	if !parked {
		return parkNone, nil
	}
	return bp.store.park(ctx, k, ev, obj)
}

// parkedNow records that k's chain has just parked k.
func (bp *batchParking) parkedNow(k parkKey) {
	bp.mu.Lock()
	bp.parked[k] = true
	bp.mu.Unlock()
}

// parker is how deliverOrdered parks: the runner's store (a retry, a late
// row: a batch of one) or a main-topic batch's snapshot of it.
type parker interface {
	park(ctx context.Context, k parkKey, ev *event.Event, obj []byte) (parkResult, error)
	parkedNow(k parkKey)
	parking() store
}

func (s store) parkedNow(parkKey)       {}
func (s store) parking() store          { return s }
func (bp *batchParking) parking() store { return bp.store }
