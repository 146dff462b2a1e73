package consumers

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/gatehouse/gatehouse/internal/storage"
)

// MaintenanceConfig configures the consumers' storage maintenance.
type MaintenanceConfig struct {
	Pool *pgxpool.Pool
	// KeyLifetime is the longest time a dedupe key is kept, over every
	// provider (the configuration's Lifetimes).
	KeyLifetime time.Duration
	// PayloadRetention is a provider's payload retention (its effect log's
	// lifetime); ObjectRetention how long its projections outlive their
	// last change. Both required.
	PayloadRetention func(provider string) time.Duration
	ObjectRetention  func(provider string) time.Duration
	// PartitionInterval, Ahead and CheckInterval are storage's
	// (storage.Config's Interval, Ahead and Every).
	PartitionInterval, CheckInterval time.Duration
	Ahead                            int
	// Logger nil: slog.Default(). Registerer nil: metrics are not registered.
	Logger     *slog.Logger
	Registerer prometheus.Registerer
	Now        func() time.Time
}

// NewMaintenance returns the maintainer of the consumers' tables (docs/STORAGE.md,
// "How storage stays bounded"). They are not partitioned; the sweep deletes, oldest first
// and in batches through their time indexes:
//
//   - processed_events (the effect dedupe) older than the longest key
//     lifetime plus one partition width: by then the inbox row it guards
//     is gone, and a Kafka copy of the event finds no row to claim;
//   - forward_deliveries (which destinations took an event forwarded to
//     several) as processed_events: a retry or a redelivery comes no later;
//   - provider_object_changes (the effect log), per provider, older than
//     that provider's retention;
//   - provider_objects (the projection: one row per object), per provider,
//     whose last applied change is older than its object retention
//     (ObjectRetention: by default its key lifetime). A later event
//     about a removed object fetches and stores it again.
func NewMaintenance(cfg MaintenanceConfig) (*storage.Maintainer, error) {
	keyMax := cfg.KeyLifetime + cfg.PartitionInterval
	payload := cfg.PayloadRetention
	sweep := func(ctx context.Context, conn *pgx.Conn) (map[string]int64, error) {
		n := map[string]int64{}
		var err error
		if n["processed_events"], err = storage.DeleteOlder(ctx, conn, "processed_events", "processed_at", keyMax); err != nil {
			return n, err
		}
		if n["forward_deliveries"], err = storage.DeleteOlder(ctx, conn, "forward_deliveries", "delivered_at", keyMax); err != nil {
			return n, err
		}
		if n["provider_object_changes"], err = storage.DeleteOlderPerProvider(ctx, conn, "provider_object_changes", "applied_at", payload); err != nil {
			return n, err
		}
		n["provider_objects"], err = storage.DeleteOlderPerProvider(ctx, conn, "provider_objects", "updated_at", cfg.ObjectRetention)
		return n, err
	}
	return storage.New(storage.Config{
		Pool:     cfg.Pool,
		Stage:    "consumers",
		Sized:    []string{"processed_events", "forward_deliveries", "provider_object_changes", "provider_objects"},
		Interval: cfg.PartitionInterval, Ahead: cfg.Ahead, Every: cfg.CheckInterval,
		Sweep:  sweep,
		Logger: cfg.Logger, Registerer: cfg.Registerer, Now: cfg.Now,
	})
}
