package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gatehouse/gatehouse/deploy/bench/benchenv"
	"github.com/gatehouse/gatehouse/internal/testenv"
)

// What the cold and partition-roll rows share: a database of their own,
// created and migrated in the benchmark's cluster, and a long run cut
// into windows.

// freshDB is a database just created and migrated by `gatehouse migrate`,
// with the gatehouse.yaml that points at it.
type freshDB struct {
	url, config string
	pool        *pgxpool.Pool
}

// newFreshDB quiets the disk (a checkpoint and a sync, as before every
// warm run), creates a database, writes tag.yaml for it (with extra
// top-level keys) and migrates it with the binary under test.
func (b *bench) newFreshDB(ctx context.Context, tag, extra string) (*freshDB, error) {
	if _, err := b.Pool.Exec(ctx, "CHECKPOINT"); err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	syscall.Sync()
	url, err := testenv.CreateDatabase(ctx, b.PG.AdminURL(), false)
	if err != nil {
		return nil, err
	}
	f := &freshDB{url: url}
	if f.config, err = b.writeConfig(tag+".yaml", url, extra); err != nil {
		return nil, err
	}
	if out, err := exec.CommandContext(ctx, b.o.gatehouse, "migrate", "--config", f.config).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("gatehouse migrate (%s): %w: %s", tag, err, strings.TrimSpace(string(out)))
	}
	if f.pool, err = pgxpool.New(ctx, url); err != nil {
		return nil, err
	}
	return f, nil
}

// receiver returns `gatehouse serve` on the database, not started: its
// address is known, so its deliveries can be signed before it starts.
func (f *freshDB) receiver(b *bench) (*benchenv.Proc, error) {
	return testenv.NewProc("serve", b.o.gatehouse, "serve", f.config, os.Environ(), os.DevNull)
}

// events is the count of inbox and outbox rows.
func (f *freshDB) events(ctx context.Context) (inbox, outbox int64, err error) {
	err = f.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM inbox), (SELECT count(*) FROM outbox)`).Scan(&inbox, &outbox)
	if err != nil {
		return 0, 0, fmt.Errorf("count events: %w", err)
	}
	return inbox, outbox, nil
}

// close drops the database (kept with -keep).
func (f *freshDB) close(b *bench) {
	if f.pool != nil {
		f.pool.Close()
	}
	if b.O.Keep {
		return
	}
	cfg, err := pgx.ParseConfig(f.url)
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, b.PG.AdminURL())
	if err != nil {
		return
	}
	defer conn.Close(ctx)
	_, _ = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{cfg.Database}.Sanitize()+" WITH (FORCE)")
}

// window is one slice of a long run: the 2xx answers that arrived in it,
// their latencies, and the CPU PostgreSQL used meanwhile.
type window struct {
	from, to time.Time
	n        int
	lat      *benchenv.Hist
	pgCPU    time.Duration
}

func (w window) tput() float64  { return float64(w.n) / w.to.Sub(w.from).Seconds() }
func (w window) pgPer() float64 { return float64(w.pgCPU.Microseconds()) / float64(max(w.n, 1)) }
func (w window) p50() float64   { return benchenv.Millis(w.lat.Q(0.5)) }
func (w window) p99() float64   { return benchenv.Millis(w.lat.Q(0.99)) }

// cpuAt reads PostgreSQL's CPU time at each of at, in a goroutine; wait
// returns the readings (fewer when ctx ended first).
func (b *bench) cpuAt(ctx context.Context, at []time.Time) (wait func() []time.Duration) {
	done := make(chan []time.Duration, 1)
	go func() {
		var cpu []time.Duration
		for _, t := range at {
			select {
			case <-ctx.Done():
				done <- cpu
				return
			case <-time.After(time.Until(t)):
			}
			cpu = append(cpu, b.PostgresCPU())
		}
		done <- cpu
	}()
	return func() []time.Duration { return <-done }
}

// windows cuts l at bounds (the 2xx answers by the time they arrived)
// with cpu read at the same bounds.
func windows(l benchenv.LoadResult, bounds []time.Time, cpu []time.Duration) ([]window, error) {
	if len(cpu) != len(bounds) {
		return nil, fmt.Errorf("PostgreSQL CPU read at %d of %d window bounds", len(cpu), len(bounds))
	}
	ws := make([]window, len(bounds)-1)
	for i := range ws {
		ws[i] = window{from: bounds[i], to: bounds[i+1], lat: benchenv.NewHist(), pgCPU: cpu[i+1] - cpu[i]}
	}
	for _, a := range l.Acks {
		if !a.OK() {
			continue
		}
		at := l.Start.Add(a.Due + a.Latency)
		for i := range ws {
			if !at.Before(ws[i].from) && at.Before(ws[i].to) {
				ws[i].n++
				ws[i].lat.Record(a.Latency)
				break
			}
		}
	}
	return ws, nil
}

// bounds is start, start+step, … up to start+d.
func bounds(start time.Time, step, d time.Duration) []time.Time {
	var b []time.Time
	for t := time.Duration(0); t <= d; t += step {
		b = append(b, start.Add(t))
	}
	return b
}
