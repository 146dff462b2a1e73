package inbox

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/bits-and-blooms/bloom/v3"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// Key filters (docs/STORAGE.md, "How storage stays bounded"). A new event id must be shown absent
// from every dedupe key partition that can hold a live key. Probing a
// partition is a random read in its primary key, and those indexes
// outgrow memory as history accumulates (about 60 bytes a key), so a new
// id came to cost one buffer miss per partition probed. A partition that
// no write can reach any more (sealed: it ended longer ago than
// the upkeep's keyFilterSeal) never changes again, so KeyFilterBuilder (beside
// ingest's maintenance, in ingest/upkeep) builds a Bloom filter of its
// keys once (dedupe_key_filters, about 1.8 bytes a key at the default
// 0.1 % false positives), and each Writer holds them in memory: a
// sealed partition is probed only when its filter says the id may be
// there. A filter has no false negatives, so a duplicate is still found.

// keyFilterRefresh is how often a Writer reloads the partition list and
// any filter built since.
const keyFilterRefresh = 30 * time.Second

// keyPartition is one dedupe key partition as a Writer last saw it.
type keyPartition struct {
	name         string
	starts, ends pgtype.Timestamptz
	filter       *bloom.BloomFilter // nil: no filter (not sealed or not built yet), always probed
}

// keyFilters is the Writer's view of the key partitions, oldest first,
// swapped whole on refresh.
type keyFilters struct {
	parts []keyPartition
	n     int // partitions with a filter
}

var probeEverything = pgtype.Timestamptz{InfinityModifier: pgtype.NegativeInfinity, Valid: true}

// filterKey is the bytes a filter holds for an event id.
func filterKey(buf []byte, provider, eventID string) []byte {
	buf = append(buf[:0], provider...)
	buf = append(buf, 0)
	return append(buf, eventID...)
}

// maxProbeWindows is how many sealed partitions a new id's filters may
// send it to before the rest is probed whole: at 1 % false positives and
// 30 sealed partitions, 26 % of new ids hit one false positive, 3.6 %
// two and 0.3 % three or more (at the default 0.1 %: 3 %, 0.04 %, 0).
const maxProbeWindows = 2

// probe says which key partitions insertSQL reads for one key: every
// partition from from on, and the windows [starts, ends) before it (an
// unused window is empty: both ends +infinity).
type probe struct {
	from    pgtype.Timestamptz
	windows [maxProbeWindows][2]pgtype.Timestamptz
}

var noWindow = [2]pgtype.Timestamptz{{InfinityModifier: pgtype.Infinity, Valid: true}, {InfinityModifier: pgtype.Infinity, Valid: true}}

// probeOf walks the partitions oldest first while they are contiguous and
// filtered: a filter that excludes the key skips its partition, one that
// may hold it (a false positive, or the key) makes that partition a
// window, up to maxProbeWindows. The first partition without a filter, a
// gap, or one window too many ends the walk: from there on everything is
// probed. Without filters, everything is probed.
func (f *keyFilters) probeOf(buf []byte) probe {
	pr := probe{from: probeEverything, windows: [maxProbeWindows][2]pgtype.Timestamptz{noWindow, noWindow}}
	if f == nil || f.n == 0 {
		return pr
	}
	var (
		locs []uint64 // the key's bit locations, hashed once for every filter
		used int
	)
	for i, p := range f.parts {
		if i > 0 && !sameInstant(p.starts, f.parts[i-1].ends) {
			return pr // a gap: nothing is known of what follows
		}
		if p.filter == nil {
			pr.from = p.starts
			return pr
		}
		if k := p.filter.K(); uint(len(locs)) != k {
			locs = bloom.Locations(buf, k)
		}
		if p.filter.TestLocations(locs) {
			if used == maxProbeWindows {
				pr.from = p.starts
				return pr
			}
			pr.windows[used] = [2]pgtype.Timestamptz{p.starts, p.ends}
			used++
		}
		pr.from = p.ends
	}
	return pr
}

func sameInstant(a, b pgtype.Timestamptz) bool {
	return a.Valid == b.Valid && a.InfinityModifier == b.InfinityModifier && a.Time.Equal(b.Time)
}

// bytes is the memory the filters hold.
func (f *keyFilters) bytes() int {
	n := 0
	for _, p := range f.parts {
		if p.filter != nil {
			n += int(p.filter.Cap() / 8)
		}
	}
	return n
}

// loadKeyFilters reads the key partitions and the filters built for them,
// reusing those prev already holds (a filter never changes).
func loadKeyFilters(ctx context.Context, q rowQuerier, prev *keyFilters) (*keyFilters, error) {
	rows, err := q.Query(ctx, `SELECT p.name, p.starts, p.ends, f.name IS NOT NULL
FROM storage_partitions p LEFT JOIN dedupe_key_filters f ON f.name = p.name
WHERE p.parent = 'dedupe_keys' ORDER BY p.starts`)
	if err != nil {
		return nil, fmt.Errorf("key partitions: %w", err)
	}
	var (
		parts []keyPartition
		built []bool
	)
	for rows.Next() {
		var (
			p   keyPartition
			has bool
		)
		if err := rows.Scan(&p.name, &p.starts, &p.ends, &has); err != nil {
			rows.Close()
			return nil, fmt.Errorf("key partitions: %w", err)
		}
		parts, built = append(parts, p), append(built, has)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("key partitions: %w", err)
	}
	known := map[string]*bloom.BloomFilter{}
	if prev != nil {
		for _, p := range prev.parts {
			known[p.name] = p.filter
		}
	}
	out := &keyFilters{parts: parts}
	for i := range out.parts {
		p := &out.parts[i]
		if !built[i] {
			continue
		}
		if p.filter = known[p.name]; p.filter == nil {
			var bits []byte
			if err := q.QueryRow(ctx, `SELECT bits FROM dedupe_key_filters WHERE name = $1`, p.name).Scan(&bits); err != nil {
				return nil, fmt.Errorf("key filter of %s: %w", p.name, err)
			}
			p.filter = new(bloom.BloomFilter)
			if err := p.filter.UnmarshalBinary(bits); err != nil {
				return nil, fmt.Errorf("key filter of %s: %w", p.name, err)
			}
		}
		out.n++
	}
	return out, nil
}

// rowQuerier reads the filters: the Writer's pool, or a test's transaction.
type rowQuerier interface {
	querier
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// RefreshKeyFilters reloads the key partitions and their filters now; the
// Writer also does it every keyFilterRefresh. It returns how many
// partitions have a filter and the bytes they hold.
func (w *Writer) RefreshKeyFilters(ctx context.Context) (partitions, bytes int, err error) {
	// A connection of its own for each refresh: the Writer's one
	// connection keeps writing, and no idle connection is left in the
	// caller's pool (one that outlives a database restart fails the
	// caller's next query).
	conn, err := pgx.ConnectConfig(ctx, w.connConfig.Copy())
	if err != nil {
		return 0, 0, fmt.Errorf("key filters: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx)) //nolint:errcheck // read-only; the session ends either way
	f, err := loadKeyFilters(ctx, conn, w.filters.Load())
	if err != nil {
		return 0, 0, err
	}
	w.filters.Store(f)
	return f.n, f.bytes(), nil
}

func (w *Writer) refreshLoop() {
	t := time.NewTicker(keyFilterRefresh)
	defer t.Stop()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), keyFilterRefresh)
		if _, _, err := w.RefreshKeyFilters(ctx); err != nil {
			slog.Warn("key filters not refreshed: new event ids are probed in every key partition until they are", "err", err)
		}
		cancel()
		select {
		case <-t.C:
		case <-w.quit:
			return
		}
	}
}
