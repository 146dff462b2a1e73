package inbox

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bits-and-blooms/bloom/v3"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/gatehouse/gatehouse/ingest/upkeep"
	"github.com/gatehouse/gatehouse/internal/config"
)

func TestProbeOfSkipsWhatTheFiltersExclude(t *testing.T) {
	day := func(d int) pgtype.Timestamptz {
		return pgtype.Timestamptz{Time: time.Date(2026, 11, d, 0, 0, 0, 0, time.UTC), Valid: true}
	}
	holding := func(keys ...string) *bloom.BloomFilter {
		f := bloom.NewWithEstimates(1000, 0.0001)
		for _, k := range keys {
			f.Add(filterKey(nil, "p", k))
		}
		return f
	}
	part := func(d int, f *bloom.BloomFilter) keyPartition {
		return keyPartition{name: fmt.Sprint("d", d), starts: day(d), ends: day(d + 1), filter: f}
	}
	win := func(d int) [2]pgtype.Timestamptz { return [2]pgtype.Timestamptz{day(d), day(d + 1)} }
	filters := func(parts ...keyPartition) *keyFilters {
		f := &keyFilters{parts: parts}
		for _, p := range parts {
			if p.filter != nil {
				f.n++
			}
		}
		return f
	}
	a, b, c, d := part(1, holding("in_a", "in_abx")), part(2, holding("in_b", "in_abx")), part(3, nil), part(4, holding())
	x := part(3, holding("in_abx"))
	for _, tc := range []struct {
		name    string
		f       *keyFilters
		key     string
		from    pgtype.Timestamptz
		windows [][2]pgtype.Timestamptz
	}{
		{"in the first", filters(a, b, c, d), "in_a", day(3), [][2]pgtype.Timestamptz{win(1)}},
		{"in the second", filters(a, b, c, d), "in_b", day(3), [][2]pgtype.Timestamptz{win(2)}},
		{"in none: from the first unfiltered", filters(a, b, c, d), "elsewhere", day(3), nil},
		{"another provider's id of the same text", filters(a, b, c, d), "q:in_a", day(3), nil},
		{"every partition filtered: from the end of the last", filters(a, b), "elsewhere", day(3), nil},
		{"a gap: from its start", filters(a, d), "elsewhere", day(2), nil},
		{"more windows than maxProbeWindows: from the third", filters(a, b, x, part(4, holding())), "in_abx", day(3), [][2]pgtype.Timestamptz{win(1), win(2)}},
	} {
		key := filterKey(nil, "p", tc.key)
		if rest, ok := strings.CutPrefix(tc.key, "q:"); ok {
			key = filterKey(nil, "q", rest)
		}
		got := tc.f.probeOf(key)
		want := probe{from: tc.from, windows: [maxProbeWindows][2]pgtype.Timestamptz{noWindow, noWindow}}
		copy(want.windows[:], tc.windows)
		if got != want {
			t.Errorf("%s: probeOf(%s) = %+v, want %+v", tc.name, tc.key, got, want)
		}
	}
	var none *keyFilters
	if got := none.probeOf(filterKey(nil, "p", "x")); got.from != probeEverything || got.windows[0] != noWindow {
		t.Errorf("no filters: probeOf = %+v, want everything", got)
	}
}

// explaining runs each insertSQL through EXPLAIN ANALYZE first (rolled
// back to a savepoint), keeping the key partitions the probe read, then
// for real.
type explaining struct {
	pgx.Tx
	probed []string
}

func (e *explaining) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if sql != insertSQL {
		return e.Tx.Query(ctx, sql, args...)
	}
	if _, err := e.Exec(ctx, `SAVEPOINT explain`); err != nil {
		return nil, err
	}
	var plan []byte
	if err := e.Tx.QueryRow(ctx, `EXPLAIN (ANALYZE, FORMAT JSON) `+sql, args...).Scan(&plan); err != nil {
		return nil, fmt.Errorf("explain: %w", err)
	}
	if _, err := e.Exec(ctx, `ROLLBACK TO SAVEPOINT explain`); err != nil {
		return nil, err
	}
	var walk func(n map[string]any)
	walk = func(n map[string]any) {
		if rel, _ := n["Relation Name"].(string); strings.HasPrefix(rel, "dedupe_keys_p") && n["Node Type"] != "ModifyTable" {
			if loops, _ := n["Actual Loops"].(float64); loops > 0 && !slices.Contains(e.probed, rel) {
				e.probed = append(e.probed, rel)
			}
		}
		children, _ := n["Plans"].([]any)
		for _, c := range children {
			walk(c.(map[string]any))
		}
	}
	var doc []map[string]any
	if err := json.Unmarshal(plan, &doc); err != nil {
		return nil, err
	}
	walk(doc[0]["Plan"].(map[string]any))
	return e.Tx.Query(ctx, sql, args...)
}

// TestSealedKeyPartitionsAreProbedOnlyWhenTheirFilterMayHoldTheID: with
// their key filters built, the sealed key partitions are not read for a
// new id (the statement's plan says so), while a redelivery of an id kept
// in one of them is still refused; a partition sealed too recently gets
// no filter and is always read.
func TestSealedKeyPartitionsAreProbedOnlyWhenTheirFilterMayHoldTheID(t *testing.T) {
	ctx := context.Background()
	base, w := newTestWriter(t, 0)
	resetKeyPartitions(t, base,
		[2]time.Duration{-72 * time.Hour, -48 * time.Hour}, [2]time.Duration{-48 * time.Hour, -24 * time.Hour},
		[2]time.Duration{-24 * time.Hour, -5 * time.Minute}, [2]time.Duration{-5 * time.Minute, time.Hour})
	names := pgxCollect(t, base, `SELECT name FROM storage_partitions WHERE parent = 'dedupe_keys' ORDER BY starts`) // oldest first
	if len(names) != 4 {
		t.Fatalf("key partitions %v", names)
	}
	mustExec(t, base, `INSERT INTO dedupe_keys (provider, event_id, gen) SELECT 'p', 'evt_old_' || i, date_trunc('second', now()) - interval '72 hours' FROM generate_series(1, 2000) i`)
	mustExec(t, base, `INSERT INTO dedupe_keys (provider, event_id, gen) VALUES ('p', 'evt_b', date_trunc('second', now()) - interval '48 hours'), ('p', 'evt_c', now() - interval '1 hour')`)

	reg := prometheus.NewRegistry()
	kb := &upkeep.KeyFilterBuilder{Pool: base, FalsePositives: 0.01, Registerer: reg}
	missing := func() float64 {
		t.Helper()
		mfs, err := reg.Gather()
		if err != nil || len(mfs) != 1 {
			t.Fatalf("gather: %v, %d families", err, len(mfs))
		}
		return mfs[0].GetMetric()[0].GetGauge().GetValue()
	}
	// Another process holds the lock: nothing is built, two are missing.
	hold, err := base.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hold.Exec(ctx, `SELECT pg_advisory_lock(hashtextextended('gatehouse.storage:' || $1, 0))`, upkeep.KeyFilterLock); err != nil {
		t.Fatal(err)
	}
	if err := kb.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	if n := count(t, base, `SELECT count(*) FROM dedupe_key_filters`); n != 0 || missing() != 2 {
		t.Fatalf("lock held elsewhere: %d filters built, %g missing; want 0 and 2", n, missing())
	}
	if _, err := hold.Exec(ctx, `SELECT pg_advisory_unlock(hashtextextended('gatehouse.storage:' || $1, 0))`, upkeep.KeyFilterLock); err != nil {
		t.Fatal(err)
	}
	hold.Release()
	if err := kb.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	built := pgxCollect(t, base, `SELECT name FROM dedupe_key_filters ORDER BY name DESC`)
	if want := []string{names[1], names[0]}; !slices.Equal(built, want) || missing() != 0 {
		t.Fatalf("filters built for %v, %g missing; want the two sealed partitions %v, none missing", built, missing(), want)
	}
	n, bytes, err := w.RefreshKeyFilters(ctx)
	if err != nil || n != 2 || bytes == 0 {
		t.Fatalf("RefreshKeyFilters = %d partitions, %d bytes, %v; want 2 filters", n, bytes, err)
	}

	probedBy := func(filters *keyFilters, ids ...string) []string {
		t.Helper()
		tx, err := base.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx) //nolint:errcheck
		e := &explaining{Tx: tx}
		batch := make([]*pending, len(ids))
		for i, id := range ids {
			batch[i] = &pending{rec: rec(id, 0)}
		}
		if err := execOn(ctx, e, batch, filters); err != nil {
			t.Fatal(err)
		}
		slices.Sort(e.probed)
		return e.probed
	}
	fresh := []string{"evt_new_1", "evt_new_2", "evt_new_3"}
	loaded := w.filters.Load()
	if got, want := probedBy(loaded, fresh...), names[2:]; !slices.Equal(got, want) {
		t.Errorf("new ids with the filters: key partitions read %v; want only the unsealed %v", got, want)
	}
	// A false positive of the oldest partition's filter: that partition
	// is read, not the one between it and the unsealed ones.
	fp := *loaded
	fp.parts = slices.Clone(loaded.parts)
	fp.parts[0].filter = bloom.NewWithEstimates(10, 0.01).Add(filterKey(nil, "p", "evt_new_2"))
	if got, want := probedBy(&fp, "evt_new_2"), []string{names[0], names[2], names[3]}; !slices.Equal(got, want) {
		t.Errorf("a false positive in %s: key partitions read %v; want %v", names[0], got, want)
	}
	if got := probedBy(nil, fresh...); !slices.Equal(got, names) {
		t.Errorf("new ids without filters: key partitions read %v; want all %v", got, names)
	}

	// Redeliveries of ids kept in each partition are duplicates.
	for _, id := range []string{"evt_old_1", "evt_old_2000", "evt_b", "evt_c"} {
		if out := writeOne(t, w, rec(id, 0)); out.New {
			t.Errorf("redelivery of %s: recorded as new", id)
		}
	}
	if out := writeOne(t, w, rec("evt_new_1", 0)); !out.New {
		t.Error("a new id was refused")
	}

	// storage.key_filter_false_positives 0 deletes them; a dropped
	// partition's filter goes with it.
	c, err := base.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	mustExec(t, base, `DROP TABLE `+names[0])
	mustExec(t, base, `DELETE FROM storage_partitions WHERE name = $1`, names[0])
	if n := count(t, base, `SELECT count(*) FROM dedupe_key_filters`); n != 1 {
		t.Errorf("filters after a partition was dropped: %d, want 1", n)
	}
	if _, err := upkeep.BuildKeyFilters(ctx, c.Conn(), 0); err != nil {
		t.Fatal(err)
	}
	if n := count(t, base, `SELECT count(*) FROM dedupe_key_filters`); n != 0 {
		t.Errorf("filters with the false positive rate 0: %d, want none", n)
	}
	if n, _, err := w.RefreshKeyFilters(ctx); err != nil || n != 0 {
		t.Errorf("RefreshKeyFilters after the filters were deleted = %d, %v; want 0", n, err)
	}
}

func pgxCollect(t *testing.T, pool *pgxpool.Pool, sql string) []string {
	t.Helper()
	rows, err := pool.Query(context.Background(), sql)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// BenchmarkProbeFrom is the receiver's CPU per new event id for the key
// filters: 30 sealed daily partitions of 1.67 M keys each (50 M events
// over 30 days) at the default false positive rate.
func BenchmarkProbeFrom(b *testing.B) {
	const parts, perPart = 30, 1_670_000
	f := &keyFilters{n: parts}
	day0 := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	var buf []byte
	for d := range parts {
		bf := bloom.NewWithEstimates(perPart, config.DefaultKeyFilterFalsePositives)
		for i := range perPart {
			bf.Add(filterKey(buf, "stripe", fmt.Sprintf("evt_%d_%d", d, i)))
		}
		f.parts = append(f.parts, keyPartition{
			starts: pgtype.Timestamptz{Time: day0.AddDate(0, 0, d), Valid: true},
			ends:   pgtype.Timestamptz{Time: day0.AddDate(0, 0, d+1), Valid: true}, filter: bf})
	}
	var probed int
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		buf = filterKey(buf, "stripe", fmt.Sprintf("evt_new_%d", i))
		if pr := f.probeOf(buf); pr.windows[0] != noWindow || pr.from != f.parts[parts-1].ends {
			probed++
		}
	}
	b.ReportMetric(float64(probed)/float64(b.N), "probed/op")
}
