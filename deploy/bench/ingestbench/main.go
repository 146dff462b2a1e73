// Command ingestbench measures the webhook receiver (the `gatehouse serve`
// binary) against pgbench running the Writer's statement on the same
// database: closed loops, an open loop at half the maximum rate, the
// GitHub scheme against pgbench's single-row INSERT (single.go), the
// first seconds on a fresh database (cold.go), a partition change under
// load (roll.go) and the catalogue's schemes (mix.go); -tracing compares
// tracing off and on (tracecmp.go), -overload is the "Under overload"
// section (overload.go, with the unverified-bytes attack of budget.go):
//
//	go build -o bin/gatehouse ./cmd/gatehouse
//	go run ./deploy/bench/ingestbench -gatehouse bin/gatehouse
package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"slices"
	"time"

	"github.com/gatehouse/gatehouse/deploy/bench/benchenv"
)

type options struct {
	benchenv.Options
	gatehouse string        `flag:"gatehouse" default:"bin/gatehouse" help:"gatehouse binary to benchmark"`
	conc      []int         `flag:"c" default:"16,64" help:"closed-loop concurrencies (comma-separated)"`
	runs      int           `flag:"runs" default:"5" help:"timed runs per configuration and side (with -overload: pairs, 40-overload.sh passes 3)"`
	duration  time.Duration `flag:"d" default:"10s" help:"duration of each run"`
	openRuns  int           `flag:"open-runs" default:"3" help:"open-loop runs at half the maximum rate"`
	openConns int           `flag:"open-conns" default:"64" help:"connections (and pgbench clients) of the open-loop run"`
	bodyBytes int           `flag:"body" default:"512" help:"approximate event body size in bytes"`
	tracing   bool          `flag:"tracing" help:"compare the receiver with tracing off and on (100 % sampling to a local Jaeger), interleaved with pgbench, instead of the benchmark"`
	mixConns  int           `flag:"mix-c" default:"64" help:"closed-loop connections of the mix section"`
	mixRuns   int           `flag:"mix-runs" default:"2" help:"rounds of the mix section (each scheme once a round; 0 for none)"`
	overload  bool          `flag:"overload" help:"instead of the benchmark, the \"Under overload\" section: provider B alone and beside provider A's flood and slow clients"`
	flood     int           `flag:"flood" default:"500" help:"with -overload: provider A's closed-loop connections"`
	rate      int           `flag:"rate" default:"200" help:"with -overload: provider B's events per second (open loop)"`
	slowB     int           `flag:"slow-body" default:"200" help:"with -overload: connections sending a body at 1 byte/s"`
	slowH     int           `flag:"slow-header" default:"200" help:"with -overload: connections sending their headers at 1 byte/s"`
	// The unverified-bytes attack of the overload mode (budget.go).
	budgetConns []int  `flag:"budget-conns" default:"64,400" help:"with -overload: attacking connections holding unverified bytes of A (comma-separated sizes; empty for none)"`
	budgetRate  int    `flag:"budget-rate" default:"100" help:"with -overload: provider B's events per second beside that attack"`
	attackFrom  string `flag:"attack-from" default:"127.0.0.2" help:"with -overload: the loopback address the attacking connections come from (B's come from 127.0.0.1)"`
	budgetOnly  bool   `flag:"budget-only" help:"with -overload: only the unverified-bytes attack's table"`
	// The states a deployment lives in (cold.go, roll.go, single.go).
	singleConc []int         `flag:"single-c" default:"4,16,64" help:"concurrencies of the receiver (GitHub scheme) against pgbench's single-row INSERT (empty: none)"`
	coldConns  int           `flag:"cold-c" default:"16" help:"connections of the cold rows; must be in -c and -single-c (the warm rows they are divided by)"`
	coldDur    time.Duration `flag:"cold-d" default:"15s" help:"how long each cold row runs, from gatehouse serve's start on a fresh database (0: no cold rows)"`
	coldWindow time.Duration `flag:"cold-window" default:"5s" help:"windows the cold rows are split into"`
	rollWidth  time.Duration `flag:"roll-width" default:"2m" help:"inbox, outbox and dedupe-key partition width of the partition-roll row's database (0: no roll row)"`
	rollSpan   time.Duration `flag:"roll-span" default:"1m" help:"span measured before and after the partition change (at most -roll-width)"`
	rollWindow time.Duration `flag:"roll-window" default:"10s" help:"windows of the partition-roll row's spans"`
	rollLead   time.Duration `flag:"roll-lead" default:"1m" help:"least load of the partition-roll row before its span before the change (the fresh database's start)"`
	rollConns  int           `flag:"roll-c" default:"16" help:"closed-loop connections of the partition-roll row"`
	rollWait   time.Duration `flag:"roll-wait" default:"4m" help:"longest lead-in beyond -roll-lead until a moment when the inbox, outbox and key partitions all change; none within: the row fails"`
}

// Validate checks the flags' values (benchenv.Parse).
func (o *options) Validate() error {
	if o.runs < 1 || o.duration <= 0 || len(o.conc) == 0 {
		return fmt.Errorf("-c, -d and -runs must be given")
	}
	if o.budgetOnly && len(o.budgetConns) == 0 {
		return fmt.Errorf("-budget-only needs -budget-conns")
	}
	if o.budgetRate < 1 || net.ParseIP(o.attackFrom) == nil {
		return fmt.Errorf("-budget-rate must be positive and -attack-from an IP address")
	}
	if o.tracing || o.overload { // modes without the rows below
		return nil
	}
	if o.coldDur > 0 && (!slices.Contains(o.conc, o.coldConns) || !slices.Contains(o.singleConc, o.coldConns)) {
		return fmt.Errorf("-cold-c %d must be in -c and -single-c: the cold rows are divided by the warm rows at the same connections (or -cold-d 0)", o.coldConns)
	}
	if o.coldDur > 0 && (o.coldWindow <= 0 || o.coldWindow > o.coldDur) {
		return fmt.Errorf("-cold-window must be positive and at most -cold-d")
	}
	if o.rollWidth > 0 && (o.rollWindow <= 0 || o.rollSpan < o.rollWindow || o.rollSpan%o.rollWindow != 0 || o.rollSpan > o.rollWidth || o.rollConns < 1 || o.rollLead < 0) {
		return fmt.Errorf("-roll-span must be a multiple of -roll-window and at most -roll-width, -roll-c at least 1, -roll-lead not negative (or -roll-width 0)")
	}
	return nil
}

const help = "ingestbench measures the webhook receiver against pgbench running its identical statement (docs/BENCHMARKS.md).\n\nExample: go run ./deploy/bench/ingestbench -gatehouse bin/gatehouse -runs 3 -d 10s\n\nFlags:\n"

func main() {
	o := &options{Options: benchenv.Options{Name: "ingestbench"}}
	benchenv.Run(help, o, func(ctx context.Context, st *benchenv.Stack, stdout io.Writer) error { return run(ctx, st, o, stdout) })
}

func run(ctx context.Context, st *benchenv.Stack, o *options, stdout io.Writer) error {
	if o.overload {
		return overload(ctx, st, o, stdout)
	}
	began := time.Now()
	b, err := setup(ctx, st, o)
	if err != nil {
		return err
	}
	defer b.recv.Stop()
	if o.tracing {
		return b.traceCompare(ctx, stdout)
	}
	// The cold rows first, on a quiet cluster: the other rows leave its
	// autovacuum busy with the benchmark database's tables.
	cold, err := b.cold(ctx)
	if err != nil {
		return err
	}
	res, err := b.measure(ctx)
	if err != nil {
		return err
	}
	res.cold = cold
	if res.single, err = b.single(ctx); err != nil {
		return err
	}
	var mix *mixResult
	if o.mixRuns > 0 {
		if mix, err = b.mix(ctx); err != nil {
			return err
		}
	}
	// A roll that cannot be measured (no partition change within reach)
	// fails the section after the other rows are printed.
	var rollErr error
	res.roll, rollErr = b.roll(ctx)
	res.print(stdout)
	res.single.print(stdout, b)
	res.printCold(stdout)
	res.roll.print(stdout, b, rollErr)
	if mix != nil {
		mix.print(stdout, b)
	}
	fmt.Fprintf(stdout, "\nSection run time: %.1f min (every row above, with its preparation).\n", time.Since(began).Minutes())
	return rollErr
}
