// Package storage keeps gatehouse's time-partitioned tables bounded: a
// Maintainer creates partitions ahead of time and drops expired ones whole,
// runs a stage's own retention sweep, and exports gatehouse_storage_*
// metrics. One process per stage does the work at a time (a PostgreSQL
// advisory lock); no cron and no extension is needed. Each stage names its
// own tables (docs/STORAGE.md).
package storage

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
)

// Table is one table partitioned by time through storage_partitions and
// storage_create_partition (migrations/00001_baseline.sql).
type Table struct {
	// Name is the partitioned (parent) table.
	Name string
	// Retention: a partition is dropped once its range ended longer ago.
	Retention time.Duration
	// Interval is the width of the table's new partitions. Default (0):
	// Config.Interval.
	Interval time.Duration
	// Held, when set, is asked before an expired partition is dropped and
	// reports whether its rows are still needed (the outbox's rows a relay
	// has not published): such a partition, and every younger one, stays
	// until a later pass, and gatehouse_storage_oldest_partition_age_seconds
	// shows it outliving its retention.
	Held func(ctx context.Context, conn *pgx.Conn, partition string) (bool, error)
}

// Config configures a Maintainer.
type Config struct {
	// Pool is the database. Required.
	Pool *pgxpool.Pool
	// Stage names the lock and labels the metrics ("ingest", "consumers"). Required.
	Stage string
	// Partitioned are the stage's time-partitioned tables.
	Partitioned []Table
	// Sized are the stage's other tables, whose size is reported.
	Sized []string
	// Interval is the width of new partitions of a Table that sets none.
	// Default 24h.
	Interval time.Duration
	// Ahead is how many partitions exist beyond the current one. Default 3.
	Ahead int
	// Every is the time between passes. Default 1m.
	Every time.Duration
	// Sweep, when set, is the stage's own retention of rows that are not
	// partitioned; it runs in every pass that holds the lock and returns
	// the rows it deleted per table.
	Sweep func(ctx context.Context, conn *pgx.Conn) (map[string]int64, error)
	// Logger nil: slog.Default(). Registerer nil: metrics are not registered.
	Logger     *slog.Logger
	Registerer prometheus.Registerer
	// Now is the clock of the metrics (partition ranges use the database's). Default time.Now.
	Now func() time.Time
}

// Maintainer runs the passes of one stage.
type Maintainer struct {
	cfg Config
	m   *metrics
}

// Result is what one pass did.
type Result struct {
	// Held reports whether this process held the stage's lock (else the
	// pass only refreshed the metrics).
	Held    bool
	Created []string
	Dropped []string
	Deleted map[string]int64
}

// New returns a Maintainer; it fails when Pool or Stage is missing.
func New(cfg Config) (*Maintainer, error) {
	if cfg.Pool == nil || cfg.Stage == "" {
		return nil, errors.New("storage: Pool and Stage are required")
	}
	if cfg.Interval <= 0 {
		cfg.Interval = 24 * time.Hour
	}
	if cfg.Ahead <= 0 {
		cfg.Ahead = 3
	}
	cfg.Partitioned = slices.Clone(cfg.Partitioned)
	for i := range cfg.Partitioned {
		if cfg.Partitioned[i].Interval <= 0 {
			cfg.Partitioned[i].Interval = cfg.Interval
		}
	}
	if cfg.Every <= 0 {
		cfg.Every = time.Minute
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Maintainer{cfg: cfg, m: newMetrics(cfg.Registerer, cfg.Stage)}, nil
}

// Run passes at once and then every Every until ctx ends; a failed pass
// is logged and counted, and the next one tries again. It returns nil.
func (m *Maintainer) Run(ctx context.Context) error {
	t := time.NewTicker(m.cfg.Every)
	defer t.Stop()
	for {
		if _, err := m.Pass(ctx); err != nil && ctx.Err() == nil {
			m.m.errors.Inc()
			m.cfg.Logger.Warn("storage maintenance", "stage", m.cfg.Stage, "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

const lockSQL = `SELECT pg_try_advisory_lock(hashtextextended('gatehouse.storage:' || $1, 0))`
const unlockSQL = `SELECT pg_advisory_unlock(hashtextextended('gatehouse.storage:' || $1, 0))`

// Locked runs fn on a connection of pool that holds the session advisory
// lock of name ("gatehouse.storage:" + name), when the lock is free; held
// reports whether it was (else another process holds it and fn did not
// run). The lock is released after fn, or, when the release fails, the
// connection is closed, which ends its session and the lock with it.
func Locked(ctx context.Context, pool *pgxpool.Pool, name string, fn func(ctx context.Context, conn *pgx.Conn) error) (held bool, err error) {
	c, err := pool.Acquire(ctx)
	if err != nil {
		return false, fmt.Errorf("acquire connection: %w", err)
	}
	defer c.Release()
	conn := c.Conn()
	if err := conn.QueryRow(ctx, lockSQL, name).Scan(&held); err != nil {
		return false, fmt.Errorf("storage lock %s: %w", name, err)
	}
	if !held {
		return false, nil
	}
	err = fn(ctx, conn)
	if _, uerr := conn.Exec(context.WithoutCancel(ctx), unlockSQL, name); uerr != nil {
		c.Hijack().Close(context.Background()) //nolint:errcheck // the session ends, and its lock with it
	}
	return true, err
}

// Pass creates the missing partitions, drops the expired ones and runs the
// sweep when it gets the stage's advisory lock (else another process is
// doing it), then refreshes the metrics. Errors are wrapped with what
// failed; a drop that cannot get its lock within a second is left for the
// next pass.
func (m *Maintainer) Pass(ctx context.Context) (Result, error) {
	var (
		res Result
		err error
	)
	res.Held, err = Locked(ctx, m.cfg.Pool, m.cfg.Stage, func(ctx context.Context, conn *pgx.Conn) error {
		return m.maintain(ctx, conn, &res)
	})
	if err != nil {
		return res, err
	}
	if err := m.observe(ctx); err != nil {
		return res, err
	}
	return res, nil
}

func (m *Maintainer) maintain(ctx context.Context, conn *pgx.Conn, res *Result) error {
	// Every table's partitions ahead first: a drop may wait (its detach
	// waits for older transactions), creation must not wait behind it.
	for _, t := range m.cfg.Partitioned {
		dropped, made, err := reshape(ctx, conn, t.Name, t.Interval)
		res.Dropped, res.Created = append(res.Dropped, dropped...), append(res.Created, made...)
		m.m.created.WithLabelValues(t.Name).Add(float64(len(made)))
		m.m.dropped.WithLabelValues(t.Name).Add(float64(len(dropped)))
		if err != nil {
			return err
		}
		created, err := ensure(ctx, conn, t.Name, t.Interval, m.cfg.Ahead)
		res.Created = append(res.Created, created...)
		m.m.created.WithLabelValues(t.Name).Add(float64(len(created)))
		if err != nil {
			return err
		}
	}
	for _, t := range m.cfg.Partitioned {
		dropped, err := m.drop(ctx, conn, t)
		res.Dropped = append(res.Dropped, dropped...)
		m.m.dropped.WithLabelValues(t.Name).Add(float64(len(dropped)))
		if err != nil {
			return err
		}
	}
	for _, name := range res.Created {
		m.cfg.Logger.Info("partition created", "stage", m.cfg.Stage, "partition", name)
	}
	for _, name := range res.Dropped {
		m.cfg.Logger.Info("partition dropped", "stage", m.cfg.Stage, "partition", name)
	}
	if m.cfg.Sweep != nil {
		n, err := m.cfg.Sweep(ctx, conn)
		for table, rows := range n {
			m.m.deleted.WithLabelValues(table).Add(float64(rows))
		}
		res.Deleted = n
		if err != nil {
			return fmt.Errorf("sweep: %w", err)
		}
	}
	return nil
}

// ensure creates partitions of table until one covers now() + ahead ×
// interval: each starts at the end of the newest one, or at now() rounded
// down to interval when that is later (a gap in the past is left as it
// is), and ends on the next multiple of interval.
func ensure(ctx context.Context, conn *pgx.Conn, table string, interval time.Duration, ahead int) ([]string, error) {
	var created []string
	for range ahead + 2 {
		var name *string
		err := conn.QueryRow(ctx, `
WITH last AS (SELECT max(ends) AS e FROM storage_partitions WHERE parent = $1),
next AS (
  SELECT greatest(last.e, date_bin($2::interval, now(), timestamptz '2000-01-01 00:00:00+00')) AS starts
  FROM last)
SELECT storage_create_partition($1, next.starts, date_bin($2::interval, next.starts, timestamptz '2000-01-01 00:00:00+00') + $2::interval)
FROM next WHERE next.starts < now() + $2::interval * $3::int`, table, interval, ahead).Scan(&name)
		if errors.Is(err, pgx.ErrNoRows) {
			return created, nil
		}
		if err != nil {
			return created, fmt.Errorf("create partition of %s: %w", table, err)
		}
		created = append(created, *name)
	}
	return created, nil
}

// drop drops every partition of t whose range ended more than its
// retention ago, oldest first, stopping at the first one t.Held keeps: detached from the parent first (detach),
// then dropped as a table of its own, which locks nothing writers use.
func (m *Maintainer) drop(ctx context.Context, conn *pgx.Conn, t Table) ([]string, error) {
	table := t.Name
	rows, err := conn.Query(ctx, `SELECT name FROM storage_partitions WHERE parent = $1 AND ends < now() - $2::interval ORDER BY ends`,
		table, t.Retention)
	if err != nil {
		return nil, fmt.Errorf("list expired partitions of %s: %w", table, err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("list expired partitions of %s: %w", table, err)
	}
	var dropped []string
	for _, name := range names {
		if t.Held != nil {
			held, err := t.Held(ctx, conn, name)
			if err != nil {
				return dropped, fmt.Errorf("check partition %s before its drop: %w", name, err)
			}
			if held {
				m.cfg.Logger.Warn("expired partition kept: its rows are still needed", "stage", m.cfg.Stage, "partition", name)
				return dropped, nil
			}
		}
		if err := detach(ctx, conn, table, name); err != nil {
			return dropped, err
		}
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `DROP TABLE IF EXISTS `+pgx.Identifier{name}.Sanitize()); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `DELETE FROM storage_partitions WHERE name = $1`, name)
			return err
		})
		if err != nil {
			return dropped, fmt.Errorf("drop partition %s: %w", name, err)
		}
		dropped = append(dropped, name)
	}
	return dropped, nil
}

// detach detaches partition name from table with DETACH PARTITION
// CONCURRENTLY, which takes only a SHARE UPDATE EXCLUSIVE lock on the
// parent: writers keep writing, where a DROP of an attached partition
// would take ACCESS EXCLUSIVE and queue every write behind it. A detach
// interrupted earlier (pending) is finished with FINALIZE; a partition
// already detached is left as it is.
func detach(ctx context.Context, conn *pgx.Conn, table, name string) error {
	var attached, pending bool
	err := conn.QueryRow(ctx, `SELECT count(*) > 0, coalesce(bool_or(i.inhdetachpending), false)
FROM pg_inherits i WHERE i.inhrelid = to_regclass($1) AND i.inhparent = to_regclass($2)`, name, table).Scan(&attached, &pending)
	if err != nil {
		return fmt.Errorf("partition state of %s: %w", name, err)
	}
	if !attached {
		return nil
	}
	how := "CONCURRENTLY"
	if pending {
		how = "FINALIZE"
	}
	if _, err := conn.Exec(ctx, `ALTER TABLE `+pgx.Identifier{table}.Sanitize()+` DETACH PARTITION `+pgx.Identifier{name}.Sanitize()+` `+how); err != nil {
		return fmt.Errorf("detach partition %s: %w", name, err)
	}
	return nil
}
