// Command consumerbench measures the consumers: the twelve cases of
// docs/BENCHMARKS.md beside the receiver's max rate and pgbench running the
// consumer's statements, with `gatehouse serve`, `relay` and `consume`.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
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
		res := &results{}
		if !o.transformOnly {
			if err := b.runCases(ctx, res); err != nil {
				return err
			}
		}
		st.Logf("case 9: a forward transform's cost per event")
		if err := transformCost(ctx, o, res); err != nil {
			return err
		}
		st.Logf("case 10: hostile transforms in the sandbox")
		if err := hostileCost(ctx, res); err != nil {
			return err
		}
		if o.transformOnly {
			fmt.Fprintf(stdout, "%s\n%s\n", res.rows[len(res.rows)-2], res.rows[len(res.rows)-1])
			return nil
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
	events         int           `flag:"n" default:"20000" help:"events of cases 2, 3, 7, 8, 11 and 12 (pre-loaded backlogs)"`
	apiLatency     time.Duration `flag:"api-latency" default:"50ms" help:"cases 2, 3 and 8: the provider API's (and the destination's) latency"`
	rateLimit      int           `flag:"rate-limit" default:"100" help:"case 4: api_rate_limit, and the limit above which the fake API answers 429"`
	limitedEvents  int           `flag:"limited-n" default:"1500" help:"case 4: events"`
	rate           float64       `flag:"rate" default:"2000" help:"case 5: events/s offered to the receiver"`
	steadyFor      time.Duration `flag:"d" default:"15s" help:"case 5: duration"`
	gatehouse      string        `flag:"gatehouse" default:"bin/gatehouse" help:"gatehouse binary (serve, relay and consume run as its processes)"`
	foreign        int           `flag:"foreign" default:"10000" help:"case 6: records with no inbox row"`
	genuine        int           `flag:"genuine" default:"1000" help:"case 6: genuine events"`
	mixedRate      float64       `flag:"mixed-rate" default:"200" help:"case 6: genuine events/s"`
	transformN     int           `flag:"transform-n" default:"2000" help:"case 9: deliveries through a transform"`
	transformOnly  bool          `flag:"transform-only" default:"false" help:"run cases 9 and 10 alone (the transform's cost, hostile transforms)"`
}

func (r *results) print(w io.Writer, b *bench) {
	o := b.o
	fmt.Fprintf(w, "## Consumers\n\n")
	fmt.Fprintf(w, "`go run ./deploy/bench/consumerbench` (section 30 of `make bench`), one run: a private PostgreSQL %s (fsync on), "+
		"one Kafka 4 broker, `gatehouse serve`, `relay` (logical replication) and `consume` as separate processes, and a local "+
		"reference-provider API. Topics of %d partitions, consumers.max_poll_records %d (the batch), api_concurrency %d.\n\n",
		b.PGVersion, o.partitions, o.maxPoll, o.apiConcurrency)
	tb := benchenv.NewTable(w, "case", "measure", "value", "target")
	tb.Rowf("– | receiver max rate, closed loop, 16 connections, %v (%d events), on analyzed tables, nothing else running | %.0f events/s |", o.receiverFor, r.receiverEvents, r.receiverRate)
	tb.Rowf("– | PostgreSQL ceiling: pgbench running the consumer's batched statements (`consumers_claim_many` + one transaction of `consumers_apply`, %d events a batch, 1 client) | %.0f events/s |", o.maxPoll, r.ceilingSQL)
	tb.Rowf("1 | consumer drain of the receiver's backlog, API latency 0, new objects | %.0f events/s = **%.2f × the receiver** (%.0f%% of the PostgreSQL ceiling) | ≥ 1.0 ×",
		r.fastRate, r.fastRate/r.receiverRate, 100*r.fastRate/r.ceilingSQL)
	for _, row := range r.rows {
		tb.Rowf("%s", row)
	}
}

const secret = "whsec_consumerbench_test_mode"

// fwdSecret signs the forward cases' deliveries (Standard Webhooks).
const fwdSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// providers are the run's, one per case and topic ("warmup" fills the
// tables first); "limited" has api_rate_limit 100, "fwd…" ones forward
// ("fwdord…" with order: per_object).
var providers = []string{"warmup", "maxrate", "slow", "grouped", "limited", "steady", "alone", "mixed", "fwdfast", "fwdslow",
	"fwdordered", "fwdordfail", "fwdorderedafter"}

// benchInFlight is ingest.max_in_flight, and every provider's, in the
// run's configuration (see setup).
const benchInFlight = 1024

// topic is the topic of provider p's events.
func topic(p string) string { return "bench." + p }

// bench is one run's components, all real and private to the run.
type bench struct {
	*benchenv.Stack
	o       *options
	entries string // the providers: entries of every process's configuration
	api     *fakeAPI
}

// setup starts the fake API (the caller stops it) and the providers' YAML.
func setup(st *benchenv.Stack, o *options) (*bench, error) {
	b := &bench{Stack: st, o: o, api: &fakeAPI{}}
	var err error
	if b.api.url, b.api.stop, err = benchenv.Serve(http.HandlerFunc(b.api.serve)); err != nil {
		return nil, err
	}
	var yaml strings.Builder
	// One case's provider at a time carries the load: each may take every
	// slot of ingest.max_in_flight (benchInFlight), so the receiver's
	// per-provider share (a quarter by default) refuses nothing the
	// pipeline can carry, and case 5 measures latency, not admission
	// (docs/RECEIVER.md). The bound is 1024, not the default 256: at case
	// 5's 2 000 events/s, 256 deliveries are in flight once a write stalls
	// 128 ms, which the relay, the consumer, Kafka and PostgreSQL sharing
	// two cores made happen in some runs (15 to 185 refusals of 30 000).
	for _, p := range providers {
		yaml.WriteString(benchenv.ProviderYAML(p, []byte(secret), "    topic: "+topic(p)+"\n    max_in_flight: "+strconv.Itoa(benchInFlight)+"\n"))
		switch {
		case strings.HasPrefix(p, "fwd"):
			fmt.Fprintf(&yaml, "    forward:\n      - url: %s/hooks\n        secret: %s\n        concurrency: %d\n", b.api.url, fwdSecret, o.apiConcurrency)
			if strings.HasPrefix(p, "fwdord") {
				yaml.WriteString("        order: per_object\n")
			}
		case p == "limited":
			fmt.Fprintf(&yaml, "    api_rate_limit: %d\n", o.rateLimit)
			fallthrough
		default:
			fmt.Fprintf(&yaml, "    api_url: %s\n    api_key: bench_api_key\n    api_concurrency: %d\n", b.api.url, o.apiConcurrency)
		}
	}
	b.entries = yaml.String()
	return b, nil
}

// start runs `gatehouse sub` as name with consumers lines in its consumers:.
func (b *bench) start(ctx context.Context, sub, name, consumers string) (*benchenv.Proc, error) {
	extra := fmt.Sprintf("ingest:\n  max_in_flight: %d\nkafka:\n  brokers: [%s]\n  partitions: %d\nconsumers:\n  max_poll_records: %d\n  retry_delays: [10s, 1m]\n%s",
		benchInFlight, b.Brokers(), b.o.partitions, b.o.maxPoll, consumers)
	path, err := benchenv.WriteConfig(b.Dir, name+".yaml", b.DBURL, extra, b.entries)
	if err != nil {
		return nil, err
	}
	log := filepath.Join(b.Dir, name+".log")
	if sub == "serve" {
		log = os.DevNull
	}
	return benchenv.Gatehouse{Bin: b.o.gatehouse, Sub: sub, Config: path, Log: log}.Start(ctx)
}

// startConsumer runs `gatehouse consume` for prov alone, in a group of its own.
func (b *bench) startConsumer(ctx context.Context, prov string) (func(), error) {
	p, err := b.start(ctx, "consume", "consume-"+prov, "  providers: ["+prov+"]\n  group: consumerbench-"+prov+"\n")
	if err != nil {
		return nil, err
	}
	return p.Stop, nil
}

// fakeAPI is the provider API (every payment at version 1, after the
// latency, 429 above its limit a second) and, under /hooks, a destination.
type fakeAPI struct {
	url       string
	stop      func()
	latency   atomic.Int64 // time.Duration
	limit     atomic.Int64 // requests per second before 429s; 0: none
	tooMany   atomic.Int64
	delivered atomic.Int64 // forward deliveries
	failed    sync.Map     // webhook-ids answered 500 once (failsFirst, ordered.go)

	mu    sync.Mutex
	times []time.Time // request times since the last reset
	most  int         // most requests in any one second since the last reset
}

func (a *fakeAPI) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/hooks" {
		if id := r.Header.Get("webhook-id"); failsFirst(id) {
			if _, again := a.failed.LoadOrStore(id, true); !again {
				http.Error(w, "first attempt", http.StatusInternalServerError)
				return
			}
		}
		time.Sleep(time.Duration(a.latency.Load()))
		a.delivered.Add(1)
		w.WriteHeader(http.StatusNoContent)
		return
	}
	now, n := time.Now(), 0
	a.mu.Lock()
	a.times = append(a.times, now)
	for i := len(a.times) - 1; i >= 0 && now.Sub(a.times[i]) < time.Second; i-- {
		n++
	}
	a.most = max(a.most, n)
	a.mu.Unlock()
	if l := a.limit.Load(); l > 0 && int64(n) > l {
		a.tooMany.Add(1)
		w.Header().Set("Retry-After", "1")
		http.Error(w, `{"error":{"type":"rate_limit_error"}}`, http.StatusTooManyRequests)
		return
	}
	time.Sleep(time.Duration(a.latency.Load()))
	id := strings.TrimPrefix(r.URL.Path, "/v1/payments/")
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"id": id, "object": "payment", "version": 1, "status": "succeeded", "amount": 1999})
}

// reset returns and forgets the requests since the last reset and their busiest second.
func (a *fakeAPI) reset() (calls, most int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	calls, most = len(a.times), a.most
	a.times, a.most = nil, 0
	return calls, most
}
