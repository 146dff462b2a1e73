package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/gatehouse/gatehouse/deploy/bench/benchenv"
)

// The cold rows: the state a deployment starts in. For the reference and
// the GitHub scheme each, a database just created and migrated (no
// analyze, no warm-up, no settle), `gatehouse serve` started on it and
// the first -cold-d of closed-loop load from its first request, beside the
// warm row of the same scheme and connections (the analyzed database
// after the warm-up).

// Cold targets: events/s cold ÷ warm, and PostgreSQL CPU per event.
const (
	coldTputTarget = 0.9
	coldCPUTarget  = 1.1
)

// coldRow is one scheme's cold run.
type coldRow struct {
	scheme  string
	s       sample   // the whole run
	win     []window // the run in -cold-window slices
	startup time.Duration
	warm    []sample // the warm rows it is divided by
}

func (b *bench) cold(ctx context.Context) ([]coldRow, error) {
	if b.o.coldDur <= 0 {
		return nil, nil
	}
	var rows []coldRow
	for _, scheme := range []string{"reference", "github"} {
		r, err := b.coldRun(ctx, scheme)
		if err != nil {
			return nil, fmt.Errorf("cold %s: %w", scheme, err)
		}
		rows = append(rows, r)
	}
	return rows, nil
}

// coldRun measures one scheme's cold start on a database of its own.
func (b *bench) coldRun(ctx context.Context, scheme string) (coldRow, error) {
	r := coldRow{scheme: scheme}
	db, err := b.newFreshDB(ctx, "cold-"+scheme, "")
	if err != nil {
		return r, err
	}
	defer db.close(b)
	p, err := db.receiver(b)
	if err != nil {
		return r, err
	}
	// Signed before the receiver starts: their CPU is not the run's.
	src := benchenv.NewDeliveries(provider, p.Public, b.secret, b.o.bodyBytes)
	if scheme == "github" {
		if src, err = benchenv.NewSchemeDeliveries("github", p.Public, b.mixSecret, b.o.bodyBytes); err != nil {
			return r, err
		}
	}
	next := presign(src, max(b.rate, 20000), b.o.coldDur) // plenty: the warm rows are measured after
	b.Logf("cold %s: gatehouse serve on a database just created and migrated, %s at %d connections from its first request", scheme, b.o.coldDur, b.o.coldConns)
	t0 := time.Now()
	if err := p.Start(ctx); err != nil {
		p.Stop()
		return r, fmt.Errorf("gatehouse serve: %w", err)
	}
	defer p.Stop()
	r.startup = time.Since(t0)
	start := time.Now()
	bs := bounds(start, b.o.coldWindow, b.o.coldDur)
	wait := b.cpuAt(ctx, bs)
	pg0, recv0 := b.PostgresCPU(), procCPU(p)
	l := benchenv.Load{Addr: p.Public, Conns: b.o.coldConns, Next: next}.Closed(ctx, b.o.coldDur)
	pg1, recv1 := b.PostgresCPU(), procCPU(p)
	cpu := wait()
	if r.s, err = fromLoad(l, ctx.Err()); err != nil {
		return r, err
	}
	if r.s.errs > 0 {
		return r, fmt.Errorf("%d failed requests (last: %s)", r.s.errs, r.s.errMsg)
	}
	r.s.pgCPU, r.s.recvCPU = pg1-pg0, recv1-recv0
	if r.win, err = windows(l, bs, cpu); err != nil {
		return r, err
	}
	inbox, outbox, err := db.events(ctx)
	if err != nil {
		return r, err
	}
	if inbox != int64(r.s.n) || outbox != int64(r.s.n) {
		return r, fmt.Errorf("%d acknowledged events but %d inbox and %d outbox rows", r.s.n, inbox, outbox)
	}
	b.Logf("cold %s: %.0f/s (serve ready in %s), PostgreSQL %.0f µs per event", scheme, r.s.tput(), r.startup.Round(time.Millisecond), r.s.pgPer())
	return r, nil
}

// procCPU is p's CPU time (0 when unreadable).
func procCPU(p *benchenv.Proc) time.Duration {
	t, _, _ := benchenv.ProcCPU(p.Pid(), false)
	return t
}

// printCold writes the cold rows beside their warm rows: the reference
// scheme's closed loop and the GitHub scheme's concurrency row at -cold-c.
func (res *results) printCold(w io.Writer) {
	if len(res.cold) == 0 {
		return
	}
	b := res.b
	for i := range res.cold {
		r := &res.cold[i]
		if r.scheme == "github" {
			r.warm, _ = res.single.warm(b.o.coldConns)
			continue
		}
		for k, c := range b.o.conc {
			if c == b.o.coldConns {
				r.warm = res.closed[k].recv
			}
		}
	}
	fmt.Fprintf(w, "\n### Cold start\n\n")
	fmt.Fprintf(w, "The state a deployment starts in: for each scheme a database just created in the same cluster and migrated by `gatehouse migrate` (a checkpoint and a sync before, then no analyze, no warm-up, no settle), "+
		"`gatehouse serve` started on it (its storage maintenance's first pass included) and the first %s of closed-loop load at %d connections from the first request, one run each, requests signed before the start. "+
		"Warm: the same scheme and connections on the benchmark's database after its warm-up and ANALYZE (the reference scheme's closed-loop row above, the GitHub scheme's concurrency row; medians of %d runs of %s).\n\n",
		b.o.coldDur, b.o.coldConns, b.o.runs, b.o.duration)
	tb := benchenv.NewTable(w, "scheme", "serve ready after>", "events/s cold>", "warm>", "cold ÷ warm>", "PostgreSQL CPU per event cold>", "warm>", "cold ÷ warm>", "p99 ack cold>", "warm>")
	tputMet, cpuMet := true, true
	for _, r := range res.cold {
		if len(r.warm) == 0 {
			tb.Rowf("%s | %s | %s | no warm row at %d connections | | %.0f µs | | | %.2f ms |", r.scheme, r.startup.Round(time.Millisecond), benchenv.Thousands(r.s.tput()), b.o.coldConns, r.s.pgPer(), r.s.p99())
			tputMet, cpuMet = false, false
			continue
		}
		wt, wc := med(r.warm, sample.tput), med(r.warm, sample.pgPer)
		tr, cr := r.s.tput()/wt, r.s.pgPer()/wc
		tputMet, cpuMet = tputMet && tr >= coldTputTarget, cpuMet && cr <= coldCPUTarget
		tb.Rowf("%s | %s | %s | %s | **%.2f** | %.0f µs | %.0f µs | **%.2f** | %.2f ms | %.2f ms", r.scheme, r.startup.Round(time.Millisecond),
			benchenv.Thousands(r.s.tput()), benchenv.Thousands(wt), tr, r.s.pgPer(), wc, cr, r.s.p99(), med(r.warm, sample.p99))
	}
	fmt.Fprintf(w, "\nTargets: cold ÷ warm ≥ %.1f: %s; PostgreSQL CPU per event cold ≤ %.1f × warm: %s.\n\n", coldTputTarget, benchenv.Verdict(tputMet), coldCPUTarget, benchenv.Verdict(cpuMet))
	fmt.Fprintf(w, "The same runs in %s windows from the first request (events/s; PostgreSQL CPU per event), so a slow start shows:\n\n", b.o.coldWindow)
	cols := []string{"scheme"}
	for _, win := range res.cold[0].win {
		cols = append(cols, fmt.Sprintf("%g–%g s>", win.from.Sub(res.cold[0].win[0].from).Seconds(), win.to.Sub(res.cold[0].win[0].from).Seconds()))
	}
	tb = benchenv.NewTable(w, cols...)
	for _, r := range res.cold {
		cells := []string{r.scheme}
		for _, win := range r.win {
			cells = append(cells, fmt.Sprintf("%s (%.0f µs)", benchenv.Thousands(win.tput()), win.pgPer()))
		}
		tb.Rowf("%s", strings.Join(cells, " | "))
	}
}
