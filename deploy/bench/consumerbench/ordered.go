package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The ordered cases (issue 49): a forward entry with order: per_object,
// five events per object, to a local destination answering at once.
// Case 11 has no failures; in case 12 the first attempt of the first
// event of 1 % of the objects fails (500), so those objects are parked
// behind it until its retry (consumers.retry_delays: 10 s) while the
// others keep flowing. The other objects' rate is theirs alone: their
// events over the time from the first claim to their last processed_at.
// Their p99 is of each event's time from its claim to its processed_at
// (handled, delivered, applied), against case 11's: the time an object
// waits in the backlog before its claim is the run's, not the parking's.
//
// Case 11 runs twice, before and after case 12 (fwdordered, then
// fwdorderedafter), and case 12 is divided by the mean of the two: the
// database grows and autovacuum wakes up as the cases go on, and a
// baseline measured only before would charge that drift to the parking.

const (
	orderedPerObject = 5   // events per object
	orderedFailEvery = 100 // one object in this many fails its first attempt
)

// failsFirst reports whether the destination answers 500 to the first
// attempt of the delivery webhook-id id: the first event of every
// orderedFailEvery-th object of provider fwdordfail.
func failsFirst(id string) bool {
	n, ok := strings.CutPrefix(id, "fwdordfail:fwdordfail_")
	if !ok {
		return false
	}
	i, err := strconv.Atoi(n)
	return err == nil && i%orderedPerObject == 0 && (i/orderedPerObject)%orderedFailEvery == 0
}

// orderedCases runs cases 11 and 12; unordered is case 7's rate (events/s).
func (b *bench) orderedCases(ctx context.Context, res *results, unordered float64) error {
	o := b.o
	b.Logf("case 11: %d events, %d per object, forwarded to an ordered destination answering at once", o.events, orderedPerObject)
	clean, err := b.backlog(ctx, "fwdordered", o.events, orderedPerObject)
	if err != nil {
		return err
	}
	res.row("11 | forward with `order: per_object` of %d events (%d per object) to a local destination answering at once | %.0f events/s = **%.2f × unordered** (case 7) | ≥ 0.9 ×",
		o.events, orderedPerObject, clean, clean/unordered)
	var cleanP99 float64
	if err := b.Pool.QueryRow(ctx, orderedP99SQL, "fwdordered", orderedPerObject, 0).Scan(&cleanP99); err != nil {
		return fmt.Errorf("case 11: %w", err)
	}
	b.Logf("case 12: the same with 1 %% of the objects failing their first attempt")
	if _, err := b.backlog(ctx, "fwdordfail", o.events, orderedPerObject); err != nil {
		return err
	}
	var others, span float64
	err = b.Pool.QueryRow(ctx, `SELECT count(*)::float8, extract(epoch FROM max(processed_at) - min(processing_started_at))::float8
FROM inbox WHERE provider = 'fwdordfail' AND (split_part(event_id, '_', 2)::int / $1) % $2 <> 0`, orderedPerObject, orderedFailEvery).Scan(&others, &span)
	if err != nil {
		return fmt.Errorf("case 12: %w", err)
	}
	rate := others / max(span, 1e-9)
	var p99 float64
	if err := b.Pool.QueryRow(ctx, orderedP99SQL, "fwdordfail", orderedPerObject, orderedFailEvery).Scan(&p99); err != nil {
		return fmt.Errorf("case 12: %w", err)
	}
	b.Logf("case 11 again, after case 12 (the baseline is the mean of both runs)")
	after, err := b.backlog(ctx, "fwdorderedafter", o.events, orderedPerObject)
	if err != nil {
		return err
	}
	var afterP99 float64
	if err := b.Pool.QueryRow(ctx, orderedP99SQL, "fwdorderedafter", orderedPerObject, 0).Scan(&afterP99); err != nil {
		return fmt.Errorf("case 11 after 12: %w", err)
	}
	base, baseP99 := (clean+after)/2, (cleanP99+afterP99)/2
	res.row("12 | the same with 1 %% of the objects failing their first attempt (parked behind it until its retry 10 s later): the other objects' events | %.0f events/s = **%.2f × case 11** (%.0f events/s, the mean of its runs before and after case 12: %.0f and %.0f) | ≥ 0.9 ×",
		rate, rate/base, base, clean, after)
	res.row("12 p99 | the same: the other objects' events, p99 from claim to processed (handled, delivered, applied) | %.1f ms = **%.2f × case 11's** (%.1f ms, the mean of %.1f and %.1f) | ≤ 1.5 ×",
		1000*p99, p99/max(baseP99, 1e-9), 1000*baseP99, 1000*cleanP99, 1000*afterP99)
	// A parked event's inbox row is final once the batch that parked it
	// applied; it goes out when the drain reaches it, after its object's
	// head was retried (10 s): wait for the drain before counting every
	// delivery (cases 7, 8, 11 twice and 12), so a lost one still fails the run.
	want := int64(5 * o.events)
	for deadline := time.Now().Add(90 * time.Second); b.api.delivered.Load() < want && time.Now().Before(deadline); {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	if got := b.api.delivered.Load(); got < want {
		return fmt.Errorf("ordered cases: %d deliveries in all after 90 s, want at least %d", got, want)
	}
	return nil
}

// orderedP99SQL is the p99 (seconds) of the time from claim to processed
// of provider $1's events, those of every $3-th object ($2 events per
// object) left out ($3 = 0: none).
const orderedP99SQL = `SELECT coalesce(percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM processed_at - processing_started_at)), 0)::float8
FROM inbox WHERE provider = $1 AND ($3 = 0 OR (split_part(event_id, '_', 2)::int / $2) % NULLIF($3, 0) <> 0)`
