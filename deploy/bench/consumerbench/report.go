package main

import (
	"fmt"
	"io"

	"github.com/gatehouse/gatehouse/deploy/bench/benchenv"
)

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
	if !o.forwardOnly {
		r.fetchCases(tb, o)
	}
	tb.Rowf("7 | forward (Standard Webhooks, concurrency %d) of %d events to a local destination answering at once | %.0f events/s = **%.2f × the receiver** | ≥ 1.0 ×",
		o.apiConcurrency, o.events, r.forwardFast, r.forwardFast/r.receiverRate)
	tb.Rowf("8 | forward of %d events to a destination answering after %v | **%.0f events/s** | ≥ 2 000", o.events, o.apiLatency, r.forwardSlow)
	tb.Rowf("– | load average (1 min) at start / end | %s / %s |", r.loadStart, benchenv.LoadAvgText())
}

// fetchCases are the rows of cases 2 to 6 (the fetch through the reference API).
func (r *results) fetchCases(tb *benchenv.Table, o *options) {
	tb.Rowf("2 | consumer drain, API latency %v, %d new objects | **%.0f events/s** | ≥ 2 000", o.apiLatency, o.events, r.slowRate)
	tb.Rowf("3 | API latency %v, 10 events per object arriving together (%d events) | **%.3f API calls per event** (%.0f events/s) | ≤ 0.2", o.apiLatency, o.events, r.groupedCalls, r.groupedRate)
	tb.Rowf("4 | `api_rate_limit: %d`, %d events, the API answering 429 above 105 %% of it: most requests it saw in any one second; 429 answers | **%d** requests; %d × 429 (%.0f events/s) | ≤ %d; no storm",
		o.rateLimit, o.limitedEvents, r.limitedMax, r.limited429, r.limitedRate, o.rateLimit*105/100)
	tb.Rowf("5 | steady %.0f events/s offered (%.0f achieved) for %v through receiver → relay → consumer: 2xx → final, p50 / p99 / max | %s / **%s** / %s | p99 ≤ 250 ms",
		o.rate, r.steadyAchieved, o.steadyFor, ms(r.steadyLat.Q(.5)), ms(r.steadyLat.Q(.99)), ms(r.steadyLat.Q(1)))
	ratio := 0.0
	if p := r.steadyLat.Q(.99); p > 0 {
		ratio = float64(r.mixedLat.Q(.99)) / float64(p)
	}
	tb.Rowf("6 | %d records with no inbox row interleaved with %d genuine events (%.0f/s): genuine 2xx → final, p50 / p99 | %s / %s = **%.2f × case 5's p99** | ≤ 2 ×",
		o.foreign, o.genuine, o.mixedRate, ms(r.mixedLat.Q(.5)), ms(r.mixedLat.Q(.99)), ratio)
}
