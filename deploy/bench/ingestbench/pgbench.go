package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/gatehouse/gatehouse/deploy/bench/benchenv"
)

// pgScript is the pgbench side: the Writer's statement with one row per
// transaction, as a single delivery writes it.
type pgScript struct {
	path string
	defs []string // -D name=value arguments
	runs int      // pgbench runs so far
	text string
}

var (
	paramRef = regexp.MustCompile(`\$(\d+)\b`)
	// outboxKey is the outbox id of the captured row in the Writer's jsonb input.
	outboxKey = regexp.MustCompile(`"o":"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"`)
)

// buildScript turns the captured statement into a pgbench script: every
// parameter keeps its cast and captured value (bound with -D, as pgx binds
// it) except, inside the Writer's jsonb input (ingest/inbox/store_input.go),
// the event id, a per-client counter (13 digits like the receiver's), and
// the outbox id derived from it: the input is the text around them
// concatenated with them and cast as the statement casts it, so
// PostgreSQL parses one jsonb value per transaction as it does for the
// receiver. An unknown parameter type fails, so a change to the Writer
// cannot go unnoticed.
func buildScript(dir, stmt string, args []any) (*pgScript, error) {
	s := &pgScript{path: filepath.Join(dir, "ingest-insert.sql"), defs: []string{"n=0"}}
	repl := make(map[int]string, len(args))
	var idSeen bool
	for i, a := range args {
		n := i + 1
		var lit string
		switch v := a.(type) {
		case []byte: // the rows, one jsonb array
			js := string(v)
			id := `"e":"` + captureEventID + `"`
			ie := strings.Index(js, id)
			loc := outboxKey.FindStringIndex(js)
			if ie < 0 || loc == nil || loc[0] < ie {
				return nil, fmt.Errorf("pgbench script: parameter $%d: the captured row's event id or outbox id not found in %.200s", n, js)
			}
			pre, mid, suf := js[:ie]+`"e":"`, `"`+js[ie+len(id):loc[0]]+`"o":"`, `"`+js[loc[1]:]
			repl[n], idSeen = fmt.Sprintf("(:p%da || :eid::text || :p%db || lpad(to_hex(:eid::bigint), 32, '0')::uuid::text || :p%dc)", n, n, n), true
			s.defs = append(s.defs, fmt.Sprintf("p%da=%s", n, pre), fmt.Sprintf("p%db=%s", n, mid), fmt.Sprintf("p%dc=%s", n, suf))
			continue
		case float64:
			lit = strconv.FormatFloat(v, 'g', -1, 64)
		default:
			return nil, fmt.Errorf("pgbench script: parameter $%d has unsupported type %T", n, a)
		}
		repl[n], s.defs = fmt.Sprintf(":p%d", n), append(s.defs, fmt.Sprintf("p%d=%s", n, lit))
	}
	if !idSeen {
		return nil, fmt.Errorf("pgbench script: the rows' parameter (with the event id and outbox id) not found in %d captured arguments", len(args))
	}
	var bad error
	body := paramRef.ReplaceAllStringFunc(stmt, func(m string) string {
		n, _ := strconv.Atoi(m[1:])
		r, ok := repl[n]
		if !ok {
			bad = fmt.Errorf("pgbench script: statement references %s beyond its arguments", m)
		}
		return r
	})
	if bad != nil {
		return nil, bad
	}
	s.text = "\\set n :n + 1\n\\set eid 1000000000000 + :n * 1000 + :client_id\n" + strings.TrimSpace(body) + ";\n"
	return s, os.WriteFile(s.path, []byte(s.text), 0o644)
}

// runPgbench runs the script with clients connections for d (at rate per
// second when rate > 0), every transaction's latency from pgbench's log.
func runPgbench(ctx context.Context, dbURL string, s *pgScript, clients int, d time.Duration, rate float64) (sample, error) {
	logDir, err := os.MkdirTemp("", "ingestbench-pgbench-")
	if err != nil {
		return sample{}, err
	}
	defer os.RemoveAll(logDir)
	args := []string{"-n", "-M", "prepared", "-c", strconv.Itoa(clients), "-j", "2",
		"-T", strconv.Itoa(int(d.Round(time.Second).Seconds())), "-f", s.path,
		"-l", "--log-prefix", filepath.Join(logDir, "pgb")}
	if rate > 0 {
		args = append(args, "-R", strconv.FormatFloat(rate, 'f', 0, 64))
	}
	for _, def := range s.defs {
		args = append(args, "-D", def)
	}
	// Each run's event ids start past the previous run's (the tables are
	// not emptied between runs) and past the receiver's (below 10^12+10^8).
	s.runs++
	args = append(args, "-D", fmt.Sprintf("n=%d", s.runs*100_000_000))
	args = append(args, dbURL)
	// The generic plan, as the receiver's statement gets: left to auto,
	// PostgreSQL re-plans each one-row execution (~300 µs a transaction).
	tps, err := benchenv.Pgbench(ctx, []string{"PGOPTIONS=-c plan_cache_mode=force_generic_plan"}, args...)
	if err != nil {
		return sample{}, err
	}
	lats, err := readPgbenchLogs(logDir)
	if err != nil {
		return sample{}, err
	}
	r := sample{n: lats.N(), lat: lats}
	// pgbench's own tps excludes connection set-up; express it as n/elapsed.
	if tps > 0 {
		r.elapsed = time.Duration(float64(lats.N()) / tps * float64(time.Second))
	}
	if rate > 0 {
		r.elapsed = d
	}
	return r, nil
}

// readPgbenchLogs collects field 3 (latency in µs; from the scheduled start
// under -R) of every line of every per-thread log file in dir.
func readPgbenchLogs(dir string) (*benchenv.Hist, error) {
	files, err := filepath.Glob(filepath.Join(dir, "pgb.*"))
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("pgbench: no transaction logs in %s", dir)
	}
	lats := benchenv.NewHist()
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		for _, line := range strings.Split(string(raw), "\n") {
			if f := strings.Fields(line); len(f) >= 3 {
				if us, err := strconv.ParseInt(f[2], 10, 64); err == nil { // not "skipped" (--latency-limit)
					lats.Record(time.Duration(us) * time.Microsecond)
				}
			}
		}
	}
	return lats, nil
}
