// Command searchbench measures the payload search over a day of events
// (api.Inbox's first page), scanned and through the `search: indexed` GIN
// index, and the index's cost to `gatehouse serve`, in alternating rounds.
package main

import (
	"context"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"os"
	"time"

	"github.com/gatehouse/gatehouse/api"
	"github.com/gatehouse/gatehouse/deploy/bench/benchenv"
	"github.com/gatehouse/gatehouse/ingest/upkeep"
	"github.com/gatehouse/gatehouse/internal/config"
	"github.com/gatehouse/gatehouse/wiring"
)

func main() {
	o := &options{Options: benchenv.Options{Name: "searchbench"}}
	benchenv.Run(help, o, func(ctx context.Context, st *benchenv.Stack, stdout io.Writer) error { return run(ctx, st, *o, stdout) })
}

// options are the flags.
type options struct {
	benchenv.Options
	events    int           `flag:"events" default:"1000000" help:"events of the searched provider over the last 24 hours"`
	customers int           `flag:"customers" default:"100000" help:"distinct customers among them (a search finds events/customers)"`
	queries   int           `flag:"queries" default:"40" help:"searches per mode"`
	conns     int           `flag:"c" default:"64" help:"closed-loop connections of the ingest rounds"`
	rounds    int           `flag:"rounds" default:"3" help:"ingest rounds per provider (alternating)"`
	d         time.Duration `flag:"d" default:"8s" help:"length of each ingest round"`
	gatehouse string        `flag:"gatehouse" default:"bin/gatehouse" help:"gatehouse binary (the ingest rounds' receiver)"`
}

const help = "searchbench: the events API's payload search over a day of events, scanned and indexed, and the index's cost to the receiver.\n\n" +
	"Example: go run ./deploy/bench/searchbench -events 1000000 -rounds 3\n\nFlags:\n"

func run(ctx context.Context, st *benchenv.Stack, o options, stdout io.Writer) error {
	key := benchenv.Secret("whsec_search_", 16)
	path, err := benchenv.WriteConfig(st.Dir, "gatehouse.yaml", st.DBURL, "",
		benchenv.ProviderYAML("shop", key, "    search: indexed\n")+benchenv.ProviderYAML("plain", key, ""))
	if err != nil {
		return err
	}
	cfg, err := config.Load(path, false, func(string) string { return "" })
	if err != nil {
		return fmt.Errorf("bench config: %w", err)
	}
	t0 := time.Now()
	st.Logf("loading %d events of one day", o.events)
	if _, err := st.Pool.Exec(ctx, `INSERT INTO inbox (provider, event_id, event_type, payload, received_at, verified, secret_id)
SELECT 'shop', 'evt_' || i, 'order.created',
  jsonb_build_object('id', 'evt_' || i, 'type', 'order.created', 'created_at', now(),
    'data', jsonb_build_object('object', jsonb_build_object('id', 'ord_' || i, 'customer', 'cus_' || (i % $2),
      'total', (i % 997) * 100, 'currency', 'eur', 'items', jsonb_build_array(jsonb_build_object('sku', 'sku_' || (i % 53), 'qty', 1)),
      'note', repeat('x', 200)))),
  now() - interval '24 hours' + (i::float8 / $1) * interval '24 hours' - interval '1 minute', true, 's'
FROM generate_series(1, $1::int) i`, o.events, o.customers); err != nil {
		return fmt.Errorf("load: %w", err)
	}
	if _, err := st.Pool.Exec(ctx, `VACUUM ANALYZE inbox`); err != nil {
		return err
	}
	st.Logf("loaded in %s", time.Since(t0).Round(time.Second))
	scan, err := searchLatency(ctx, "bounded scan (search: scan)", api.Inbox{Pool: st.Pool}, o)
	if err != nil {
		return err
	}
	st.Logf("building the search index (maintenance pass, concurrently)")
	t0 = time.Now()
	mc := wiring.IngestMaintenance(cfg)
	mc.Pool = st.Pool
	mt, err := upkeep.NewMaintenance(mc)
	if err != nil {
		return err
	}
	if _, err := mt.Pass(ctx); err != nil {
		return fmt.Errorf("maintenance pass: %w", err)
	}
	build := time.Since(t0)
	var indexBytes int64
	if err := st.Pool.QueryRow(ctx, `SELECT coalesce(sum(pg_relation_size(indexrelid)), 0) FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid
WHERE i.relname LIKE '%\_search\_%'`).Scan(&indexBytes); err != nil {
		return err
	}
	indexed, err := searchLatency(ctx, "GIN index (search: indexed)", api.Inbox{Pool: st.Pool, SearchIndexed: api.SearchIndexed(wiring.APIProviders(cfg))}, o)
	if err != nil {
		return err
	}
	with, without, err := ingestRounds(ctx, st, path, key, o)
	if err != nil {
		return err
	}
	report(stdout, st, o, scan, indexed, build, indexBytes, with, without)
	return nil
}

// searched is one mode's first pages.
type searched struct {
	name    string
	lat     *benchenv.Hist
	found   int // events found on the first pages, all queries
	partial int // first pages cut short by the scan budget
}

// searchLatency runs o.queries first pages of a random customer's orders
// through ib, as POST /api/v1/events/search with {"provider": "shop", "match": …}
func searchLatency(ctx context.Context, name string, ib api.Inbox, o options) (searched, error) {
	s := searched{name: name, lat: benchenv.NewHist()}
	for range o.queries {
		f := api.EventFilter{Provider: "shop", Match: fmt.Sprintf(`{"data":{"object":{"customer":"cus_%d"}}}`, mrand.IntN(o.customers))}
		t0 := time.Now()
		page, err := ib.ListEvents(ctx, f, nil, api.DefaultPageSize)
		if err != nil {
			return s, fmt.Errorf("search: %w", err)
		}
		s.lat.Record(time.Since(t0))
		s.found += len(page.Events)
		if page.Partial {
			s.partial++
		}
	}
	return s, nil
}

// ingestRounds alternates closed-loop rounds of the indexed and the plain
// provider to `gatehouse serve` and returns each one's events/s per round.
func ingestRounds(ctx context.Context, st *benchenv.Stack, config string, key []byte, o options) (with, without []float64, err error) {
	serve, err := benchenv.Gatehouse{Bin: o.gatehouse, Sub: "serve", Config: config, Log: os.DevNull}.Start(ctx)
	if err != nil {
		return nil, nil, err
	}
	defer serve.Stop()
	addr := serve.Public
	gens := map[string]*benchenv.Deliveries{"shop": benchenv.NewDeliveries("shop", addr, key, 512), "plain": benchenv.NewDeliveries("plain", addr, key, 512)}
	rates := map[string][]float64{}
	for i := range 2*o.rounds + 2 {
		name := []string{"shop", "plain"}[(i+i/2)%2] // shop plain plain shop shop plain …
		if i == 2 {                                  // the warm-ups filled the written tables
			if err := benchenv.Analyze(ctx, st.Pool); err != nil {
				return nil, nil, err
			}
		}
		if err := st.Settle(ctx, st.Pool); err != nil {
			return nil, nil, err
		}
		res := benchenv.Load{Addr: addr, Conns: o.conns, Next: gens[name].Next}.Closed(ctx, o.d)
		if _, failed := res.Counts(); failed > 0 {
			return nil, nil, fmt.Errorf("%s round: %d failed deliveries (last: %s)", name, failed, res.LastError)
		}
		st.Logf("round %d %s: %.0f events/s, load %.1f", i+1, name, res.Rate(), benchenv.LoadAvg())
		if i >= 2 { // after each one's warm-up round
			rates[name] = append(rates[name], res.Rate())
		}
	}
	return rates["shop"], rates["plain"], nil
}

// report writes the section.
func report(w io.Writer, st *benchenv.Stack, o options, scan, indexed searched, build time.Duration, indexBytes int64, with, without []float64) {
	fmt.Fprintf(w, "## Payload search\n\n")
	fmt.Fprintf(w, "PostgreSQL %s, private cluster (fsync on). %d events of one provider received over the last 24 hours (~600-byte payloads, %d customers), searched for one customer's orders (`match={\"data\":{\"object\":{\"customer\":\"cus_N\"}}}`, random N) through the API's read model (`api.Inbox.ListEvents`, first page of %d), %d searches per mode. Load average after: %.1f.\n\n",
		st.PGVersion, o.events, o.customers, api.DefaultPageSize, o.queries, benchenv.LoadAvg())
	tb := benchenv.NewTable(w, "search", "p50>", "p95>", "max>", "events found (all first pages)>", "first pages cut short by the scan budget>")
	for _, s := range []searched{scan, indexed} {
		tb.Row(s.name, benchenv.Ms(s.lat.Q(0.5), 1), benchenv.Ms(s.lat.Q(0.95), 1), benchenv.Ms(s.lat.Q(1), 1), s.found, fmt.Sprintf("%d of %d", s.partial, s.lat.N()))
	}
	fmt.Fprintf(w, "\nThe index: built in %s by the maintenance pass (concurrently, on the existing partitions), %.0f MB for %d events.\n\n", build.Round(time.Second), float64(indexBytes)/1e6, o.events)
	ratio := benchenv.Median(with) / benchenv.Median(without)
	tb = benchenv.NewTable(w, fmt.Sprintf("receiver (`gatehouse serve`), closed loop, %d connections, on the loaded database", o.conns), fmt.Sprintf("events/s (median of %d rounds)>", len(with)), "rounds")
	tb.Rowf("provider with `search: indexed` | %.0f | %.0f", benchenv.Median(with), with)
	tb.Rowf("provider without | %.0f | %.0f", benchenv.Median(without), without)
	tb.Rowf("**ratio with ÷ without** | **%.2f** |", ratio)
	fmt.Fprintf(w, "\nTargets: first page ≤ 1 s at p95 with the index: %s (%s); ingest ratio ≥ 0.85: %s (%.2f).\n",
		benchenv.Verdict(indexed.lat.Q(0.95) <= time.Second), benchenv.Ms(indexed.lat.Q(0.95), 1), benchenv.Verdict(ratio >= 0.85), ratio)
}
