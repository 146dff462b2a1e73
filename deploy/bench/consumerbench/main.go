// Command consumerbench measures gatehouse's consumers (section "Consumers"
// of `make bench`) in one run on one machine, beside the receiver's own
// max rate and a pgbench ceiling of the consumer's batched statements: the
// drain rate of a backlog with an instant API and with a 50 ms API, API
// calls per event when ten events per object arrive together, the
// requests per second a rate-limited provider sees, the end-to-end latency
// at a steady rate through the real receiver, relay and consumer, and the
// same latency with foreign records (no inbox row) in the stream, and the
// forward rate to a team's service answering at once and after 50 ms. All
// components are real and private to the run: PostgreSQL (fsync on), one
// Kafka broker, the receiver, relay and consumer in this process, a local
// reference-provider API and a local forward destination.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/gatehouse/gatehouse/deploy/bench/benchenv"
)

type options struct {
	events         int
	receiverFor    time.Duration
	apiLatency     time.Duration
	apiConcurrency int
	maxPoll        int
	rateLimit      int
	limitedEvents  int
	rate           float64
	steadyFor      time.Duration
	foreign        int
	genuine        int
	mixedRate      float64
	partitions     int
	keep           bool
	forwardOnly    bool
}

func main() { benchenv.Main("consumerbench", run) }

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("consumerbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: consumerbench [flags]\n\nMeasures the consumer stage beside the receiver (docs/BENCHMARKS.md).\n"+
			"Example: go run ./deploy/bench/consumerbench -n 5000 -d 5s\n\nFlags:\n")
		fs.PrintDefaults()
	}
	o := &options{}
	fs.IntVar(&o.events, "n", 20000, "events of cases 2 and 3 (pre-loaded backlogs)")
	fs.DurationVar(&o.receiverFor, "receiver-for", 10*time.Second, "case 1: how long the receiver's closed loop runs (its events are the backlog drained)")
	fs.DurationVar(&o.apiLatency, "api-latency", 50*time.Millisecond, "cases 2 and 3: the provider API's latency")
	fs.IntVar(&o.apiConcurrency, "api-concurrency", 256, "providers.<name>.api_concurrency")
	fs.IntVar(&o.maxPoll, "max-poll", 1000, "consumers.max_poll_records (the batch size)")
	fs.IntVar(&o.rateLimit, "rate-limit", 100, "case 4: api_rate_limit, and the limit above which the fake API answers 429")
	fs.IntVar(&o.limitedEvents, "limited-n", 1500, "case 4: events")
	fs.Float64Var(&o.rate, "rate", 2000, "case 5: events/s offered to the receiver")
	fs.DurationVar(&o.steadyFor, "d", 15*time.Second, "case 5: duration")
	fs.IntVar(&o.foreign, "foreign", 10000, "case 6: records with no inbox row")
	fs.IntVar(&o.genuine, "genuine", 1000, "case 6: genuine events")
	fs.Float64Var(&o.mixedRate, "mixed-rate", 200, "case 6: genuine events/s")
	fs.IntVar(&o.partitions, "partitions", 6, "partitions of each topic")
	fs.BoolVar(&o.keep, "keep", false, "keep the PostgreSQL and Kafka directories")
	fs.BoolVar(&o.forwardOnly, "forward-only", false, "run case 1 (the receiver's rate and its drain) and the forward cases 7 and 8 only")
	for _, a := range args {
		if a == "-h" || a == "-help" || a == "--help" {
			fs.SetOutput(stdout) // help is asked for: stdout, exit 0
			fs.Usage()
			return nil
		}
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if o.events < 10 || o.rate <= 0 || o.steadyFor <= 0 || o.partitions < 1 || o.maxPoll < 1 || o.rateLimit < 1 || o.genuine < 1 || o.mixedRate <= 0 {
		return fmt.Errorf("-n (≥ 10), -rate, -d, -partitions, -max-poll, -rate-limit, -genuine and -mixed-rate must be positive")
	}
	b, err := setup(ctx, o, stderr)
	if err != nil {
		return err
	}
	defer b.close()
	res := &results{loadStart: benchenv.LoadAvgText()}
	if err := b.runCases(ctx, res); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "consumerbench: PostgreSQL ceiling (pgbench, the consumer's batched statements)\n")
	if res.ceilingSQL, err = b.ceilingSQL(ctx); err != nil {
		return err
	}
	res.print(stdout, b)
	return nil
}
