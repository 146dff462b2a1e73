package upkeep

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/gatehouse/gatehouse/internal/settings"
	"github.com/gatehouse/gatehouse/internal/storage"
)

// ChartRetention is how long pipeline_minutes (the console's charts,
// rollup.go) keeps a minute: the longest chart shows a day.
const ChartRetention = 48 * time.Hour

// MaintenanceConfig configures ingest's storage maintenance: the storage
// section and each provider's own retention (a provider's entry, which
// package wiring turns into Kept).
type MaintenanceConfig struct {
	Pool *pgxpool.Pool
	// Providers are the configured providers and what is kept of each.
	Providers map[string]Kept
	// Default is what is kept of the events of a provider no longer
	// configured (storage.retention and storage.dedupe_window).
	Default Kept
	// Storage is the storage section (docs/CONFIG.md, storage.*) as the
	// configuration declares it: the widths of new inbox, dedupe_keys and
	// outbox partitions, how many exist ahead of the current one, the time
	// between passes, how long audit rows (replays, erasures and
	// outbox_erasures) and the outbox log's partitions are kept, and the
	// key filters' false positive rate (Config). NewMaintenance applies
	// its defaults. Its retention and dedupe window are Default's.
	settings.Storage
	// OutboxExternal: relay.mode external, Debezium reads the outbox, and
	// age alone decides when an outbox partition is dropped (otherwise
	// only once every relay's cursor passed it).
	OutboxExternal bool
	// Logger nil: slog.Default(). Registerer nil: metrics are not registered.
	Logger     *slog.Logger
	Registerer prometheus.Registerer
	Now        func() time.Time
}

// Kept is what ingest keeps of one provider's events.
type Kept struct {
	// Retention keeps the payloads; KeyLifetime the event ids, as
	// duplicates (the longer of the dedupe window and Retention).
	Retention, KeyLifetime time.Duration
	// SearchIndexed keeps a search index on every inbox partition.
	SearchIndexed bool
}

// NewMaintenance returns the maintainer of ingest's tables (docs/STORAGE.md,
// "How storage stays bounded"):
//
//   - inbox, partitioned by received_at, dropped whole once the longest
//     retention of any provider has passed; a provider whose retention is
//     shorter has its rows deleted from each partition once that
//     partition is past it (once per partition);
//   - dedupe_keys, partitioned by generation in partitions of
//     storage.key_partition_interval, dropped once the longest key
//     lifetime (the longer of dedupe window and retention) plus one key
//     partition width has passed. Each sealed key partition gets a Bloom
//     filter of its keys, built by KeyFilterBuilder beside the passes;
//   - replays, erasures (the audit) and outbox_erasures (the outbox rows
//     an erasure reached, kept as long as the audit), deleted row by row
//     by age;
//   - failure_issues and failure_issue_events (the consumers' failure
//     issues), deleted once last_seen is older than the longest retention;
//   - the search indexes of the providers whose search is indexed, on
//     every inbox partition (search_index.go);
//   - outbox, an append-only log partitioned by created_at, dropped once
//     storage.outbox_retention has passed and every relay's cursor is past
//     all of its rows (with relay.mode external, Debezium reads the
//     outbox and age alone decides).
func NewMaintenance(cfg MaintenanceConfig) (*storage.Maintainer, error) {
	cfg.Storage.ApplyDefaults()
	payloadMax, keyMax := cfg.Default.Retention, max(cfg.Default.Retention, cfg.Default.KeyLifetime)
	for _, k := range cfg.Providers {
		payloadMax, keyMax = max(payloadMax, k.Retention), max(keyMax, k.KeyLifetime)
	}
	short := map[string]time.Duration{} // providers kept shorter than the inbox's partitions
	var indexed []string
	for name, k := range cfg.Providers {
		if k.Retention < payloadMax {
			short[name] = k.Retention
		}
		if k.SearchIndexed {
			indexed = append(indexed, name)
		}
	}
	if cfg.Default.Retention < payloadMax {
		short[""] = cfg.Default.Retention // events of providers no longer configured
	}
	slices.Sort(indexed)
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	sw := &sweeper{short: short, payloadMax: payloadMax, audit: cfg.AuditRetention, known: slices.Sorted(mapKeys(cfg.Providers)),
		indexed: indexed, log: log}
	return storage.New(storage.Config{
		Pool:  cfg.Pool,
		Stage: "ingest",
		Partitioned: []storage.Table{
			{Name: "inbox", Retention: payloadMax},
			{Name: "dedupe_keys", Retention: keyMax + cfg.KeyPartitionInterval, Interval: cfg.KeyPartitionInterval},
			outboxTable(cfg),
		},
		Sized: []string{"replays", "erasures", "ingest_replay_guard", "dedupe_key_filters", "pipeline_minutes",
			"failure_issues", "failure_issue_events"},
		Interval: cfg.PartitionInterval, Ahead: cfg.Ahead, Every: cfg.CheckInterval,
		Sweep:  sw.sweep,
		Logger: cfg.Logger, Registerer: cfg.Registerer, Now: cfg.Now,
	})
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

type sweeper struct {
	short      map[string]time.Duration // "" = providers not in known
	known      []string
	indexed    []string // providers whose search is indexed (search_index.go)
	payloadMax time.Duration
	audit      time.Duration
	log        *slog.Logger
}

func (sw *sweeper) sweep(ctx context.Context, conn *pgx.Conn) (map[string]int64, error) {
	n := map[string]int64{}
	created, dropped, err := keepSearchIndexes(ctx, conn, sw.indexed)
	for _, name := range created {
		sw.log.Info("search index created", "stage", "ingest", "index", name)
	}
	for _, name := range dropped {
		sw.log.Info("search index dropped", "stage", "ingest", "index", name)
	}
	if err != nil {
		return n, err
	}
	for provider, keep := range sw.short {
		rows, err := sw.purge(ctx, conn, provider, keep)
		n["inbox"] += rows
		if err != nil {
			return n, err
		}
	}
	for _, t := range []struct {
		table, col string
		keep       time.Duration
	}{{"replays", "requested_at", sw.payloadMax}, {"erasures", "requested_at", sw.audit}, {"outbox_erasures", "erased_at", sw.audit},
		{"pipeline_minutes", "minute", ChartRetention},
		// The consumers' failure issues (and an issue's events) last as long
		// as the longest-kept events they count.
		{"failure_issue_events", "last_seen", sw.payloadMax}, {"failure_issues", "last_seen", sw.payloadMax}} {
		rows, err := storage.DeleteOlder(ctx, conn, t.table, t.col, t.keep)
		n[t.table] += rows
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// purge deletes provider's rows from each inbox partition whose whole
// range is older than keep, once per partition (storage_purges). provider
// "" stands for every provider not configured.
func (sw *sweeper) purge(ctx context.Context, conn *pgx.Conn, provider string, keep time.Duration) (int64, error) {
	rows, err := conn.Query(ctx, `SELECT p.name FROM storage_partitions p
WHERE p.parent = 'inbox' AND p.ends < now() - $1::interval
  AND NOT EXISTS (SELECT 1 FROM storage_purges u WHERE u.name = p.name AND u.provider = $2)
ORDER BY p.ends`, keep, provider)
	if err != nil {
		return 0, fmt.Errorf("list partitions to purge: %w", err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return 0, fmt.Errorf("list partitions to purge: %w", err)
	}
	var total int64
	for _, name := range names {
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			q := `DELETE FROM ` + pgx.Identifier{name}.Sanitize() + ` WHERE provider = $1`
			args := []any{provider}
			if provider == "" {
				q, args = `DELETE FROM `+pgx.Identifier{name}.Sanitize()+` WHERE provider <> ALL($1::text[])`, []any{sw.known}
			}
			tag, err := tx.Exec(ctx, q, args...)
			if err != nil {
				return err
			}
			total += tag.RowsAffected()
			_, err = tx.Exec(ctx, `INSERT INTO storage_purges (name, provider) VALUES ($1, $2)`, name, provider)
			return err
		})
		if err != nil {
			return total, fmt.Errorf("purge %s of %q: %w", name, provider, err)
		}
	}
	return total, nil
}

// An outbox partition is held while some relay's cursor has not passed
// one of its rows (a row in progress in the cursor's snapshot, or from its
// xmax on). The default cursor ('*') counts only while no relay has a
// cursor of its own: rows written before any relay ran are unpublished.
const (
	outboxCursorsSQL = `SELECT snap::text FROM outbox_cursor WHERE slot <> '*'
UNION ALL
SELECT snap::text FROM outbox_cursor WHERE slot = '*' AND NOT EXISTS (SELECT 1 FROM outbox_cursor WHERE slot <> '*')`
	outboxHeldSQL = `SELECT EXISTS (SELECT 1 FROM %s
WHERE txid = ANY(ARRAY(SELECT pg_snapshot_xip($1::pg_snapshot))) OR txid >= pg_snapshot_xmax($1::pg_snapshot))`
)

// outboxTable is the outbox as a partitioned table of ingest's maintenance.
func outboxTable(c MaintenanceConfig) storage.Table {
	t := storage.Table{Name: "outbox", Retention: c.OutboxRetention, Interval: c.OutboxPartitionInterval}
	if c.OutboxExternal {
		return t
	}
	t.Held = func(ctx context.Context, conn *pgx.Conn, partition string) (bool, error) {
		rows, err := conn.Query(ctx, outboxCursorsSQL)
		if err != nil {
			return false, err
		}
		snaps, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return false, err
		}
		q := fmt.Sprintf(outboxHeldSQL, pgx.Identifier{partition}.Sanitize())
		for _, snap := range snaps {
			var held bool
			if err := conn.QueryRow(ctx, q, snap).Scan(&held); err != nil || held {
				return held, err
			}
		}
		return false, nil
	}
	return t
}
