package upkeep

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/bits-and-blooms/bloom/v3"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/gatehouse/gatehouse/internal/storage"
)

// KeyFilterBuilder builds the key filters of the sealed dedupe key
// partitions (ingest/inbox's keyfilter.go) in the background of `gatehouse serve`: one
// process at a time (an advisory lock), apart from the storage passes, so
// a long build (a migrated installation's first, about a second per
// million keys) delays no partition's creation.
type KeyFilterBuilder struct {
	Pool *pgxpool.Pool
	// FalsePositives is storage.key_filter_false_positives (0: off, the
	// filters are deleted).
	FalsePositives float64
	// Every is the time between passes. Default 1m.
	Every  time.Duration
	Logger *slog.Logger // nil: slog.Default()
	// Registerer nil: the metrics are not registered.
	Registerer prometheus.Registerer

	once    sync.Once
	err     error
	missing prometheus.Gauge
}

// keyFilterSeal is how long after its end a key partition is sealed: the
// Writer (ingest/inbox) writes a key into a partition only while now() is within
// keyOverlap of it, and its statements end within writerStatementTimeout.
const keyFilterSeal = 10 * time.Minute

// KeyFilterLock names the builder's advisory lock (storage.Locked): a
// process holding it builds no filter.
const KeyFilterLock = "ingest.key_filters"

// unfiltered selects the sealed key partitions p without a filter
// ($1: keyFilterSeal).
const unfiltered = `p.parent = 'dedupe_keys' AND p.ends < now() - $1::interval
  AND NOT EXISTS (SELECT 1 FROM dedupe_key_filters f WHERE f.name = p.name)`

// Run builds at once and then every Every until ctx ends; a failed pass
// is logged, and gatehouse_storage_key_filters_missing shows what is left.
func (b *KeyFilterBuilder) Run(ctx context.Context) error {
	if err := b.setup(); err != nil {
		return err
	}
	t := time.NewTicker(b.Every)
	defer t.Stop()
	for {
		if err := b.Pass(ctx); err != nil && ctx.Err() == nil {
			b.Logger.Warn("key filters", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

func (b *KeyFilterBuilder) setup() error {
	b.once.Do(func() {
		if b.Every <= 0 {
			b.Every = time.Minute
		}
		if b.Logger == nil {
			b.Logger = slog.Default()
		}
		b.missing = prometheus.NewGauge(prometheus.GaugeOpts{Name: "gatehouse_storage_key_filters_missing",
			Help: "Sealed dedupe key partitions without a key filter: each is probed for every new event id (docs/STORAGE.md, \"How storage stays bounded\")."})
		if b.Registerer != nil {
			if err := b.Registerer.Register(b.missing); err != nil {
				b.err = fmt.Errorf("register key filter metrics: %w", err)
			}
		}
	})
	return b.err
}

// Pass builds the missing filters when it gets the lock (else another
// process is building them) and refreshes the gauge.
func (b *KeyFilterBuilder) Pass(ctx context.Context) error {
	if err := b.setup(); err != nil {
		return err
	}
	_, err := storage.Locked(ctx, b.Pool, KeyFilterLock, func(ctx context.Context, conn *pgx.Conn) error {
		t := time.Now()
		built, err := BuildKeyFilters(ctx, conn, b.FalsePositives)
		if len(built) > 0 {
			b.Logger.Info("key filters built", "partitions", built, "false_positives", b.FalsePositives, "took", time.Since(t).Round(time.Millisecond))
		}
		return err
	})
	if err != nil {
		return err
	}
	if b.FalsePositives > 0 {
		var n int
		if err := b.Pool.QueryRow(ctx, `SELECT count(*) FROM storage_partitions p WHERE `+unfiltered, keyFilterSeal).Scan(&n); err != nil {
			return fmt.Errorf("count missing key filters: %w", err)
		}
		b.missing.Set(float64(n))
	}
	return nil
}

// BuildKeyFilters builds the filter of every sealed dedupe key partition
// that has none, at false positive rate fp; with fp 0 it deletes every
// filter instead (storage.key_filter_false_positives: 0 turns them off).
// It returns the partitions it built. Ingest's maintenance runs it in each
// pass; storagebench runs it after loading history.
func BuildKeyFilters(ctx context.Context, conn *pgx.Conn, fp float64) ([]string, error) {
	if fp <= 0 {
		_, err := conn.Exec(ctx, `DELETE FROM dedupe_key_filters`)
		return nil, err
	}
	rows, err := conn.Query(ctx, `SELECT p.name FROM storage_partitions p WHERE `+unfiltered+` ORDER BY p.starts DESC`, keyFilterSeal)
	if err != nil {
		return nil, fmt.Errorf("sealed key partitions: %w", err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("sealed key partitions: %w", err)
	}
	var built []string
	for _, name := range names {
		if err := buildKeyFilter(ctx, conn, name, fp); err != nil {
			return built, err
		}
		built = append(built, name)
	}
	return built, nil
}

// buildKeyFilter reads every key of the sealed partition name in one
// snapshot (a repeatable-read transaction: the count sizes the filter)
// and stores the filter.
func buildKeyFilter(ctx context.Context, conn *pgx.Conn, name string, fp float64) error {
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return fmt.Errorf("key filter of %s: %w", name, err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // read-only; ends either way
	table := pgx.Identifier{name}.Sanitize()
	var n int64
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM `+table).Scan(&n); err != nil {
		return fmt.Errorf("key filter of %s: count keys: %w", name, err)
	}
	f := bloom.NewWithEstimates(uint(max(n, 1)), fp)
	rows, err := tx.Query(ctx, `SELECT provider, event_id FROM `+table)
	if err != nil {
		return fmt.Errorf("key filter of %s: read keys: %w", name, err)
	}
	var buf []byte
	for rows.Next() {
		v := rows.RawValues()
		buf = append(append(append(buf[:0], v[0]...), 0), v[1]...)
		f.Add(buf)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("key filter of %s: read keys: %w", name, err)
	}
	bits, err := f.MarshalBinary()
	if err != nil {
		return fmt.Errorf("key filter of %s: %w", name, err)
	}
	if err := tx.Rollback(ctx); err != nil {
		return fmt.Errorf("key filter of %s: %w", name, err)
	}
	_, err = conn.Exec(ctx, `INSERT INTO dedupe_key_filters (name, keys, fp_rate, bits) VALUES ($1, $2, $3, $4)
ON CONFLICT (name) DO NOTHING`, name, n, fp, bits)
	if err != nil {
		return fmt.Errorf("key filter of %s: store: %w", name, err)
	}
	return nil
}
