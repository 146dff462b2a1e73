package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gatehouse/gatehouse/deploy/bench/benchenv"
)

// CPU accounting of a backlog drain: the CPU time each process of the
// benchmark spent during it, read from /proc (Linux), so a drain's cost per
// row can be split between the relay (this process, with the benchmark's
// consumer), PostgreSQL's walsender (logical decoding), PostgreSQL's other
// backends (poll mode's queries) and the Kafka broker.

// cpuClasses are the columns of the CPU table, in order.
var cpuClasses = []string{"relaybench process", "walsender", "other PostgreSQL", "Kafka broker"}

// cpuSample is the CPU time of every benchmark process at one moment.
type cpuSample struct {
	at    time.Time
	procs map[int]procCPU
}

type procCPU struct {
	class string
	cpu   time.Duration
}

// sampleCPU reads the CPU time of this process, of PostgreSQL's postmaster
// and its children, and of the Kafka broker (the java process whose command
// line names the broker's directory). Processes it cannot read are left out.
func (b *bench) sampleCPU() cpuSample {
	s := cpuSample{at: time.Now(), procs: map[int]procCPU{}}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		s.procs[os.Getpid()] = procCPU{class: cpuClasses[0],
			cpu: time.Duration(ru.Utime.Nano() + ru.Stime.Nano())}
	}
	postmaster, _ := benchenv.Postmaster(filepath.Join(b.Dir, "pgdata"))
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cpu, ppid, err := benchenv.ProcCPU(pid, false)
		if err != nil {
			continue
		}
		class := ""
		switch {
		case postmaster != 0 && (pid == postmaster || ppid == postmaster):
			class = cpuClasses[2]
			if cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); bytes.Contains(cmd, []byte("walsender")) {
				class = cpuClasses[1]
			}
		case b.Kafka != nil && b.Kafka.Dir != "":
			if cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); bytes.Contains(cmd, []byte(b.Kafka.Dir)) {
				class = cpuClasses[3]
			}
		}
		if class != "" {
			s.procs[pid] = procCPU{class: class, cpu: cpu}
		}
	}
	return s
}

// cpuUse is the CPU each class spent between two samples; a process
// started after the first sample counts from zero, one gone by the second
// is lost (a drain's walsender and backends outlive it).
type cpuUse struct {
	wall  time.Duration
	class map[string]time.Duration
}

func cpuBetween(from, to cpuSample) cpuUse {
	u := cpuUse{wall: to.at.Sub(from.at), class: map[string]time.Duration{}}
	for pid, p := range to.procs {
		d := p.cpu
		if q, ok := from.procs[pid]; ok && q.class == p.class {
			d -= q.cpu
		}
		u.class[p.class] += max(d, 0)
	}
	return u
}

// perRow formats the CPU µs per row of each class and their sum.
func (u cpuUse) perRow(rows int) string {
	if rows == 0 {
		return ""
	}
	var parts []string
	var total time.Duration
	for _, c := range cpuClasses {
		d := u.class[c]
		total += d
		parts = append(parts, fmt.Sprintf("%s %.1f", c, float64(d.Microseconds())/float64(rows)))
	}
	return fmt.Sprintf("CPU µs/row: %s; total %.1f (over %.2fs wall: %.2f cores)", strings.Join(parts, ", "),
		float64(total.Microseconds())/float64(rows), u.wall.Seconds(), total.Seconds()/u.wall.Seconds())
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
			fmt.Fprintln(w, "CPU per record (µs of CPU time per row, from /proc; the relaybench process holds the relay or the ceiling's producer, and the benchmark's consumer):")
			fmt.Fprintln(w)
			cols := []string{"run>", "path", "offered", "records/s>"}
			for _, c := range cpuClasses {
				cols = append(cols, c+">")
			}
			t = benchenv.NewTable(w, append(cols, "total>", "cores busy>")...)
		}
		var total time.Duration
		cells := []any{r.run + 1, r.what, r.offered, fmt.Sprintf("%.0f", r.throughput)}
		for _, c := range cpuClasses {
			total += r.cpu.class[c]
			cells = append(cells, fmt.Sprintf("%.1f", float64(r.cpu.class[c].Microseconds())/float64(r.n)))
		}
		t.Row(append(cells, fmt.Sprintf("%.1f", float64(total.Microseconds())/float64(r.n)), fmt.Sprintf("%.2f", total.Seconds()/r.cpu.wall.Seconds()))...)
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
