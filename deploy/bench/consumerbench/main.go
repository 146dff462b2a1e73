// Command consumerbench measures gatehouse's consumers (section "Consumers"
// of `make bench`): the eight cases of docs/BENCHMARKS.md (drain rates,
// API calls, a rate-limited provider, end-to-end latency with and without
// foreign records, forwards) beside the receiver's own max rate and a
// pgbench ceiling of the consumer's batched statements. PostgreSQL (fsync
// on), one Kafka broker, the receiver, relay and consumer run in this
// process, with a local reference-provider API that is also the forward
// destination.
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
	benchenv.Run(help, o, func(ctx context.Context, st *benchenv.Stack, stdout io.Writer) error {
		b, err := setup(st, o)
		if err != nil {
			return err
		}
		defer b.api.stop()
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
	})
}

type options struct {
	benchenv.Options
	receiverFor    time.Duration `flag:"receiver-for" default:"10s" help:"case 1: how long the receiver's closed loop runs (its events are the backlog drained)"`
	partitions     int           `flag:"partitions" default:"6" help:"partitions of each topic"`
	maxPoll        int           `flag:"max-poll" default:"1000" help:"consumers.max_poll_records (the batch size)"`
	apiConcurrency int           `flag:"api-concurrency" default:"256" help:"providers.<name>.api_concurrency"`
	events         int           `flag:"n" default:"20000" help:"events of cases 2, 3, 7 and 8 (pre-loaded backlogs)"`
	apiLatency     time.Duration `flag:"api-latency" default:"50ms" help:"cases 2, 3 and 8: the provider API's (and the destination's) latency"`
	rateLimit      int           `flag:"rate-limit" default:"100" help:"case 4: api_rate_limit, and the limit above which the fake API answers 429"`
	limitedEvents  int           `flag:"limited-n" default:"1500" help:"case 4: events"`
	rate           float64       `flag:"rate" default:"2000" help:"case 5: events/s offered to the receiver"`
	steadyFor      time.Duration `flag:"d" default:"15s" help:"case 5: duration"`
	foreign        int           `flag:"foreign" default:"10000" help:"case 6: records with no inbox row"`
	genuine        int           `flag:"genuine" default:"1000" help:"case 6: genuine events"`
	mixedRate      float64       `flag:"mixed-rate" default:"200" help:"case 6: genuine events/s"`
}

func ms(d time.Duration) string { return benchenv.Ms(d, 0) }

func (r *results) print(w io.Writer, b *bench) {
	o := b.o
	fmt.Fprintf(w, "## Consumers\n\n")
	fmt.Fprintf(w, "`go run ./deploy/bench/consumerbench` (section 30 of `make bench`), one run: a private PostgreSQL %s (fsync on), "+
		"one Kafka 4 broker, the real receiver, relay (logical replication) and consumer in one process, and a local "+
		"reference-provider API. Topics of %d partitions, consumers.max_poll_records %d (the batch), api_concurrency %d.\n\n",
		b.PGVersion, o.partitions, o.maxPoll, o.apiConcurrency)
	tb := benchenv.NewTable(w, "case", "measure", "value", "target")
	tb.Rowf("– | receiver max rate, closed loop, 16 connections, %v (%d events), in-process, nothing else running | %.0f events/s |", o.receiverFor, r.receiverEvents, r.receiverRate)
	tb.Rowf("– | PostgreSQL ceiling: pgbench running the consumer's batched statements (`consumers_claim_many` + one transaction of `consumers_apply`, %d events a batch, 1 client) | %.0f events/s |", o.maxPoll, r.ceilingSQL)
	tb.Rowf("1 | consumer drain of the receiver's backlog, API latency 0, new objects | %.0f events/s = **%.2f × the receiver** (%.0f%% of the PostgreSQL ceiling) | ≥ 1.0 ×",
		r.fastRate, r.fastRate/r.receiverRate, 100*r.fastRate/r.ceilingSQL)
	tb.Rowf("2 | consumer drain, API latency %v, %d new objects | **%.0f events/s** | ≥ 2 000", o.apiLatency, o.events, r.slowRate)
	tb.Rowf("3 | API latency %v, 10 events per object arriving together (%d events) | **%.3f API calls per event** (%.0f events/s) | ≤ 0.2", o.apiLatency, o.events, r.groupedCalls, r.groupedRate)
	tb.Rowf("4 | `api_rate_limit: %d`, %d events, the API answering 429 above 105 %% of it: most requests it saw in any one second; 429 answers | **%d** requests; %d × 429 (%.0f events/s) | ≤ %d; no storm",
		o.rateLimit, o.limitedEvents, r.limitedMax, r.limited429, r.limitedRate, o.rateLimit*105/100)
	tb.Rowf("5 | steady %.0f events/s offered (%.0f achieved) for %v through receiver → relay → consumer: 2xx → final, p50 / p99 / max | %s / **%s** / %s | p99 ≤ 250 ms",
		o.rate, r.steadyAchieved, o.steadyFor, ms(r.steadyLat.Q(.5)), ms(r.steadyLat.Q(.99)), ms(r.steadyLat.Q(1)))
	tb.Rowf("6 | %d records with no inbox row interleaved with %d genuine events (%.0f/s): genuine 2xx → final, p50 / p99 | %s / %s = **%.2f × case 5's p99** | ≤ 2 ×",
		o.foreign, o.genuine, o.mixedRate, ms(r.mixedLat.Q(.5)), ms(r.mixedLat.Q(.99)), float64(r.mixedLat.Q(.99))/float64(max(1, r.steadyLat.Q(.99))))
	tb.Rowf("7 | forward (Standard Webhooks, concurrency %d) of %d events to a local destination answering at once | %.0f events/s = **%.2f × the receiver** | ≥ 1.0 ×",
		o.apiConcurrency, o.events, r.forwardFast, r.forwardFast/r.receiverRate)
	tb.Rowf("8 | forward of %d events to a destination answering after %v | **%.0f events/s** | ≥ 2 000", o.events, o.apiLatency, r.forwardSlow)
	tb.Rowf("– | load average (1 min) at start / end | %s / %s |", r.loadStart, benchenv.LoadAvgText())
}
