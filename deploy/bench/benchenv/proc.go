package benchenv

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// CPU accounting from /proc: on a shared machine throughput moves with
// others' load, while CPU time per event is a property of the code path.

// ClockTick is USER_HZ (100 on Linux), the unit of /proc's CPU times.
const ClockTick = 10 * time.Millisecond

// statFields is /proc/<pid>/stat after the command name: f[0] is field 3.
func statFields(pid string) ([]string, error) {
	raw, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return nil, err
	}
	i := bytes.LastIndexByte(raw, ')')
	if i < 0 {
		return nil, fmt.Errorf("parse /proc/%s/stat", pid)
	}
	f := strings.Fields(string(raw[i+1:]))
	if len(f) < 17 {
		return nil, fmt.Errorf("parse /proc/%s/stat", pid)
	}
	return f, nil
}

// ProcCPU is pid's utime+stime (+ its reaped children's) and its parent's pid.
func ProcCPU(pid int, children bool) (cpu time.Duration, ppid int, err error) {
	f, err := statFields(strconv.Itoa(pid))
	if err != nil {
		return 0, 0, err
	}
	ppid, _ = strconv.Atoi(f[1])
	last := 12
	if children {
		last = 14
	}
	sum := 0
	for _, s := range f[11 : last+1] {
		n, _ := strconv.Atoi(s)
		sum += n
	}
	return time.Duration(sum) * ClockTick, ppid, nil
}

// PostgresCPU is the CPU time of the Stack's postmaster and all its
// processes, live and exited (its children's time); 0 when unreadable.
func (s *Stack) PostgresCPU() time.Duration {
	// The postmaster's pid is the first line of postmaster.pid.
	raw, _ := os.ReadFile(filepath.Join(s.Dir, "pgdata", "postmaster.pid"))
	pm, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(raw), "\n", 2)[0]))
	if err != nil {
		return 0
	}
	total, _, _ := ProcCPU(pm, true)
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if t, pp, err := ProcCPU(pid, false); err == nil && pp == pm {
			total += t
		}
	}
	return total
}

// NiceValue is this process's nice value (inherited by everything it starts).
func NiceValue() int {
	f, err := statFields("self")
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(f[16]) // field 19: nice
	return n
}

// StatusKB reads a kB field (VmRSS:, VmHWM:) of /proc/<pid>/status; 0 if none.
func StatusKB(pid int, field string) int64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == field {
			v, _ := strconv.ParseInt(f[1], 10, 64)
			return v
		}
	}
	return 0
}
