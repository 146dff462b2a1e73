package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gatehouse/gatehouse/deploy/bench/benchenv"
)

// The concurrency rows: the receiver on the GitHub scheme (its replay
// guard's row written with every event) in closed loop at each -single-c,
// against pgbench with as many clients each committing one plain row of
// about the same bytes into a table of its own on the same database. Such
// a transaction does nothing but commit a row: its latency is this disk's
// commit limit, and its rate what a receiver committing each event alone
// could reach at best.

// singleTable is the table of pgbench's single-row INSERT.
const singleTable = "bench_single"

// singleTargets are the targets of receiver events/s ÷ pgbench single-row
// transactions/s by connections; p50Target bounds the receiver's p50 ack
// at 4 connections over pgbench's mean transaction latency.
var singleTargets = map[int]float64{4: 1.0, 16: 2.0, 64: 3.0}

const p50Target = 1.3

// singleScript creates singleTable (a bigint primary key and a text
// column) and writes pgbench's script: one INSERT of payload a transaction.
func singleScript(ctx context.Context, pool *pgxpool.Pool, dir string, payload []byte) (*pgScript, error) {
	if _, err := pool.Exec(ctx, "CREATE TABLE IF NOT EXISTS "+singleTable+" (id bigint PRIMARY KEY, payload text NOT NULL)"); err != nil {
		return nil, fmt.Errorf("create %s: %w", singleTable, err)
	}
	s := &pgScript{path: filepath.Join(dir, "single-insert.sql"), defs: []string{"n=0", "payload=" + string(payload)}}
	s.text = "\\set n :n + 1\n\\set eid 1000000000000 + :n * 1000 + :client_id\n" +
		"INSERT INTO " + singleTable + " (id, payload) VALUES (:eid, :payload);\n"
	return s, os.WriteFile(s.path, []byte(s.text), 0o644)
}

// singleResult is each concurrency's samples of both sides.
type singleResult struct {
	conc      []int
	recv, pgb [][]sample
	payload   int // bytes of pgbench's row
}

// single fills the GitHub scheme's tables (a warm-up at the largest
// concurrency, then analyze, as the reference scheme's in measure) and
// runs the receiver and pgbench's single-row INSERT at each -single-c.
func (b *bench) single(ctx context.Context) (*singleResult, error) {
	if len(b.o.singleConc) == 0 {
		return nil, nil
	}
	res := &singleResult{conc: b.o.singleConc, payload: len(b.gen.Body(1_000_000_000_000, time.Now()))}
	maxC := slices.Max(b.o.singleConc)
	const warmup = 3 * time.Second
	b.Logf("GitHub scheme and pgbench single-row warm-up, %s each at %d connections", warmup, maxC)
	if _, err := b.sampleRun(ctx, "github warm-up", func() (sample, error) {
		return b.closed(ctx, maxC, warmup, presign(b.github, 0, 0))
	}); err != nil {
		return nil, err
	}
	if _, err := b.sampleRun(ctx, "pgbench single-row warm-up", func() (sample, error) {
		return runPgbench(ctx, b.DBURL, b.singleSQL, maxC, warmup, 0)
	}); err != nil {
		return nil, err
	}
	if err := benchenv.Analyze(ctx, b.Pool); err != nil {
		return nil, err
	}
	for _, c := range b.o.singleConc {
		recv := b.closedSide(ctx, "receiver github", b.recv, c)
		recv.src = b.github
		pgb := side{name: "pgbench single-row", run: func(func(time.Time) []byte) (sample, error) {
			return runPgbench(ctx, b.DBURL, b.singleSQL, c, b.o.duration, 0)
		}}
		ss, err := b.rotate(ctx, b.o.runs, []side{recv, pgb}, func(i int, ss [][]sample) {
			r, p := ss[0][i], ss[1][i]
			b.Logf("single c=%d run %d: receiver (github) %.0f/s p50 %.2f ms | pgbench single-row %.0f/s mean %.2f ms | ratio %.2f | load %.1f",
				c, i+1, r.tput(), r.p50(), p.tput(), p.mean(), r.tput()/p.tput(), p.load)
		})
		if err != nil {
			return nil, err
		}
		res.recv, res.pgb = append(res.recv, ss[0]), append(res.pgb, ss[1])
	}
	return res, nil
}

// mean is the run's mean latency in milliseconds.
func (s sample) mean() float64 { return benchenv.Millis(s.lat.Mean()) }

// warm is the receiver's samples at c connections (ok false without them).
func (r *singleResult) warm(c int) (ss []sample, ok bool) {
	if r == nil {
		return nil, false
	}
	i := slices.Index(r.conc, c)
	if i < 0 {
		return nil, false
	}
	return r.recv[i], true
}

func (r *singleResult) print(w io.Writer, b *bench) {
	if r == nil {
		return
	}
	fmt.Fprintf(w, "\n### Concurrency: the receiver against the disk's commit limit\n\n")
	fmt.Fprintf(w, "The receiver on the GitHub scheme (body HMAC and the replay guard's row with every event; about %d-byte bodies) in closed loop, against pgbench with as many clients (`-M prepared -j 2`) each committing one plain row: "+
		"`INSERT INTO %s (id, payload) VALUES (…)`, a bigint primary key and a %d-byte text, in a table created for the bench on the same database, default durability. "+
		"Such a transaction does nothing but commit one row: its mean latency is this disk's commit limit and its rate what a receiver committing each event alone could reach. "+
		"Both sides after a %s warm-up each at the largest concurrency and ANALYZE; %d × %s per concurrency and side in counterbalanced order, checkpointed before each run. Medians.\n\n",
		b.o.bodyBytes, singleTable, r.payload, 3*time.Second, b.o.runs, b.o.duration)
	tb := benchenv.NewTable(w, "connections>", "side", "events or transactions/s>", "p50 ack>", "mean>", "p99 ack>", "events per commit>", "PostgreSQL CPU per event>", "receiver ÷ pgbench>", "target")
	met := true
	for i, c := range r.conc {
		for k, s := range []struct {
			name string
			ss   []sample
		}{{"gatehouse receiver, GitHub scheme", r.recv[i]}, {"pgbench, single-row INSERT", r.pgb[i]}} {
			conn := ""
			if k == 0 {
				conn = fmt.Sprint(c)
			}
			tb.Rowf("%s | %s | %s | %.2f ms | %.2f ms | %.2f ms | %.1f | %.0f µs | | ", conn, s.name, benchenv.Thousands(med(s.ss, sample.tput)),
				med(s.ss, sample.p50), med(s.ss, sample.mean), med(s.ss, sample.p99), med(s.ss, sample.perCommit), med(s.ss, sample.pgPer))
		}
		ratio := med(r.recv[i], sample.tput) / med(r.pgb[i], sample.tput)
		lo, hi, pm := paired(r.recv[i], r.pgb[i])
		target := "–"
		if t, ok := singleTargets[c]; ok {
			target = fmt.Sprintf("≥ %.1f: %s", t, benchenv.Verdict(ratio >= t))
			met = met && ratio >= t
		}
		tb.Rowf("| **ratio** (paired runs: median %.2f, range %.2f–%.2f) | | | | | | | **%.2f** | %s", pm, lo, hi, ratio, target)
	}
	fmt.Fprintf(w, "\nTargets: receiver ÷ pgbench single-row ≥ 1.0 at 4 connections, ≥ 2.0 at 16, ≥ 3.0 at 64: %s", benchenv.Verdict(met))
	if i := slices.Index(r.conc, 4); i >= 0 {
		p50, mean := med(r.recv[i], sample.p50), med(r.pgb[i], sample.mean)
		fmt.Fprintf(w, "; receiver p50 ack at 4 connections ÷ pgbench's mean transaction latency ≤ %.1f: %s (%.2f ms ÷ %.2f ms = %.2f)",
			p50Target, benchenv.Verdict(p50 <= p50Target*mean), p50, mean, p50/mean)
	}
	fmt.Fprintf(w, ".\n")
}
