// Package benchenv is the kit every section of `make bench` (and the soak)
// is built from: private PostgreSQL and Kafka, signed deliveries, load,
// latencies, `gatehouse` processes, /proc CPU, metrics, tables, flags and
// a section's main with its run stamp, each in the file of that name.
package benchenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gatehouse/gatehouse/internal/testenv"
)

// Options say what a section's Stack holds.
type Options struct {
	// Name prefixes progress lines and temporary directories ("relaybench").
	Name string
	// Kafka starts a broker beside PostgreSQL.
	Kafka bool
	// Keep leaves the data directories behind for inspection.
	Keep bool `flag:"keep" help:"keep the PostgreSQL (and Kafka) directories"`
}

// Stack returns o (a section's options embed it and hand it to Run).
func (o *Options) Stack() *Options { return o }

// Stack is one section's real components, private to its run.
type Stack struct {
	O            Options
	Dir          string // PostgreSQL's data directory
	PG           *testenv.PG
	Kafka        *testenv.Kafka // nil without Options.Kafka
	Admin        *kadm.Client   // a client of Kafka's (nil without)
	DBURL        string
	Pool         *pgxpool.Pool
	PGVersion    string
	KafkaVersion string // "" without Kafka
	log          io.Writer
	commit       time.Duration // a commit's time when the Stack started (Settle)
}

// Start starts PostgreSQL (and Kafka when asked) and the benchmark database.
func Start(ctx context.Context, o Options, log io.Writer) (_ *Stack, err error) {
	s := &Stack{O: o, log: log}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	if s.Dir, err = os.MkdirTemp("", o.Name+"-pg-"); err != nil {
		return nil, err
	}
	s.Logf("starting PostgreSQL (fsync on) in %s", s.Dir)
	if s.PG, err = testenv.StartPG(ctx, s.Dir, false); err != nil {
		return nil, fmt.Errorf("start postgres: %w", err)
	}
	if o.Kafka {
		s.Logf("starting Kafka")
		if s.Kafka, err = testenv.StartKafka(ctx, ""); err != nil {
			return nil, fmt.Errorf("start kafka: %w", err)
		}
		s.KafkaVersion = kafkaVersion()
		cl, err := kgo.NewClient(kgo.SeedBrokers(s.Kafka.Brokers...))
		if err != nil {
			return nil, fmt.Errorf("kafka client: %w", err)
		}
		s.Admin = kadm.NewClient(cl)
	}
	if s.DBURL, err = testenv.CreateDatabase(ctx, s.PG.AdminURL(), true); err != nil {
		return nil, err
	}
	if s.Pool, err = pgxpool.New(ctx, s.DBURL); err != nil {
		return nil, err
	}
	if err := s.Pool.QueryRow(ctx, "SHOW server_version").Scan(&s.PGVersion); err != nil {
		return nil, fmt.Errorf("read server_version: %w", err)
	}
	s.commit, err = commitTime(ctx, s.Pool)
	return s, err
}

// Logf writes one progress line, prefixed with the section's name.
func (s *Stack) Logf(format string, args ...any) {
	fmt.Fprintf(s.log, s.O.Name+": "+format+"\n", args...)
}

// Close stops what Start started and removes its directories (unless Keep).
func (s *Stack) Close() {
	if s.Pool != nil {
		s.Pool.Close()
	}
	if s.Admin != nil {
		s.Admin.Close()
	}
	if s.Kafka != nil {
		_ = s.Kafka.Stop()
		if !s.O.Keep {
			_ = os.RemoveAll(s.Kafka.Dir)
		}
	}
	if s.PG != nil {
		_ = s.PG.Stop(false)
	}
	if s.Dir != "" && !s.O.Keep {
		_ = os.RemoveAll(s.Dir)
	}
}

// Brokers is the broker list as GATEHOUSE_KAFKA_BROKERS takes it.
func (s *Stack) Brokers() string {
	if s.Kafka == nil {
		return ""
	}
	return strings.Join(s.Kafka.Brokers, ",")
}

// kafkaVersion is the version of the fetched broker's client jar.
func kafkaVersion() string {
	out, err := exec.Command("bash", "-c", `ls "$(bash deploy/local/kafka-fetch.sh | tail -1)" | grep -m1 -o '^kafka-clients-[0-9.]*' | sed 's/kafka-clients-//; s/\.$//'`).Output()
	if v := strings.TrimSpace(string(out)); err == nil && v != "" {
		return v
	}
	return "4.x"
}

var tpsLine = regexp.MustCompile(`(?m)^tps = ([0-9.]+)`)

// Pgbench runs pgbench (PATH, else PostgreSQL's bin) and returns its tps.
func Pgbench(ctx context.Context, env []string, args ...string) (tps float64, err error) {
	bin, err := exec.LookPath("pgbench")
	if err != nil {
		dir, derr := testenv.PGBinDir()
		if derr != nil {
			return 0, derr
		}
		bin = filepath.Join(dir, "pgbench")
		if _, err := os.Stat(bin); err != nil {
			return 0, fmt.Errorf("pgbench not found on PATH nor in %s (make deps installs it)", dir)
		}
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("pgbench: %w: %s", err, tail(out, 1500))
	}
	m := tpsLine.FindSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("pgbench: no tps in output: %s", tail(out, 1500))
	}
	return strconv.ParseFloat(string(m[1]), 64)
}

func tail(b []byte, n int) string { return string(b[max(0, len(b)-n):]) }

// Settle readies the machine for a run: a checkpoint, a sync, then a wait
// (up to 2 min) until a commit takes at most 1.5 × its time at start: after
// a bulk load this machine's disk stays slow for tens of seconds.
func (s *Stack) Settle(ctx context.Context, pool *pgxpool.Pool) error {
	if _, err := pool.Exec(ctx, "CHECKPOINT"); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	syscall.Sync()
	var now time.Duration
	err := Until(ctx, time.Second, 2*time.Minute, func() (done bool, err error) {
		now, err = commitTime(ctx, pool)
		return now <= s.commit*3/2, err
	})
	if errors.Is(err, ErrNotWithin) {
		s.Logf("a commit still takes %v (%v at start); running anyway", now, s.commit)
		return nil
	}
	return err
}

// Analyze gathers the statistics of the tables a delivery writes, as
// autovacuum keeps them in service (without, PostgreSQL's CPU doubles).
func Analyze(ctx context.Context, pool *pgxpool.Pool) error {
	if _, err := pool.Exec(ctx, "ANALYZE inbox, outbox, dedupe_keys, ingest_replay_guard"); err != nil {
		return fmt.Errorf("analyze: %w", err)
	}
	return nil
}

// commitTime is the median time of 20 commits that each flush the WAL.
func commitTime(ctx context.Context, pool *pgxpool.Pool) (time.Duration, error) {
	h := NewHist()
	for range 20 {
		t := time.Now()
		if _, err := pool.Exec(ctx, "SELECT txid_current()"); err != nil {
			return 0, fmt.Errorf("commit probe: %w", err)
		}
		h.Record(time.Since(t))
	}
	return h.Q(0.5), nil
}

// DropPartitions drops and forgets every partition (storage_partitions).
func DropPartitions(ctx context.Context, pool *pgxpool.Pool) error {
	_, err := pool.Exec(ctx, `DO $$ DECLARE r record; BEGIN
  FOR r IN SELECT name FROM storage_partitions LOOP EXECUTE format('DROP TABLE %I', r.name); END LOOP;
  DELETE FROM storage_partitions;
END $$`)
	if err != nil {
		return fmt.Errorf("drop partitions: %w", err)
	}
	return nil
}
