// Command ingestbench measures the webhook receiver (the `gatehouse serve`
// binary) against pgbench running the Writer's statement on the same
// database: closed loops, an open loop at half the maximum rate and the
// catalogue's schemes (mix.go); -tracing compares tracing off and on
// (tracecmp.go), -overload is the "Under overload" section (overload.go,
// with the unverified-bytes attack of budget.go):
//
//	go build -o bin/gatehouse ./cmd/gatehouse
//	go run ./deploy/bench/ingestbench -gatehouse bin/gatehouse
package main

import (
	"context"
	"fmt"
	"io"
	"net"
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
	b, err := setup(ctx, st, o)
	if err != nil {
		return err
	}
	defer b.recv.Stop()
	if o.tracing {
		return b.traceCompare(ctx, stdout)
	}
	res, err := b.measure(ctx)
	if err != nil {
		return err
	}
	var mix *mixResult
	if o.mixRuns > 0 {
		if mix, err = b.mix(ctx); err != nil {
			return err
		}
	}
	res.print(stdout)
	if mix != nil {
		mix.print(stdout, b)
	}
	return nil
}
