package consumers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/gatehouse/gatehouse/consumers/event"
	"github.com/gatehouse/gatehouse/schemas"
)

// Ordered delivery per object (docs/CONSUMERS.md "Ordered delivery per
// object"): a forward entry with order: per_object delivers the events of
// one Kafka key in topic order. When a delivery of key K fails with a
// retryable error, the event goes down the retry ladder as before, and K
// is parked behind it (parked_keys, store_parking.go): K's later events
// for that destination are stored in parked_events instead of delivered,
// and count as done for the batch, so offsets move and every other key
// keeps flowing. When the head succeeds on a retry, K is ready and the
// runner's drain (parking_drain.go) delivers its parked events in order;
// when the head is dead-lettered, on_dead decides (skip: ready; hold:
// held until released). While the destination's circuit is open, an
// event of a key not parked is parked itself (its key ready, with no
// head), and a head's retry parks the head in front of its key's events:
// the drain sends them once the circuit lets deliveries through, and no
// delivery to an ordered destination waits on its circuit.
// Within a batch, the events of one key are handled one after another in
// offset order when any destination is ordered (chains), and a record
// whose inbox row is not visible yet when its batch claims it (late.go)
// is re-read before the batch is handled rather than beside it
// (claimLate), so it is handled in its key's chain; one still missing then
// parks its key in its chain before it goes down the retry ladder
// (parking_late.go). A parked event goes out only once its batch applied
// (parking_drain.go), and one that dies is written to the dead-letter
// topic (parking_dead.go).

// orderedForwarder is a Forwarder that may ask for order per object
// (consumers/forward's Forwarder is one).
type orderedForwarder interface {
	Forwarder
	// Ordering reports whether the destination is ordered per object, and
	// its parking policy: on_dead, and the bounds on parked keys and events.
	Ordering() (perObject bool, onDead string, maxKeys, maxEvents int)
	// DeliverOrdered is DeliverShaped that fails with event.ErrCircuitOpen
	// instead of waiting while the destination's circuit is open.
	DeliverOrdered(ctx context.Context, ev *event.Event, obj json.RawMessage) (event.Sent, error)
}

// ordering is fw's ordering, when it has one.
func ordering(fw Forwarder) (o orderedForwarder, ok bool) {
	o, ok = fw.(orderedForwarder)
	if !ok {
		return nil, false
	}
	perObject, _, _, _ := o.Ordering()
	return o, perObject
}

// deliverOrdered delivers ev to fw keeping the order of ev's key: parked
// behind the key's head when the key is parked (nothing sent, no error),
// the head's delivery unparking the key when it succeeds, a retryable
// failure parking the key behind ev. A delivery without the runner's
// store (a handler called with another ledger) or of an event without a
// key is sent at once.
func deliverOrdered(ctx context.Context, b *event.Batch, fw Forwarder, ev *event.Event, obj json.RawMessage) (event.Sent, error) {
	o, ok := ordering(fw)
	pk, isStore := b.Ledger().(parker)
	if !ok || !isStore || ev.ObjectKey == "" {
		return fw.DeliverShaped(ctx, ev, obj)
	}
	st := pk.parking()
	_, onDead, _, _ := o.Ordering()
	k := parkKey{dest: fw.Destination(), provider: ev.Provider, key: ev.ObjectKey}
	ev = ptr(*ev) // this destination's copy: park marks a replay on it (Event.Replay)
	res, err := pk.park(ctx, k, ev, obj)
	if err != nil {
		return event.Sent{}, err
	}
	if res == parkParked {
		return event.Sent{}, nil
	}
	sent, err := o.DeliverOrdered(ctx, ev, obj)
	if errors.Is(err, event.ErrCircuitOpen) && ctx.Err() == nil { // the circuit is open: the key waits for it, the partition moves on
		if res == parkHead {
			return event.Sent{}, st.parkHeadOpen(ctx, k, ev, obj) // the head goes first once the circuit lets it
		}
		pk.parkedNow(k) // whether or not the park lands: the chain's next record probes again
		return event.Sent{}, st.parkOpen(ctx, k, ev, obj, onDead)
	}
	switch {
	case err == nil && res == parkHead:
		return sent, st.headDelivered(ctx, k, ev.ID)
	case err != nil && event.Classify(err) == event.ClassTransient && ctx.Err() == nil:
		pk.parkedNow(k)
		if perr := st.parkBehind(ctx, k, ev.ID, FailureSummary(err), onDead); perr != nil {
			return sent, fmt.Errorf("%w (and %w)", err, perr)
		}
	}
	return sent, err
}

func ptr[T any](v T) *T { return &v }

// bound dead-letters destination dest's oldest parked keys of provider
// while it parks more than maxKeys keys or maxEvents events, one key per
// transaction (deadLetterOldest), each key's events handed to dead first
// (the dead-letter topic). The drain runs it (parking_drain.go).
func (s store) bound(ctx context.Context, dest, provider string, maxKeys, maxEvents int, dead deadParked) error {
	for {
		key, err := s.deadLetterOldest(ctx, dest, provider, maxKeys, maxEvents, dead)
		if err != nil || key == "" {
			return err
		}
	}
}

// chains groups the handled records into the chains a batch's handle
// stage runs at once, each chain's records one after another: one record
// per chain, unless a destination is ordered per object (Registry.Ordered),
// when a chain is the records of one (provider, key) in offset order.
func chains(todo []*work, ordered bool) [][]int {
	out := make([][]int, 0, len(todo))
	if !ordered {
		for i := range todo {
			out = append(out, []int{i})
		}
		return out
	}
	type pk struct{ provider, key string }
	at := map[pk]int{}
	for i, w := range todo {
		k := pk{w.ev.Provider, w.ev.ObjectKey}
		if j, ok := at[k]; ok && k.key != "" {
			out[j] = append(out[j], i)
			continue
		}
		at[k] = len(out)
		out = append(out, []int{i})
	}
	return out
}

// claimLate re-reads the inbox rows of late, first records of the batch
// whose rows were missing but that the relay has just published, on
// late.go's schedule (noInboxRechecks re-reads, the pause doubling), before
// the batch is handled: a found record then goes through the batch's
// stages with its key's other records, in offset order. It is the claim
// of a batch when a destination is ordered per object (an unordered batch
// re-reads beside its stages: late). It returns the records still missing
// (errNoInbox) or whose re-read failed, for the retry ladder; when ctx
// ends first, the records left are neither handled nor forwarded.
func (b *batch) claimLate(ctx context.Context, late []*work) []*work {
	todo := late
	for n := 1; n <= noInboxRechecks && len(todo) > 0; n++ {
		select {
		case <-ctx.Done():
			for _, w := range todo {
				w.err = ctx.Err() // unclaimed: left unmarked
			}
			return nil
		case <-time.After(noInboxPause << n):
		}
		claims, err := b.claimSorted(ctx, todo)
		if err != nil {
			for _, w := range todo {
				w.err = err
			}
			return todo
		}
		var missing []*work
		for i, w := range todo {
			switch c := claims[i]; {
			case !c.found:
				missing = append(missing, w)
			case schemas.Final(c.prev):
				w.err, w.outcome, w.done = nil, OutcomeDuplicate, true
			default:
				w.err, w.ev.ReceivedAt = nil, c.receivedAt
			}
		}
		todo = missing
	}
	return todo
}
