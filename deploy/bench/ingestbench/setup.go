package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/gatehouse/gatehouse/deploy/bench/benchenv"
	"github.com/gatehouse/gatehouse/ingest/inbox"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// provider is the benchmark's provider: the reference scheme of SPEC.md,
// with benchenv's headers and event type.
const provider = "bench"

// bench holds everything one benchmark run shares.
type bench struct {
	*benchenv.Stack // PostgreSQL, the migrated database, its pool (truncate, checkpoint, settings)
	o               *options
	secret          []byte
	recv            *benchenv.Proc // the receiver under test (nil during pgbench's runs)
	gen             *benchenv.Deliveries
	github          *benchenv.Deliveries // the GitHub scheme's deliveries (single.go, mix.go): one id counter for the database
	script          *pgScript            // the Writer's statement, captured from the wire, as a pgbench script
	singleSQL       *pgScript            // a plain single-row INSERT into singleTable (single.go)
	settings        string               // the PostgreSQL settings quoted in the table
	mixSecret       []byte               // the mix section's providers' secret
	rate            float64              // the highest receiver rate seen, to presign enough requests
	emptied         bool                 // the tables were emptied once (reset)
}

// setup captures the Writer's statement and starts the receiver (b.recv).
func setup(ctx context.Context, st *benchenv.Stack, o *options) (*bench, error) {
	b := &bench{Stack: st, o: o, rate: 1000}
	// The PostgreSQL settings the reports quote.
	err := b.Pool.QueryRow(ctx, `SELECT string_agg(n || '=' || current_setting(n), ', ' ORDER BY i) FROM unnest($1::text[]) WITH ORDINALITY s(n, i)`,
		[]string{"fsync", "synchronous_commit", "full_page_writes", "wal_level", "shared_buffers", "max_wal_size", "commit_delay"}).Scan(&b.settings)
	if err != nil {
		return nil, fmt.Errorf("read settings: %w", err)
	}
	b.secret = benchenv.Secret("whsec_bench_", 32)
	b.gen = benchenv.NewDeliveries(provider, "", b.secret, b.o.bodyBytes)
	// Hex digits are base64 too: a Standard Webhooks secret, and an opaque
	// string to every other scheme of the mix.
	b.mixSecret = benchenv.Secret("whsec_", 32)
	if b.github, err = benchenv.NewSchemeDeliveries("github", "", b.mixSecret, b.o.bodyBytes); err != nil {
		return nil, err
	}
	now := time.Now()
	stmt, args, err := captureStatement(ctx, b.DBURL, inbox.Record{
		Provider: provider, EventID: captureEventID, Type: benchenv.EventType, CreatedAt: &now,
		Payload: b.gen.Body(1_000_000_000_000, now), SecretID: "bench",
		AggregateID: "pay_1000000000000", Topic: "gatehouse.webhooks." + provider,
	})
	if err != nil {
		return nil, err
	}
	if b.script, err = buildScript(b.Dir, stmt, args); err != nil {
		return nil, err
	}
	if b.singleSQL, err = singleScript(ctx, b.Pool, b.Dir, b.gen.Body(1_000_000_000_000, now)); err != nil {
		return nil, err
	}
	if err := b.reset(ctx); err != nil {
		return nil, err
	}
	if b.recv, err = b.startReceiver(ctx); err != nil {
		return nil, err
	}
	b.gen.SetAddr(b.recv.Public)
	b.github.SetAddr(b.recv.Public)
	return b, nil
}

// startReceiver starts `gatehouse serve` (with env added) on a config
// holding the bench provider and the mix's providers.
func (b *bench) startReceiver(ctx context.Context, env ...string) (*benchenv.Proc, error) {
	path, err := b.writeConfig("gatehouse.yaml", b.DBURL, "")
	if err != nil {
		return nil, err
	}
	return benchenv.Gatehouse{Bin: b.o.gatehouse, Sub: "serve", Config: path, Log: os.DevNull, Env: env}.Start(ctx)
}

// writeConfig writes the gatehouse.yaml name of dbURL with extra top-level
// keys, holding the bench provider and the mix's providers, and returns its path.
func (b *bench) writeConfig(name, dbURL, extra string) (string, error) {
	providers := benchenv.ProviderYAML(provider, b.secret, "")
	for _, s := range benchenv.MixSchemes {
		providers += benchenv.SchemeYAML(s, b.mixSecret)
	}
	return benchenv.WriteConfig(b.Dir, name, dbURL, extra, providers)
}

// reset empties the tables once and checkpoints before every run: a
// TRUNCATE leaves them without statistics, and the Writer's plan for empty
// tables is not a receiver's in service (analyze brings them there).
func (b *bench) reset(ctx context.Context) error {
	if !b.emptied {
		if _, err := b.Pool.Exec(ctx, "TRUNCATE inbox, outbox, dedupe_keys, ingest_replay_guard, "+singleTable); err != nil {
			return fmt.Errorf("truncate: %w", err)
		}
		b.emptied = true
	}
	if _, err := b.Pool.Exec(ctx, "CHECKPOINT"); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	return nil
}

// captureEventID marks the event id parameter in the captured statement.
const captureEventID = "ingestbench-capture"

// stmtTracer records the first query whose arguments hold captureEventID
// (the Writer's own statement: its pool also reads the key filters).
type stmtTracer struct {
	once sync.Once
	q    chan pgx.TraceQueryStartData
}

func (t *stmtTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	for _, a := range d.Args {
		if v, ok := a.([]byte); ok && bytes.Contains(v, []byte(`"e":"`+captureEventID+`"`)) { // the rows' jsonb (ingest/inbox/store_input.go)
			t.once.Do(func() { t.q <- d })
		}
	}
	return ctx
}

func (t *stmtTracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// captureStatement writes rec through an inbox.Writer (a batch of one)
// and returns the SQL and arguments it sent: pgbench runs exactly those.
func captureStatement(ctx context.Context, dbURL string, rec inbox.Record) (string, []any, error) {
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
	w, err := inbox.NewWriter(pool, 1, 1)
	if err != nil {
		return "", nil, err
	}
	defer w.Close()
	if _, err = w.Write(ctx, rec); err != nil {
		return "", nil, fmt.Errorf("capture statement: %w", err)
	}
	select { // the tracer runs inside the Writer's query, before Write returns
	case d := <-tr.q:
		return d.SQL, d.Args, nil
	default:
		return "", nil, errors.New("capture statement: no statement of the Writer carried the captured row's event id in its rows' jsonb")
	}
}
