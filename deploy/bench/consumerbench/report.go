package main

import (
	"fmt"
	"io"
	"os"
	"strings"
)

// loadAvg is the 1-minute load average: the machine is shared.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Fields(string(b))[0]
}

func (r *results) print(w io.Writer, b *bench) {
	o := r.o
	fmt.Fprintf(w, "## Consumers\n\n")
	fmt.Fprintf(w, "`go run ./deploy/bench/consumerbench` (section 30 of `make bench`): a private PostgreSQL %s (fsync on), "+
		"one Kafka 4 broker, the real receiver, relay (logical replication) and consumer in one process, and a local "+
		"reference-provider API (added latency %v) on this machine. Topic of %d partitions, consumers.concurrency %d, consumers.key_concurrency %d. "+
		"Every event is a new payment: one API fetch and one transaction (event-id dedupe row, version-guarded upsert "+
		"of the projection, effect log row, inbox state) per event.\n\n",
		b.pgVer, o.apiLatency, o.partitions, o.concurrency, o.keyConcurrency)
	fmt.Fprintf(w, "| measure | value |\n|---|---|\n")
	fmt.Fprintf(w, "| Kafka read ceiling: plain franz-go consumer (no group), no processing, %d records, from client start | %.0f records/s |\n", o.events, r.ceiling)
	fmt.Fprintf(w, "| PostgreSQL ceiling: pgbench running the consumer's two statements per event (`consumers_claim`, `consumers_apply`), %d clients | %.0f events/s |\n",
		o.partitions*o.keyConcurrency, r.ceilingSQL)
	fmt.Fprintf(w, "| gatehouse consumer with the projection write, %d pre-loaded events (first to last processed) | %.0f events/s (%.0f%% of the PostgreSQL ceiling) |\n",
		o.events, r.consumer, 100*r.consumer/r.ceilingSQL)
	fmt.Fprintf(w, "| the same, wall time including the group join | %.1f s |\n", r.consumerAll.Seconds())
	fmt.Fprintf(w, "| steady rate offered / achieved, %v | %.0f / %.0f events/s, %d acknowledged |\n", o.duration, o.rate, r.achieved, r.sent)
	fmt.Fprintf(w, "| end-to-end latency, receiver 2xx → `succeeded` (inbox.processed_at): p50 / p90 / p99 / max | %s / %s / %s / %s |\n",
		ms(r.pct(.5)), ms(r.pct(.9)), ms(r.pct(.99)), ms(r.pct(1)))
	fmt.Fprintf(w, "| … of which receiver 2xx → Kafka record (relay): p50 / p99 | %s / %s |\n", ms(pct(r.relayLat, .5)), ms(pct(r.relayLat, .99)))
	fmt.Fprintf(w, "| … of which Kafka record → `succeeded` (consumer: fetch, API call, transaction): p50 / p99 | %s / %s |\n", ms(pct(r.consLat, .5)), ms(pct(r.consLat, .99)))
	fmt.Fprintf(w, "| provider API fetches in the whole run | %d |\n", r.apiCalls)
	fmt.Fprintf(w, "| load average (1 min) at start / end | %s / %s |\n", r.loadStart, loadAvg())
}
