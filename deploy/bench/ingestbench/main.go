// Command ingestbench measures gatehouse's webhook receiver against its
// physical ceiling: it starts a private PostgreSQL cluster (fsync on),
// migrates it, starts the receiver (the real `gatehouse serve` binary, or the
// same components in-process for tuning), drives signed, unique events over
// HTTP keep-alive connections at each concurrency (closed loop), and runs
// pgbench with the Writer's identical single-row statement at the same
// concurrency on the same database in the same run. Runs alternate receiver
// and pgbench in counterbalanced order (R P, P R, …) so drift hits both
// alike; the page cache is synced first; tables are truncated and checkpointed
// before every run. An open-loop run at half the maximum receiver rate
// checks ack latency (measured from each request's scheduled send time, so
// queueing is not hidden), with pgbench -R at the same rate beside it.
//
// It prints a Markdown section (the table of docs/BENCHMARKS.md) on stdout
// and progress on stderr. Usage:
//
//	go build -o bin/gatehouse ./cmd/gatehouse
//	go run ./deploy/bench/ingestbench -gatehouse bin/gatehouse
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/gatehouse/gatehouse/deploy/bench/benchenv"
)

type options struct {
	gatehouse   string        // path of the gatehouse binary; "" runs the receiver in-process
	conc        []int         // closed-loop concurrencies
	runs        int           // runs per configuration
	duration    time.Duration // length of each run
	warmup      time.Duration // untimed warm-up per side before the runs
	openRuns    int           // open-loop runs
	openConns   int           // connections available to the open-loop run
	openRate    float64       // fixed open-loop rate (0 = half the measured maximum)
	bodyBytes   int           // approximate size of each event body
	workers     int           // in-process Writer workers
	batch       int           // in-process Writer max batch
	poolSize    int           // in-process pool size
	pgDir       string        // where the private cluster lives ("" = temp dir)
	keep        bool          // keep the cluster directory
	receiverLog string        // where the receiver's delivery log goes
	cpuProfile  string        // CPU profile of this process (load generator, and the receiver when in-process)
	tune        []int         // Writer worker counts to compare in-process instead of the benchmark
	tracing     bool          // compare tracing off and on (tracecmp.go) instead of the benchmark
	baseline    string        // with tracing: a third receiver binary (the receiver before tracing)
	extraEnv    []string      // added to the receiver binary's environment
	mix         []string      // catalogue schemes of the mix section (mix.go); none: no mix section
	mixConns    int           // the mix section's closed-loop connections
	mixRuns     int           // the mix section's rounds
	// The overload mode (overload.go) instead of the benchmark.
	overload                  bool
	flood, rate, slowB, slowH int
	maxInFlight, share        int
}

func main() { benchenv.Main("ingestbench", run) }

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	if o.overload {
		return overload(ctx, o, stdout, stderr)
	}
	b, err := setup(ctx, o, stderr)
	if err != nil {
		return err
	}
	defer b.close()
	stopProfile, err := benchenv.Profile(o.cpuProfile)
	if err != nil {
		return err
	}
	defer stopProfile()
	if len(o.tune) > 0 {
		return b.tune(ctx, o.tune, stdout)
	}
	if o.tracing {
		return b.traceCompare(ctx, stdout)
	}
	res, err := b.measure(ctx)
	if err != nil {
		return err
	}
	var mix *mixResult
	if len(o.mix) > 0 && o.mixRuns > 0 {
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

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	fs := flag.NewFlagSet("ingestbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o := &options{}
	conc := fs.String("c", "16,64", "closed-loop concurrencies (comma-separated)")
	fs.StringVar(&o.gatehouse, "gatehouse", "bin/gatehouse", "gatehouse binary to benchmark; empty runs the receiver in-process")
	fs.IntVar(&o.runs, "runs", 5, "timed runs per configuration and side (0 with -open-rate: open loop only)")
	fs.DurationVar(&o.duration, "d", 10*time.Second, "duration of each run")
	fs.DurationVar(&o.warmup, "warmup", 3*time.Second, "untimed warm-up per side")
	fs.IntVar(&o.openRuns, "open-runs", 3, "open-loop runs at half the maximum rate")
	fs.Float64Var(&o.openRate, "open-rate", 0, "open-loop rate in events/s (default half the maximum closed-loop rate)")
	fs.IntVar(&o.openConns, "open-conns", 64, "connections (and pgbench clients) of the open-loop run")
	fs.IntVar(&o.bodyBytes, "body", 512, "approximate event body size in bytes")
	fs.IntVar(&o.workers, "workers", 4, "in-process only: Writer workers")
	fs.IntVar(&o.batch, "batch", 64, "in-process only: Writer max batch")
	fs.IntVar(&o.poolSize, "pool", 32, "in-process only: pgx pool size")
	fs.StringVar(&o.pgDir, "pgdir", "", "directory for the private PostgreSQL cluster (default a temp dir)")
	fs.BoolVar(&o.keep, "keep", false, "keep the cluster directory")
	fs.StringVar(&o.receiverLog, "receiver-log", os.DevNull, "file receiving the receiver's per-delivery log")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of this process (load generator, plus the receiver with -gatehouse '') to this file")
	fs.BoolVar(&o.tracing, "tracing", false, "compare the receiver with tracing off and on (100 % sampling to a local Jaeger), interleaved with pgbench, instead of the benchmark")
	fs.StringVar(&o.baseline, "baseline", "", "with -tracing: also run this gatehouse binary (e.g. built from the commit before tracing)")
	mix := fs.String("mix", strings.Join(benchenv.MixSchemes, ","), "catalogue schemes of the mix section (comma-separated; \"\" for none)")
	fs.IntVar(&o.mixConns, "mix-c", 64, "closed-loop connections of the mix section")
	fs.IntVar(&o.mixRuns, "mix-runs", 2, "rounds of the mix section (each scheme once a round)")
	tune := fs.String("tune", "", "compare these Writer worker counts (comma-separated) with in-process receivers, interleaved with pgbench, instead of the benchmark")
	fs.BoolVar(&o.overload, "overload", false, "instead of the benchmark, the \"Under overload\" section: provider B alone and beside provider A's flood and slow clients (-runs pairs, default 3)")
	fs.IntVar(&o.flood, "flood", 500, "with -overload: provider A's closed-loop connections")
	fs.IntVar(&o.rate, "rate", 200, "with -overload: provider B's events per second (open loop)")
	fs.IntVar(&o.slowB, "slow-body", 200, "with -overload: connections sending a body at 1 byte/s")
	fs.IntVar(&o.slowH, "slow-header", 200, "with -overload: connections sending their headers at 1 byte/s")
	fs.IntVar(&o.maxInFlight, "max-in-flight", 0, "with -overload: ingest.max_in_flight (0: gatehouse's default)")
	fs.IntVar(&o.share, "share", 0, "with -overload: each provider's max_in_flight (0: gatehouse's default)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	runsSet := false
	fs.Visit(func(f *flag.Flag) { runsSet = runsSet || f.Name == "runs" })
	if o.overload && !runsSet {
		o.runs = 3
	}
	var err error
	if o.conc, err = benchenv.IntList("-c", *conc); err != nil {
		return nil, err
	}
	o.mix = benchenv.List(*mix)
	if *tune != "" {
		if o.tune, err = benchenv.IntList("-tune", *tune); err != nil {
			return nil, err
		}
	}
	if o.runs < 0 || o.duration <= 0 || (o.runs == 0 && o.openRate <= 0) {
		return nil, fmt.Errorf("-d must be positive, and -runs too unless -open-rate is given")
	}
	return o, nil
}
