package consumers

import (
	"context"
	"fmt"

	"github.com/gatehouse/gatehouse/consumers/event"
)

// A record of an ordered destination's batch whose inbox row is still
// missing after the claim's re-reads (claimLate: 150 ms) goes down the
// retry ladder, as every record whose row is missing does; but its key's
// later events must not overtake it. So, in its key's chain, at its offset
// (the handle stage), it parks its key for every ordered destination that
// takes it (parkLate): a key not parked is parked behind it, as behind a
// head that failed (its retry delivers it, then the drain the rest); a key
// already parked keeps its place among the parked events, pending until
// its retry finds the row and parks it for real (insertParkedRow). A late
// event that is dead-lettered (its row never came) gives its place up
// (dropPending) and its key's on_dead decides, as for any head (headDead).

// lateMissing is the reason a key waits behind a record whose inbox row
// was not visible.
const lateMissing = "the event's inbox row was not visible 150 ms after its batch claimed it: waiting for its retry"

// parkLate parks ev's key, for every destination of ev's provider ordered
// per object that takes ev, behind ev, whose inbox row is missing (see
// above).
// A key it parks is marked in bp, the batch's parking snapshot.
func (r *Runner) parkLate(ctx context.Context, ev *event.Event, bp parker) error {
	if ev.ObjectKey == "" {
		return nil
	}
	for dest, fw := range r.cfg.Handlers.ordered[ev.Provider] {
		if !fw.Accepts(ev) {
			continue
		}
		_, onDead, _, _ := fw.Ordering()
		k := parkKey{dest: dest, provider: ev.Provider, key: ev.ObjectKey}
		bp.parkedNow(k)
		if err := r.store.parkLate(ctx, k, ev, onDead); err != nil {
			return err
		}
	}
	return nil
}

// parkLate parks k behind ev (waiting, ev its head) when k is not parked;
// when it is (behind another event), ev's place is kept pending among its
// parked events. The upsert locks k's row, so a drain finishing k either
// has, and k is parked anew, or waits.
func (s store) parkLate(ctx context.Context, k parkKey, ev *event.Event, onDead string) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("park behind a late event: %w", err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	var head string
	var inserted bool
	err = tx.QueryRow(ctx, `INSERT INTO parked_keys (destination, provider, kafka_key, head_event_id, head_error, on_dead)
VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (destination, provider, kafka_key) DO UPDATE SET on_dead = parked_keys.on_dead
RETURNING head_event_id, xmax = 0`, k.dest, k.provider, k.key, ev.ID, lateMissing, onDead).Scan(&head, &inserted)
	if err != nil {
		return fmt.Errorf("park behind a late event: %w", err)
	}
	if !inserted && head != ev.ID {
		if err := insertParkedRow(ctx, tx, k, ev, nil, false, true); err != nil {
			return err
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("park behind a late event: %w", err)
	}
	return nil
}

// dropPending removes the pending places of the event (provider,
// eventID), dead-lettered before its retry parked it for real.
func (s store) dropPending(ctx context.Context, provider, eventID string) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM parked_events WHERE provider = $1 AND event_id = $2 AND pending`, provider, eventID); err != nil {
		return fmt.Errorf("drop a pending parked event: %w", err)
	}
	return nil
}
