package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gatehouse/gatehouse/deploy/bench/benchenv"
)

// The partition-roll row: the moment a deployment's current inbox, outbox
// and dedupe-key partitions change, as they do every partition interval
// in service. A database of its own whose gatehouse.yaml sets all three
// intervals to -roll-width, `gatehouse serve` on it under steady
// closed-loop load (reference scheme) from its start to -roll-span after
// the first such moment (read from storage_partitions) at least -roll-lead
// and -roll-span after the start: the lead-in is the fresh database's
// first seconds, so the span before the change is the receiver in
// service; the spans in -roll-window windows.

// rollTarget is the target of events/s in the span after the change ÷ the span before.
const rollTarget = 0.9

// rollParents are the partitioned tables whose current partition changes.
var rollParents = []string{"inbox", "outbox", "dedupe_keys"}

// partition is one row of storage_partitions, with the rows it holds.
type partition struct {
	parent, name string
	starts, ends time.Time
	rows         int64
	analyzed     *time.Time // autovacuum's last analyze of it (nil: none)
}

// rollResult is the partition-roll row.
type rollResult struct {
	change        time.Time
	win           []window    // the lead-in, then the span before and the span after the change in windows
	before, after []partition // each parent's partition before and after the change
	s             sample      // the whole run
	keys          int64       // dedupe_keys rows the run wrote
}

func (b *bench) roll(ctx context.Context) (*rollResult, error) {
	if b.o.rollWidth <= 0 {
		return nil, nil
	}
	r, err := b.rollRun(ctx)
	if err != nil {
		return nil, fmt.Errorf("partition roll: %w", err)
	}
	return r, nil
}

func (b *bench) rollRun(ctx context.Context) (*rollResult, error) {
	w, span := b.o.rollWidth, b.o.rollSpan
	db, err := b.newFreshDB(ctx, "roll", fmt.Sprintf("storage:\n  partition_interval: %s\n  key_partition_interval: %s\n  outbox_partition_interval: %s\n", w, w, w))
	if err != nil {
		return nil, err
	}
	defer db.close(b)
	p, err := db.receiver(b)
	if err != nil {
		return nil, err
	}
	if err := p.Start(ctx); err != nil {
		p.Stop()
		return nil, fmt.Errorf("gatehouse serve: %w", err)
	}
	defer p.Stop()
	r := &rollResult{}
	if r.change, err = nextChange(ctx, db.pool, w, b.o.rollLead+span+time.Second, b.o.rollWait); err != nil {
		return nil, err
	}
	start := time.Now()
	b.Logf("partition roll: the inbox, outbox and key partitions change at %s; %d connections from now (%s) to %s",
		r.change.UTC().Format(time.TimeOnly), b.o.rollConns, start.UTC().Format(time.TimeOnly), r.change.Add(span).UTC().Format(time.TimeOnly))
	bs := append([]time.Time{start}, bounds(r.change.Add(-span), b.o.rollWindow, 2*span)...)
	wait := b.cpuAt(ctx, bs)
	pg0, recv0 := b.PostgresCPU(), procCPU(p)
	src := benchenv.NewDeliveries(provider, p.Public, b.secret, b.o.bodyBytes)
	l := benchenv.Load{Addr: p.Public, Conns: b.o.rollConns, Next: src.Next}.Closed(ctx, bs[len(bs)-1].Sub(start))
	pg1, recv1 := b.PostgresCPU(), procCPU(p)
	cpu := wait()
	if r.s, err = fromLoad(l, ctx.Err()); err != nil {
		return nil, err
	}
	if r.s.errs > 0 {
		return nil, fmt.Errorf("%d failed requests (last: %s)", r.s.errs, r.s.errMsg)
	}
	r.s.pgCPU, r.s.recvCPU = pg1-pg0, recv1-recv0
	if r.win, err = windows(l, bs, cpu); err != nil {
		return nil, err
	}
	inbox, outbox, err := db.events(ctx)
	if err != nil {
		return nil, err
	}
	if err := db.pool.QueryRow(ctx, "SELECT count(*) FROM dedupe_keys").Scan(&r.keys); err != nil {
		return nil, fmt.Errorf("count keys: %w", err)
	}
	if inbox != int64(r.s.n) || outbox != int64(r.s.n) {
		return nil, fmt.Errorf("%d acknowledged events but %d inbox and %d outbox rows", r.s.n, inbox, outbox)
	}
	// The change happened in the run: rows reached each parent's partition
	// ending at it and the one starting at it.
	parts, err := partitions(ctx, db.pool)
	if err != nil {
		return nil, err
	}
	for _, parent := range rollParents {
		for _, pt := range parts {
			switch {
			case pt.parent != parent:
			case pt.ends.Equal(r.change):
				r.before = append(r.before, pt)
			case pt.starts.Equal(r.change):
				r.after = append(r.after, pt)
			}
		}
	}
	if len(r.before) != len(rollParents) || len(r.after) != len(rollParents) {
		return nil, fmt.Errorf("storage_partitions changed during the run: no partition of each of %s ends and starts at %s (%s)",
			strings.Join(rollParents, ", "), r.change.UTC().Format(time.RFC3339), listPartitions(parts))
	}
	for _, set := range [][]partition{r.before, r.after} {
		for i := range set {
			pt := &set[i]
			if err := db.pool.QueryRow(ctx, "SELECT count(*) FROM "+pgx.Identifier{pt.name}.Sanitize()).Scan(&pt.rows); err != nil {
				return nil, fmt.Errorf("count %s: %w", pt.name, err)
			}
			err := db.pool.QueryRow(ctx, "SELECT max(last_autoanalyze) FROM pg_stat_user_tables WHERE relname = $1", pt.name).Scan(&pt.analyzed)
			if err != nil {
				return nil, fmt.Errorf("read %s's last analyze: %w", pt.name, err)
			}
			if pt.rows == 0 {
				return nil, fmt.Errorf("no rows reached %s [%s, %s): the change at %s did not fall within the load", pt.name,
					pt.starts.UTC().Format(time.TimeOnly), pt.ends.UTC().Format(time.TimeOnly), r.change.UTC().Format(time.TimeOnly))
			}
		}
	}
	before, after := r.spans(span)
	b.Logf("partition roll: %.0f/s before, %.0f/s after the change (ratio %.2f)", before.tput(), after.tput(), after.tput()/before.tput())
	return r, nil
}

// partitions reads storage_partitions of rollParents (the legacy
// partitions, from -infinity, left out).
func partitions(ctx context.Context, pool *pgxpool.Pool) ([]partition, error) {
	rows, err := pool.Query(ctx, `SELECT parent, name, starts, ends FROM storage_partitions
WHERE parent = ANY($1) AND isfinite(starts) ORDER BY parent, starts`, rollParents)
	if err != nil {
		return nil, fmt.Errorf("read storage_partitions: %w", err)
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (partition, error) {
		var p partition
		err := row.Scan(&p.parent, &p.name, &p.starts, &p.ends)
		return p, err
	})
}

// listPartitions is each parent's partitions' bounds, for an error.
func listPartitions(parts []partition) string {
	var s []string
	for _, parent := range rollParents {
		var bs []string
		for _, p := range parts {
			if p.parent == parent {
				bs = append(bs, fmt.Sprintf("[%s, %s)", p.starts.UTC().Format("01-02 15:04:05"), p.ends.UTC().Format("01-02 15:04:05")))
			}
		}
		s = append(s, parent+" "+strings.Join(bs, " "))
	}
	return "storage_partitions, UTC: " + strings.Join(s, "; ")
}

// nextChange is the first moment at least ahead from now, and at most
// limit later, when a partition of each of rollParents starts; the maintenance
// pass of the serve just started may still be creating them, so
// storage_partitions is read again for up to 30 s.
func nextChange(ctx context.Context, pool *pgxpool.Pool, width, ahead, limit time.Duration) (time.Time, error) {
	var change, from, to time.Time
	var parts []partition
	err := benchenv.Until(ctx, 2*time.Second, 30*time.Second, func() (bool, error) {
		var err error
		if parts, err = partitions(ctx, pool); err != nil {
			return false, err
		}
		from = time.Now().Add(ahead)
		to = from.Add(limit)
		change = commonStart(parts, from, to)
		return !change.IsZero(), nil
	})
	if errors.Is(err, benchenv.ErrNotWithin) {
		return time.Time{}, fmt.Errorf("no moment between %s and %s UTC when a new inbox, outbox and dedupe_keys partition all start, so no partition change to measure "+
			"(storage.*partition_interval %s, -roll-wait %s; %s)", from.UTC().Format(time.TimeOnly), to.UTC().Format(time.TimeOnly), width, limit, listPartitions(parts))
	}
	return change, err
}

// commonStart is the first start of a partition of every one of
// rollParents within [from, to]; zero when none.
func commonStart(parts []partition, from, to time.Time) time.Time {
	starts := map[string][]time.Time{}
	for _, p := range parts {
		if !p.starts.Before(from) && !p.starts.After(to) {
			starts[p.parent] = append(starts[p.parent], p.starts)
		}
	}
	for _, t := range starts[rollParents[0]] {
		all := true
		for _, parent := range rollParents[1:] {
			all = all && slices.ContainsFunc(starts[parent], t.Equal)
		}
		if all {
			return t
		}
	}
	return time.Time{}
}

// spans merges the windows of the span before the change and of the span after it.
func (r *rollResult) spans(span time.Duration) (before, after window) {
	before = window{from: r.change.Add(-span), to: r.change, lat: benchenv.NewHist()}
	after = window{from: r.change, to: r.change.Add(span), lat: benchenv.NewHist()}
	for _, w := range r.win {
		for _, m := range []*window{&before, &after} {
			if !w.from.Before(m.from) && !w.to.After(m.to) {
				m.n, m.pgCPU = m.n+w.n, m.pgCPU+w.pgCPU
				m.lat.Merge(w.lat)
			}
		}
	}
	return before, after
}

// since is t from the change ("+12 s"); "none" for nil.
func (r *rollResult) since(t *time.Time) string {
	if t == nil {
		return "none"
	}
	return fmt.Sprintf("%+.0f s", t.Sub(r.change).Seconds())
}

// print writes the row, or why it could not be measured (err).
func (r *rollResult) print(w io.Writer, b *bench, err error) {
	if err != nil {
		fmt.Fprintf(w, "\n### Partition roll\n\n**Not measured**: %v.\n", err)
		return
	}
	if r == nil {
		return
	}
	span := b.o.rollSpan
	fmt.Fprintf(w, "\n### Partition roll\n\n")
	fmt.Fprintf(w, "The moment a deployment's current inbox, outbox and dedupe-key partitions change, as they do every partition interval in service (tables not analyzed by the benchmark: autovacuum's own, as in service). "+
		"A database of its own, just created and migrated (a checkpoint and a sync before), its gatehouse.yaml setting `storage.partition_interval`, `storage.key_partition_interval` and `storage.outbox_partition_interval` to %s; "+
		"`gatehouse serve` on it under closed-loop load at %d connections (reference scheme, requests signed as sent) from its start to %s after the first moment at least %s after the start at which a partition of all three starts (read from storage_partitions; the partitions and the rows each received below). "+
		"The lead-in (the first row, at least %s: the fresh database's first seconds, its tables analyzed by autovacuum alone) keeps the start out of the %s before the change; the spans in %s windows. One run.\n\n",
		b.o.rollWidth, b.o.rollConns, span, b.o.rollLead+span, b.o.rollLead, span, b.o.rollWindow)
	tb := benchenv.NewTable(w, "table", "partition before the change", "rows written in the run>", "last autovacuum analyze>", "partition after the change", "rows written in the run>", "last autovacuum analyze>")
	for i := range r.before {
		p, q := r.before[i], r.after[i]
		tb.Rowf("%s | %s [%s, %s) | %s | %s | %s [%s, %s) | %s | %s", p.parent, p.name, p.starts.UTC().Format(time.TimeOnly), p.ends.UTC().Format(time.TimeOnly), benchenv.Thousands(float64(p.rows)), r.since(p.analyzed),
			q.name, q.starts.UTC().Format(time.TimeOnly), q.ends.UTC().Format(time.TimeOnly), benchenv.Thousands(float64(q.rows)), r.since(q.analyzed))
	}
	fmt.Fprintf(w, "\nA key is written into every key partition within ingest's key overlap of a boundary (`keyOverlap`, ingest/inbox/store_sql.go): %.1f dedupe_keys rows per event in this run.\n\n", float64(r.keys)/float64(max(r.s.n, 1)))
	tb = benchenv.NewTable(w, "window (from the change)>", "events/s>", "p50 ack>", "p99 ack>", "PostgreSQL CPU per event>")
	for i, win := range r.win {
		note := ""
		if i == 0 {
			note = " (lead-in: the load's start)"
		}
		tb.Rowf("%+.0f s … %+.0f s%s | %s | %.2f ms | %.2f ms | %.0f µs", win.from.Sub(r.change).Seconds(), win.to.Sub(r.change).Seconds(), note,
			benchenv.Thousands(win.tput()), win.p50(), win.p99(), win.pgPer())
	}
	before, after := r.spans(span)
	tr, cr := after.tput()/before.tput(), after.pgPer()/before.pgPer()
	fmt.Fprintf(w, "\nThe %s after the change ÷ the %s before: events/s %s ÷ %s = **%.2f** (target ≥ %.1f: %s); PostgreSQL CPU per event %.0f µs ÷ %.0f µs = **%.2f**; p99 ack %.2f ms and %.2f ms.\n",
		span, span, benchenv.Thousands(after.tput()), benchenv.Thousands(before.tput()), tr, rollTarget, benchenv.Verdict(tr >= rollTarget), after.pgPer(), before.pgPer(), cr, after.p99(), before.p99())
}
