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
	"fmt"
	"io"
	"time"

	"github.com/gatehouse/gatehouse/deploy/bench/benchenv"
)

const help = "Usage: consumerbench [flags]\n\nMeasures the consumer stage beside the receiver (docs/BENCHMARKS.md).\n" +
	"Example: go run ./deploy/bench/consumerbench -n 5000 -d 5s\n\nFlags:\n"

func main() {
	o := &options{Options: benchenv.Options{Name: "consumerbench", Kafka: true}}
	benchenv.Run(help, o, func(ctx context.Context, st *benchenv.Stack, stdout io.Writer) error { return run(ctx, st, o, stdout) })
}

type options struct {
	benchenv.Options
	forwardOnly    bool          `flag:"forward-only" help:"run case 1 (the receiver's rate and its drain) and the forward cases 7 and 8 only"`
	receiverFor    time.Duration `flag:"receiver-for" default:"10s" help:"case 1: how long the receiver's closed loop runs (its events are the backlog drained)"`
	partitions     int           `flag:"partitions" default:"6" help:"partitions of each topic"`
	maxPoll        int           `flag:"max-poll" default:"1000" help:"consumers.max_poll_records (the batch size)"`
	apiConcurrency int           `flag:"api-concurrency" default:"256" help:"providers.<name>.api_concurrency"`
	events         int           `flag:"n" default:"20000" help:"events of cases 2 and 3 (pre-loaded backlogs)"`
	apiLatency     time.Duration `flag:"api-latency" default:"50ms" help:"cases 2 and 3: the provider API's latency"`
	rateLimit      int           `flag:"rate-limit" default:"100" help:"case 4: api_rate_limit, and the limit above which the fake API answers 429"`
	limitedEvents  int           `flag:"limited-n" default:"1500" help:"case 4: events"`
	rate           float64       `flag:"rate" default:"2000" help:"case 5: events/s offered to the receiver"`
	steadyFor      time.Duration `flag:"d" default:"15s" help:"case 5: duration"`
	foreign        int           `flag:"foreign" default:"10000" help:"case 6: records with no inbox row"`
	genuine        int           `flag:"genuine" default:"1000" help:"case 6: genuine events"`
	mixedRate      float64       `flag:"mixed-rate" default:"200" help:"case 6: genuine events/s"`
}

// Validate checks the flags' values (benchenv.Parse).
func (o *options) Validate() error {
	if o.events < 10 || o.rate <= 0 || o.steadyFor <= 0 || o.partitions < 1 || o.maxPoll < 1 || o.rateLimit < 1 || o.genuine < 1 || o.mixedRate <= 0 {
		return fmt.Errorf("-n (≥ 10), -rate, -d, -partitions, -max-poll, -rate-limit, -genuine and -mixed-rate must be positive")
	}
	return nil
}

func run(ctx context.Context, st *benchenv.Stack, o *options, stdout io.Writer) error {
	b, err := setup(st, o)
	if err != nil {
		return err
	}
	defer b.close()
	res := &results{loadStart: benchenv.LoadAvgText()}
	if err := b.runCases(ctx, res); err != nil {
		return err
	}
	st.Logf("PostgreSQL ceiling (pgbench, the consumer's batched statements)")
	if res.ceilingSQL, err = b.ceilingSQL(ctx); err != nil {
		return err
	}
	res.print(stdout, b)
	return nil
}
