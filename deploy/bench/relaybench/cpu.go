package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/gatehouse/gatehouse/deploy/bench/benchenv"
)

// CPU accounting of a run (benchenv.Stack.CPU): the CPU time each process
// of the benchmark spent during it, so a drain's cost per row can be split
// between the relay (this process, with the benchmark's consumer),
// PostgreSQL's walsender (logical decoding), PostgreSQL's other processes
// (poll mode's queries) and the Kafka broker.

// cpuClasses are the columns of the CPU table, in order.
var cpuClasses = []struct {
	name string
	of   func(benchenv.CPUMark) time.Duration
}{
	{"relaybench process", func(m benchenv.CPUMark) time.Duration { return m.Self }},
	{"walsender", func(m benchenv.CPUMark) time.Duration { return m.Walsender }},
	{"other PostgreSQL", func(m benchenv.CPUMark) time.Duration { return max(m.Postgres-m.Walsender, 0) }},
	{"Kafka broker", func(m benchenv.CPUMark) time.Duration { return m.Kafka }},
}

// perRow is the CPU µs per row of each class and their sum, and the cores
// they kept busy.
func perRow(u *benchenv.CPUMark, rows int) (cells []string, total, cores string) {
	var sum time.Duration
	for _, c := range cpuClasses {
		sum += c.of(*u)
		cells = append(cells, fmt.Sprintf("%.1f", float64(c.of(*u).Microseconds())/float64(rows)))
	}
	return cells, fmt.Sprintf("%.1f", float64(sum.Microseconds())/float64(rows)), fmt.Sprintf("%.2f", sum.Seconds()/u.Wall.Seconds())
}

// cpuLog is perRow for the progress lines.
func cpuLog(u benchenv.CPUMark, rows int) string {
	cells, total, cores := perRow(&u, rows)
	var parts []string
	for i, c := range cpuClasses {
		parts = append(parts, c.name+" "+cells[i])
	}
	return fmt.Sprintf("CPU µs/row: %s; total %s (%s cores)", strings.Join(parts, ", "), total, cores)
}

// cpuTable prints the CPU per record of every run that measured it: the
// ceiling's flat-out run and the backlog drains.
func cpuTable(w io.Writer, rows []result) {
	var t *benchenv.Table
	for _, r := range rows {
		if r.cpu == nil || r.n == 0 {
			continue
		}
		if t == nil {
			fmt.Fprintf(w, "CPU per record (µs of CPU time per row, from /proc; the relaybench process holds the relay or the ceiling's producer, and the benchmark's consumer):\n\n")
			cols := []string{"run>", "path", "offered", "records/s>"}
			for _, c := range cpuClasses {
				cols = append(cols, c.name+">")
			}
			t = benchenv.NewTable(w, append(cols, "total>", "cores busy>")...)
		}
		cells, total, cores := perRow(r.cpu, r.n)
		row := []any{r.run + 1, r.what, r.offered, fmt.Sprintf("%.0f", r.throughput)}
		for _, c := range cells {
			row = append(row, c)
		}
		t.Row(append(row, total, cores)...)
	}
	if t != nil {
		fmt.Fprintln(w)
	}
}

// profileOnce starts the CPU profile of -cpuprofile the first time it is
// called and returns the function that stops it.
func (b *bench) profileOnce() (func(), error) {
	if b.profiled {
		return func() {}, nil
	}
	b.profiled = true
	return benchenv.Profile(b.o.cpuProfile)
}
