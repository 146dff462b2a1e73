package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// CPU accounting from /proc: on a shared 2-core machine throughput moves
// with everyone else's load, while CPU time per event is a property of the
// code path, so the report shows both.

const clockTick = 10 * time.Millisecond // USER_HZ = 100 on Linux

// procCPU returns utime+stime of pid, plus cutime+cstime (reaped children)
// when children is true.
func procCPU(pid int, children bool) (time.Duration, int, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, err
	}
	// Fields after the parenthesised command name, which may hold spaces.
	i := bytes.LastIndexByte(raw, ')')
	if i < 0 {
		return 0, 0, fmt.Errorf("parse /proc/%d/stat", pid)
	}
	f := strings.Fields(string(raw[i+1:]))
	// f[0] is field 3 (state): ppid is f[1], utime f[11], stime f[12], cutime f[13], cstime f[14].
	if len(f) < 15 {
		return 0, 0, fmt.Errorf("parse /proc/%d/stat", pid)
	}
	ppid, _ := strconv.Atoi(f[1])
	sum := 0
	last := 12
	if children {
		last = 14
	}
	for _, s := range f[11 : last+1] {
		n, _ := strconv.Atoi(s)
		sum += n
	}
	return time.Duration(sum) * clockTick, ppid, nil
}

// postgresCPU is the CPU time of the postmaster and all its processes, live
// and exited (exited backends are accounted in the postmaster's children time).
func postgresCPU(pgdata string) (time.Duration, error) {
	raw, err := os.ReadFile(filepath.Join(pgdata, "postmaster.pid"))
	if err != nil {
		return 0, fmt.Errorf("postmaster.pid: %w", err)
	}
	pm, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(raw), "\n", 2)[0]))
	if err != nil {
		return 0, fmt.Errorf("postmaster.pid: %w", err)
	}
	total, _, err := procCPU(pm, true)
	if err != nil {
		return 0, err
	}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == pm {
			continue
		}
		if t, ppid, err := procCPU(pid, false); err == nil && ppid == pm {
			total += t
		}
	}
	return total, nil
}

// cpuMark is a snapshot of the CPU time of the processes of one side, and
// of the whole machine.
type cpuMark struct {
	pg, recv, self time.Duration
	steal          time.Duration // machine-wide, all CPUs (/proc/stat)
}

// stealTime returns the steal time of all CPUs together.
func stealTime() time.Duration {
	raw, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(raw), "\n")
	f := strings.Fields(line) // cpu user nice system idle iowait irq softirq steal ...
	if len(f) < 9 || f[0] != "cpu" {
		return 0
	}
	v, _ := strconv.Atoi(f[8])
	return time.Duration(v) * clockTick
}

func (b *bench) cpuMark() cpuMark {
	var m cpuMark
	m.pg, _ = postgresCPU(filepath.Join(b.Dir, "pgdata"))
	if b.recv != nil && b.recv.pid > 0 {
		m.recv, _, _ = procCPU(b.recv.pid, false)
	}
	m.self, _, _ = procCPU(os.Getpid(), false)
	m.steal = stealTime()
	return m
}

// niceValue is this process's nice value (inherited by everything it starts).
func niceValue() int {
	raw, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(raw, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(raw[i+1:]))
	if len(f) < 17 {
		return 0
	}
	n, _ := strconv.Atoi(f[16]) // field 19: nice
	return n
}
