// Command reconcilebench measures one reconciliation pass (`gatehouse
// reconcile --provider stripe --since …`, a Stripe backfill) over a
// provider's event list of which a share is missing from the inbox, from a
// mock of Stripe's GET /v1/events answering each call after a fixed
// latency, under the provider's rate limit (api_rate_limit). It reports
// the pass's wall time, the API calls, the gatehouse process's CPU, and
// the targets: calls ≤ events ÷ page size + missing, and the pass within
// 1.2 × calls × max(latency, 1/rate).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/gatehouse/gatehouse/deploy/bench/benchenv"
)

func main() {
	o := &options{Options: benchenv.Options{Name: "reconcilebench"}}
	benchenv.Run(help, o, func(ctx context.Context, st *benchenv.Stack, stdout io.Writer) error { return run(ctx, st, *o, stdout) })
}

// options are the flags.
type options struct {
	benchenv.Options
	events    int           `flag:"events" default:"100000" help:"events in the provider's list, over the last 24 hours"`
	missing   float64       `flag:"missing" default:"1" help:"percentage of them the inbox lacks (spread evenly)"`
	latency   time.Duration `flag:"latency" default:"50ms" help:"the mock's latency per API call"`
	rate      float64       `flag:"rate" default:"100" help:"api_rate_limit, calls per second (Stripe's documented read limit in live mode)"`
	gatehouse string        `flag:"gatehouse" default:"bin/gatehouse" help:"gatehouse binary"`
}

// Validate checks the flags.
func (o *options) Validate() error {
	if o.events <= 0 || o.missing < 0 || o.missing > 100 || o.latency < 0 || o.rate <= 0 {
		return errors.New("-events and -rate must be positive, -missing within [0, 100], -latency not negative")
	}
	return nil
}

const help = "reconcilebench: one Stripe backfill pass over the provider's event list, a share of it missing, from a mock at a fixed latency.\n\n" +
	"Example: go run ./deploy/bench/reconcilebench -events 100000 -missing 1 -latency 50ms -rate 100\n\nFlags:\n"

// pageSize is the page the pass asks for (ingest/reconcile: Stripe's most).
const pageSize = 100

func run(ctx context.Context, st *benchenv.Stack, o options, stdout io.Writer) error {
	if _, err := os.Stat(o.gatehouse); err != nil {
		return fmt.Errorf("gatehouse binary: %w (build it: go build -o bin/gatehouse ./cmd/gatehouse)", err)
	}
	now := time.Now()
	m := newMock(o.events, o.missing, now.Add(-24*time.Hour), now.Add(-time.Minute))
	url, stop, err := benchenv.Serve(m)
	if err != nil {
		return err
	}
	defer stop()
	cfg, err := benchenv.WriteConfig(st.Dir, "gatehouse.yaml", st.DBURL, "", fmt.Sprintf(`  stripe:
    scheme: stripe
    secrets: [{id: bench, value: whsec_reconcilebench}]
    api_url: %s
    api_key: sk_test_reconcilebench
    api_rate_limit: %g
    dedupe_window: 72h
    reconcile:
      max_events: %d
`, url, o.rate, 2*o.events))
	if err != nil {
		return err
	}
	logPath := filepath.Join(st.Dir, "gatehouse.log")

	// the inbox holds every event but the missing ones: a first pass over
	// the list without them, at no latency, stores them as a pass does
	st.Logf("storing %d of %d events (the ones the receiver got)", o.events-m.missingCount(), o.events)
	t0 := time.Now()
	m.set(false, 0)
	if _, err := reconcileOnce(ctx, o.gatehouse, cfg, st.DBURL, logPath); err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	seeded := time.Since(t0)
	st.Logf("stored in %s", seeded.Round(time.Second))

	m.set(true, o.latency)
	st.Logf("measured pass: %d events, %d missing, %s per call, %g calls/s", o.events, m.missingCount(), o.latency, o.rate)
	res, err := reconcileOnce(ctx, o.gatehouse, cfg, st.DBURL, logPath)
	if err != nil {
		return err
	}
	calls := m.calls()
	if res.stored != m.missingCount() || res.missing != m.missingCount() || res.listed != o.events {
		return fmt.Errorf("the pass listed %d, found %d missing and stored %d: want %d listed, %d missing and stored",
			res.listed, res.missing, res.stored, o.events, m.missingCount())
	}
	if res.calls != calls {
		return fmt.Errorf("the pass reports %d API calls, the mock answered %d", res.calls, calls)
	}
	var inbox int
	var pass time.Duration
	if err := st.Pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM inbox WHERE provider = 'stripe'),
  (SELECT finished_at - started_at FROM reconcile_passes WHERE provider = 'stripe' AND result = 'ok')`).Scan(&inbox, &pass); err != nil {
		return err
	}
	if inbox != o.events {
		return fmt.Errorf("%d inbox rows after the pass, want %d", inbox, o.events)
	}

	callTarget := (o.events+pageSize-1)/pageSize + m.missingCount()
	per := max(o.latency, time.Duration(float64(time.Second)/o.rate))
	timeTarget := time.Duration(1.2 * float64(time.Duration(calls)*per))
	fmt.Fprintf(stdout, "## Reconciliation\n\n")
	fmt.Fprintf(stdout, "One `gatehouse reconcile --provider stripe --since 25h` pass (a backfill) over %d events of the provider's list, "+
		"%d of them (%g %%) missing from the inbox, read from a mock of Stripe's `GET /v1/events` answering each call after %s, "+
		"under `api_rate_limit: %g` (Stripe's documented read limit in live mode, 100 requests/s); PostgreSQL %s, fsync on. "+
		"Targets: API calls ≤ events ÷ page size (%d) + missing; pass time ≤ 1.2 × calls × max(latency, 1/rate).\n\n",
		o.events, m.missingCount(), o.missing, o.latency, o.rate, st.PGVersion, pageSize)
	t := benchenv.NewTable(stdout, "events>", "missing>", "API calls>", "call target>", "pass time>", "time target>",
		"process time>", "gatehouse CPU>", "CPU / process time>", "verdict")
	verdict := "meets both"
	switch {
	case calls > callTarget && pass > timeTarget:
		verdict = "misses both"
	case calls > callTarget:
		verdict = "too many calls"
	case pass > timeTarget:
		verdict = "too slow"
	}
	t.Row(o.events, m.missingCount(), calls, "≤ "+strconv.Itoa(callTarget), pass.Round(10*time.Millisecond),
		"≤ "+timeTarget.Round(10*time.Millisecond).String(), res.wall.Round(10*time.Millisecond), res.cpu.Round(10*time.Millisecond),
		fmt.Sprintf("%.1f %%", 100*res.cpu.Seconds()/res.wall.Seconds()), verdict)
	fmt.Fprintf(stdout, "\nThe pass time is the pass's own (reconcile_passes: started_at to finished_at: the lock, the list, the lookups, "+
		"the writes, the cursor); the process time is the `gatehouse reconcile` process's, start to exit (configuration, "+
		"the connection, the pass, the counts), and the CPU is that process's user and system time. "+
		"Seeding the %d stored events (a pass at no latency) took %s and is not measured.\n",
		o.events-m.missingCount(), seeded.Round(time.Second))
	return nil
}

// result is what one `gatehouse reconcile` run reported.
type result struct {
	listed, missing, stored, calls int
	wall, cpu                      time.Duration
}

// summary is the counts line `gatehouse reconcile` prints at the end.
var summary = regexp.MustCompile(`listed (\d+), missing (\d+), stored (\d+), .* api calls (\d+)`)

// reconcileOnce runs one pass through the binary and reads its counts.
func reconcileOnce(ctx context.Context, bin, cfg, dbURL, logPath string) (result, error) {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return result{}, err
	}
	defer logf.Close()
	cmd := exec.CommandContext(ctx, bin, "reconcile", "--config", cfg, "--provider", "stripe", "--since", "25h")
	cmd.Env = append(os.Environ(), "GATEHOUSE_DATABASE_URL="+dbURL)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, logf
	start := time.Now()
	err = cmd.Run()
	wall := time.Since(start)
	if err != nil {
		return result{}, fmt.Errorf("gatehouse reconcile: %w (log: %s): %s", err, logPath, tail(out.String()))
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	sm := summary.FindStringSubmatch(lines[len(lines)-1])
	if sm == nil {
		return result{}, fmt.Errorf("gatehouse reconcile: no counts line: %s", tail(out.String()))
	}
	r := result{wall: wall, cpu: cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()}
	r.listed, _ = strconv.Atoi(sm[1])
	r.missing, _ = strconv.Atoi(sm[2])
	r.stored, _ = strconv.Atoi(sm[3])
	r.calls, _ = strconv.Atoi(sm[4])
	return r, nil
}

func tail(s string) string { return s[max(0, len(s)-2000):] }
