package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
)

// stages are the processes whose CPU the run follows; each runs with
// PGAPPNAME=gatehouse-<stage>, so its PostgreSQL backends are known by
// application_name.
var stages = []string{"serve", "relay", "consume"}

// clockTick is the unit of utime and stime in /proc/<pid>/stat (USER_HZ,
// 100 on Linux).
const clockTick = 100.0

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
		if s, ok := procCPU(int(pid)); ok {
			b.last[int(pid)], b.app[int(pid)] = s, strings.TrimPrefix(app, "gatehouse-")
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

// procCPU reads utime + stime of pid from /proc (false when it is gone).
func procCPU(pid int) (float64, bool) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		return 0, false
	}
	// The command name, in parentheses, may hold spaces: fields are
	// counted after its closing parenthesis (utime and stime are fields 14
	// and 15, so 12 and 13 after it).
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, false
	}
	fs := strings.Fields(string(b[i+1:]))
	if len(fs) < 13 {
		return 0, false
	}
	u, err1 := strconv.ParseFloat(fs[11], 64)
	s, err2 := strconv.ParseFloat(fs[12], 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return (u + s) / clockTick, true
}
