// Package upkeep is the maintenance of the receiver's tables behind one
// Run: partitions created ahead and dropped whole, retention sweeps and
// search indexes (NewMaintenance), the key filters of sealed key
// partitions (KeyFilterBuilder), the replay guard's sweeper
// (SweepReplayGuard) and the console's per-minute rollup (Rollup).
package upkeep

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/errgroup"

	"github.com/gatehouse/gatehouse/internal/storage"
)

// Config configures an Upkeep: package wiring builds it from the
// configuration (wiring.IngestUpkeep), cmd/gatehouse adds the pool, the
// observability and the relay's backlog.
type Config struct {
	Pool *pgxpool.Pool
	// Maintenance is the partitions' and retention's; its Pool, Logger and
	// Registerer, left nil, are this Config's.
	Maintenance MaintenanceConfig
	// GuardSweepEvery and GuardSweepBatch: expired replay-guard records go
	// in batches of GuardSweepBatch (default 1000), every GuardSweepEvery
	// (default 1m).
	GuardSweepEvery time.Duration
	GuardSweepBatch int
	// RelayOldest is the rollup's (Rollup.RelayOldest): the relay stage's
	// queue age on the console's charts; nil: none.
	RelayOldest func(ctx context.Context) (*time.Time, error)
	// Logger nil: slog.Default(). Registerer nil: metrics are not registered.
	Logger     *slog.Logger
	Registerer prometheus.Registerer
}

// Upkeep is ingest's maintenance, run by one process's Run beside the
// receiver.
type Upkeep struct {
	cfg     Config
	rollup  *Rollup
	maint   *storage.Maintainer
	filters *KeyFilterBuilder
}

// New builds the Upkeep of cfg; it fails when the maintenance's
// configuration does (NewMaintenance).
func New(cfg Config) (*Upkeep, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.GuardSweepEvery <= 0 {
		cfg.GuardSweepEvery = time.Minute
	}
	if cfg.GuardSweepBatch <= 0 {
		cfg.GuardSweepBatch = 1000
	}
	mc := cfg.Maintenance
	mc.Storage.ApplyDefaults()
	if mc.Pool == nil {
		mc.Pool = cfg.Pool
	}
	if mc.Logger == nil {
		mc.Logger = cfg.Logger
	}
	if mc.Registerer == nil {
		mc.Registerer = cfg.Registerer
	}
	mt, err := NewMaintenance(mc)
	if err != nil {
		return nil, err
	}
	rollup := NewRollup(cfg.Pool, 0, cfg.Logger)
	rollup.RelayOldest = cfg.RelayOldest
	return &Upkeep{cfg: cfg, rollup: rollup, maint: mt,
		// storage.key_filter_false_positives (0: off, the filters are
		// deleted), built every check interval
		filters: &KeyFilterBuilder{Pool: cfg.Pool, FalsePositives: mc.KeyFilterRate(),
			Every: mc.CheckInterval, Logger: cfg.Logger, Registerer: cfg.Registerer}}, nil
}

// Rollup is the console's rollup that the receiver answers into
// (ingest.Config.Rollup); Run flushes it.
func (u *Upkeep) Rollup() *Rollup { return u.rollup }

// Pass runs one maintenance pass now (before serving, so the current
// partitions exist after a long stop).
func (u *Upkeep) Pass(ctx context.Context) error {
	_, err := u.maint.Pass(ctx)
	return err
}

// Run runs every job until ctx ends, or until one fails (its error): the
// rollup's flushes, the replay guard's sweeper, a maintenance pass every
// check interval, and the key filters' builds beside the passes (a first
// build after an upgrade may take minutes).
func (u *Upkeep) Run(ctx context.Context) error {
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return u.rollup.Run(gctx) })
	g.Go(func() error {
		return SweepReplayGuard(gctx, u.cfg.Pool, u.cfg.GuardSweepEvery, u.cfg.GuardSweepBatch, u.cfg.Logger)
	})
	g.Go(func() error { return u.maint.Run(gctx) })
	g.Go(func() error { return u.filters.Run(gctx) })
	return g.Wait()
}
