package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gatehouse/gatehouse/deploy/bench/benchenv"
)

// stages are the processes whose CPU the run follows; each runs with
// PGAPPNAME=gatehouse-<stage>, so its PostgreSQL backends are known by
// application_name.
var stages = []string{"serve", "relay", "consume"}

// backendCPU follows the CPU time of the PostgreSQL backends of each
// stage: a backend's time is read from /proc while it lives, and kept at
// its last reading once it has exited, so the sums only grow.
type backendCPU struct {
	last map[int]float64 // pid → CPU seconds at its last reading
	app  map[int]string  // pid → stage
}

func newBackendCPU() *backendCPU {
	return &backendCPU{last: map[int]float64{}, app: map[int]string{}}
}

// read returns the CPU seconds used so far by each stage's backends.
func (b *backendCPU) read(ctx context.Context, pool *pgxpool.Pool) (map[string]float64, error) {
	rows, err := pool.Query(ctx, `SELECT pid, application_name FROM pg_stat_activity WHERE application_name LIKE 'gatehouse-%'`)
	if err != nil {
		return nil, fmt.Errorf("list backends: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var pid int32
		var app string
		if err := rows.Scan(&pid, &app); err != nil {
			return nil, fmt.Errorf("list backends: %w", err)
		}
		if t, _, err := benchenv.ProcCPU(int(pid), false); err == nil {
			b.last[int(pid)], b.app[int(pid)] = t.Seconds(), strings.TrimPrefix(app, "gatehouse-")
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list backends: %w", err)
	}
	out := map[string]float64{}
	for pid, s := range b.last {
		out[b.app[pid]] += s
	}
	return out, nil
}
