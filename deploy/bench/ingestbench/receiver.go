package main

import (
	"context"
	"fmt"
	"os"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gatehouse/gatehouse/deploy/bench/benchenv"
	"github.com/gatehouse/gatehouse/internal/config"
	"github.com/gatehouse/gatehouse/internal/obs"
)

// receiver is the gatehouse receiver under test.
type receiver struct {
	addr string // host:port of the public listener
	desc string // what runs, for the table
	pid  int    // the receiver's process (0 when in-process)
	stop func()
	// metrics reads the receiver's own metrics (its ack latency histogram).
	metrics func() (benchenv.Families, error)
}

// acks reads the receiver's own ack latency histogram (none without a
// receiver: pgbench's runs).
func (r *receiver) acks() (benchenv.Buckets, error) {
	if r == nil {
		return nil, nil
	}
	f, err := r.metrics()
	return f.AckBuckets(), err
}

// startReceiver starts `gatehouse serve` (o.gatehouse) with a config holding
// the bench provider, or, when o.gatehouse is empty, the same components
// in-process with the Writer parameters from the flags.
func startReceiver(ctx context.Context, b *bench) (*receiver, error) {
	path, err := benchenv.WriteConfig(b.Dir, "gatehouse.yaml", b.DBURL, "",
		benchenv.ProviderYAML(provider, b.secret, "")+mixYAML(b.o.mix, b.mixSecret))
	if err != nil {
		return nil, err
	}
	if b.o.gatehouse == "" {
		return startInProcess(ctx, b, path)
	}
	p, err := benchenv.Gatehouse{Bin: b.o.gatehouse, Sub: "serve", Config: path, Log: b.o.receiverLog, Append: true, Env: b.o.extraEnv}.Start(ctx)
	if err != nil {
		return nil, err
	}
	procs := os.Getenv("GOMAXPROCS")
	if procs == "" {
		procs = "default"
	}
	desc := fmt.Sprintf("`gatehouse serve` binary (Writer defaults of cmd/gatehouse/serve.go, GOMAXPROCS=%s)", procs)
	return &receiver{addr: p.Public, desc: desc, pid: p.Pid(), stop: p.Stop,
		metrics: func() (benchenv.Families, error) { return benchenv.Scrape(ctx, p.Admin) }}, nil
}

// startInProcess composes the receiver as cmd/gatehouse does
// (benchenv.InProcess) but with the Writer and pool sizes of the flags.
func startInProcess(ctx context.Context, b *bench, path string) (*receiver, error) {
	cfgText, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	cfg, err := config.Parse(cfgText, func(string) string { return "" })
	if err != nil {
		return nil, fmt.Errorf("bench config: %w", err)
	}
	logf, err := os.OpenFile(b.o.receiverLog, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("receiver log: %w", err)
	}
	pcfg, err := pgxpool.ParseConfig(b.DBURL)
	if err != nil {
		logf.Close()
		return nil, err
	}
	pcfg.MaxConns = int32(b.o.poolSize)
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		logf.Close()
		return nil, fmt.Errorf("pool: %w", err)
	}
	reg := obs.NewRegistry()
	addr, stop, err := benchenv.InProcess(pool, cfg, b.o.workers, b.o.batch, obs.NewLogger(logf, cfg.LogLevel), reg)
	if err != nil {
		pool.Close()
		logf.Close()
		return nil, err
	}
	desc := fmt.Sprintf("in-process receiver (Writer workers=%d, batch=%d, pool=%d, GOMAXPROCS shared with the load generator)",
		b.o.workers, b.o.batch, b.o.poolSize)
	return &receiver{addr: addr, desc: desc, stop: func() { stop(); pool.Close(); logf.Close() },
		metrics: func() (benchenv.Families, error) { return benchenv.Gather(reg) }}, nil
}
