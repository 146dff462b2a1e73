package storage

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	partitions *prometheus.GaugeVec   // table
	oldestAge  *prometheus.GaugeVec   // table
	ahead      *prometheus.GaugeVec   // table
	interval   *prometheus.GaugeVec   // table
	retention  *prometheus.GaugeVec   // table
	bytes      *prometheus.GaugeVec   // table
	created    *prometheus.CounterVec // table
	dropped    *prometheus.CounterVec // table
	deleted    *prometheus.CounterVec // table
	errors     prometheus.Counter
	lastPass   prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer, stage string) *metrics {
	gauge := func(name, help string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "gatehouse_storage_" + name, Help: help,
			ConstLabels: prometheus.Labels{"stage": stage}}, []string{"table"})
	}
	counter := func(name, help string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gatehouse_storage_" + name, Help: help,
			ConstLabels: prometheus.Labels{"stage": stage}}, []string{"table"})
	}
	m := &metrics{
		partitions: gauge("partitions", "Time partitions of the table that exist."),
		oldestAge:  gauge("oldest_partition_age_seconds", "Time since the range of the table's oldest partition ended (0: it has not ended)."),
		ahead:      gauge("partitions_ahead_seconds", "Time from now to the end of the table's newest partition (negative: writes have no partition)."),
		interval:   gauge("partition_interval_seconds", "Width of the table's new partitions."),
		retention:  gauge("retention_seconds", "The table's partitions are dropped this long after their range ended."),
		bytes:      gauge("table_bytes", "Size on disk of the table with its indexes, TOAST and partitions."),
		created:    counter("partitions_created_total", "Partitions created by this process."),
		dropped:    counter("partitions_dropped_total", "Partitions dropped by this process."),
		deleted:    counter("rows_deleted_total", "Rows deleted by this process's retention sweep."),
		errors: prometheus.NewCounter(prometheus.CounterOpts{Name: "gatehouse_storage_maintenance_errors_total",
			Help: "Maintenance passes that failed.", ConstLabels: prometheus.Labels{"stage": stage}}),
		lastPass: prometheus.NewGauge(prometheus.GaugeOpts{Name: "gatehouse_storage_last_pass_timestamp_seconds",
			Help: "Unix time of this process's last successful maintenance pass.", ConstLabels: prometheus.Labels{"stage": stage}}),
	}
	if reg != nil {
		reg.MustRegister(m.partitions, m.oldestAge, m.ahead, m.interval, m.retention, m.bytes,
			m.created, m.dropped, m.deleted, m.errors, m.lastPass)
	}
	return m
}

// observe refreshes the gauges from the catalogue (every process does, so
// any instance's metrics show the state whoever maintains it).
func (m *Maintainer) observe(ctx context.Context) error {
	for _, t := range m.cfg.Partitioned {
		var (
			n            int64
			oldest, next float64
		)
		err := m.cfg.Pool.QueryRow(ctx, `SELECT count(*),
  coalesce(greatest(extract(epoch FROM now() - min(ends)), 0), 0)::float8,
  coalesce(extract(epoch FROM max(ends) - now()), 0)::float8
FROM storage_partitions WHERE parent = $1`, t.Name).Scan(&n, &oldest, &next)
		if err != nil {
			return fmt.Errorf("partition metrics of %s: %w", t.Name, err)
		}
		m.m.partitions.WithLabelValues(t.Name).Set(float64(n))
		m.m.oldestAge.WithLabelValues(t.Name).Set(oldest)
		m.m.ahead.WithLabelValues(t.Name).Set(next)
		m.m.interval.WithLabelValues(t.Name).Set(t.Interval.Seconds())
		m.m.retention.WithLabelValues(t.Name).Set(t.Retention.Seconds())
	}
	tables := make([]string, 0, len(m.cfg.Partitioned)+len(m.cfg.Sized))
	for _, t := range m.cfg.Partitioned {
		tables = append(tables, t.Name)
	}
	tables = append(tables, m.cfg.Sized...)
	for _, name := range tables {
		b, err := TableBytes(ctx, m.cfg.Pool, name)
		if err != nil {
			return err
		}
		m.m.bytes.WithLabelValues(name).Set(float64(b))
	}
	m.m.lastPass.Set(float64(m.cfg.Now().UnixNano()) / 1e9)
	return nil
}

// querier is what TableBytes needs of a pool, connection or transaction.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// TableBytes returns the size on disk of table with its indexes, TOAST and,
// when partitioned, all its partitions.
func TableBytes(ctx context.Context, q querier, table string) (int64, error) {
	var b int64
	// pg_partition_tree lists nothing for a table that is not partitioned:
	// that table's own size then.
	err := q.QueryRow(ctx, `SELECT coalesce((SELECT sum(pg_total_relation_size(relid)) FROM pg_partition_tree($1::regclass)),
		pg_total_relation_size($1::regclass))::bigint`, table).Scan(&b)
	if err != nil {
		return 0, fmt.Errorf("size of %s: %w", table, err)
	}
	return b, nil
}
