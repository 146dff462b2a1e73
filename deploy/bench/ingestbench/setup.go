package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gatehouse/gatehouse/ingest"
	"github.com/gatehouse/gatehouse/internal/testenv"
	"github.com/gatehouse/gatehouse/migrations"
)

// provider is the benchmark's provider: the reference scheme of SPEC.md.
const (
	provider  = "bench"
	tsHeader  = "X-Bench-Timestamp"
	sigHeader = "X-Bench-Signature"
	eventType = "payment.succeeded"
)

// bench holds everything one benchmark run shares.
type bench struct {
	o        *options
	log      io.Writer
	pg       *testenv.PG
	dir      string
	dbURL    string
	admin    *pgxpool.Pool // truncate, checkpoint, settings
	secret   []byte
	recv     *receiver
	gen      *eventGen
	script   *pgScript // the Writer's statement, captured from the wire, as a pgbench script
	settings string    // the PostgreSQL settings quoted in the table
	pgVer    string
}

func setup(ctx context.Context, o *options, log io.Writer) (*bench, error) {
	b := &bench{o: o, log: log}
	var err error
	if b.dir = o.pgDir; b.dir == "" {
		if b.dir, err = os.MkdirTemp("", "ingestbench-"); err != nil {
			return nil, err
		}
	}
	if !filepath.IsAbs(b.dir) {
		if b.dir, err = filepath.Abs(b.dir); err != nil {
			return nil, err
		}
	}
	fmt.Fprintf(log, "ingestbench: starting PostgreSQL (fsync on) in %s\n", b.dir)
	if b.pg, err = testenv.StartPG(ctx, b.dir, false); err != nil {
		b.close()
		return nil, fmt.Errorf("start postgres: %w", err)
	}
	if err := b.init(ctx); err != nil {
		b.close()
		return nil, err
	}
	return b, nil
}

func (b *bench) init(ctx context.Context) error {
	var err error
	if b.dbURL, err = testenv.CreateDatabase(ctx, b.pg.AdminURL(), false); err != nil {
		return err
	}
	if err := migrations.Up(ctx, b.dbURL); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if b.admin, err = pgxpool.New(ctx, b.dbURL); err != nil {
		return fmt.Errorf("admin pool: %w", err)
	}
	b.settings, b.pgVer, err = b.readSettings(ctx)
	if err != nil {
		return err
	}
	b.secret = make([]byte, 32)
	_, _ = rand.Read(b.secret)
	b.secret = []byte("whsec_bench_" + hex.EncodeToString(b.secret))
	b.gen = newEventGen(b.secret, b.o.bodyBytes)
	now := time.Now()
	stmt, args, err := captureStatement(ctx, b.dbURL, ingest.Record{
		Provider: provider, EventID: captureEventID, Type: eventType, CreatedAt: &now,
		Payload: b.gen.body(1_000_000_000_000, now), SecretID: "bench",
		AggregateID: "pay_1000000000000", Topic: "gatehouse.webhooks." + provider,
	})
	if err != nil {
		return err
	}
	if b.script, err = buildScript(b.dir, stmt, args); err != nil {
		return err
	}
	if err := b.reset(ctx); err != nil {
		return err
	}
	if b.recv, err = startReceiver(ctx, b); err != nil {
		return err
	}
	b.gen.setHost(b.recv.addr)
	return nil
}

func (b *bench) readSettings(ctx context.Context) (settings, version string, err error) {
	names := []string{"fsync", "synchronous_commit", "full_page_writes", "wal_level", "shared_buffers", "max_wal_size", "commit_delay"}
	var parts []string
	for _, n := range names {
		var v string
		if err := b.admin.QueryRow(ctx, "SELECT current_setting($1)", n).Scan(&v); err != nil {
			return "", "", fmt.Errorf("read setting %s: %w", n, err)
		}
		parts = append(parts, n+"="+v)
	}
	if err := b.admin.QueryRow(ctx, "SELECT current_setting('server_version')").Scan(&version); err != nil {
		return "", "", fmt.Errorf("read server_version: %w", err)
	}
	return strings.Join(parts, ", "), version, nil
}

// reset empties the tables and checkpoints, so every run starts from the
// same state and no run pays for the previous run's dirty pages.
func (b *bench) reset(ctx context.Context) error {
	if _, err := b.admin.Exec(ctx, "TRUNCATE inbox, outbox"); err != nil {
		return fmt.Errorf("truncate: %w", err)
	}
	if _, err := b.admin.Exec(ctx, "CHECKPOINT"); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	return nil
}

// count returns the rows in inbox and outbox.
func (b *bench) count(ctx context.Context) (inbox, outbox int64, err error) {
	err = b.admin.QueryRow(ctx, "SELECT (SELECT count(*) FROM inbox), (SELECT count(*) FROM outbox)").Scan(&inbox, &outbox)
	return inbox, outbox, err
}

func (b *bench) close() {
	if b.recv != nil {
		b.recv.stop()
	}
	if b.admin != nil {
		b.admin.Close()
	}
	if b.pg != nil {
		_ = b.pg.Stop(false)
	}
	if b.dir != "" && !b.o.keep {
		_ = os.RemoveAll(b.dir)
	}
}

// captureEventID marks the event id parameter in the captured statement.
const captureEventID = "ingestbench-capture"

// stmtTracer records the first query it sees.
type stmtTracer struct {
	once sync.Once
	q    chan pgx.TraceQueryStartData
}

func (t *stmtTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	t.once.Do(func() { t.q <- d })
	return ctx
}

func (t *stmtTracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// captureStatement writes rec through a real ingest.Writer (a batch of one,
// as a lone delivery is written) and returns the SQL text and arguments it
// sent, so pgbench runs exactly the Writer's statement (no copy that could
// drift from ingest/store.go).
func captureStatement(ctx context.Context, dbURL string, rec ingest.Record) (string, []any, error) {
	cfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		return "", nil, err
	}
	tr := &stmtTracer{q: make(chan pgx.TraceQueryStartData, 1)}
	cfg.ConnConfig.Tracer = tr
	cfg.MaxConns = 1
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return "", nil, fmt.Errorf("capture pool: %w", err)
	}
	defer pool.Close()
	w, err := ingest.NewWriter(pool, 1, 1)
	if err != nil {
		return "", nil, err
	}
	defer w.Close()
	if _, err = w.Write(ctx, rec); err != nil {
		return "", nil, fmt.Errorf("capture statement: %w", err)
	}
	d := <-tr.q
	return d.SQL, d.Args, nil
}
