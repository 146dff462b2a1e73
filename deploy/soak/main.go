// Command soak is gatehouse's combined chaos soak. It runs the production
// topology from the real binary — `gatehouse serve`, `gatehouse relay` and
// two `gatehouse consume` processes — on a private PostgreSQL cluster (fsync
// on) and a private three-node Kafka cluster (replication factor 3,
// min.insync.replicas 2), sends signed webhooks through it (a share of them
// re-sent as duplicates, events of one object sometimes out of order, every
// one retried until a 2xx as a provider does), and meanwhile a fault
// injector, at random moments and in random order, SIGKILLs and restarts
// serve, the relay and a consumer, kills and restarts a Kafka broker and
// restarts PostgreSQL (fast shutdown). At the end it checks the invariants
// from the database and the topic and prints a table:
//
//   - every event acknowledged with a 2xx is in the inbox once and final;
//   - the effect log has at most one row per event;
//   - no stored object is older than the newest version the provider's API
//     served for it;
//
// with the figures: events acknowledged, duplicates on the topic, the
// largest queue age seen per stage, and the time to recover after each
// fault. It exits 1 when an invariant fails. `make soak` runs it with
// 100 000 events; `go test ./deploy/soak` runs a short version.
//
//	go run ./deploy/soak [-events 100000] [-rate 800] [-fault-every 12s]
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/gatehouse/gatehouse/deploy/bench/benchenv"
)

// options are the soak's knobs (flags of the command, fields in the test).
type options struct {
	objects    int           `flag:"objects" default:"2000" help:"distinct subject objects"`
	perObject  int           // events per object (objects × perObject events; -events)
	dupRatio   float64       `flag:"dup-ratio" default:"0.3" help:"share of events re-sent as duplicates"`
	swapRatio  float64       `flag:"swap-ratio" default:"0.1" help:"share of events sent before their predecessor"`
	rate       float64       `flag:"rate" default:"800" help:"events per second offered"`
	workers    int           `flag:"workers" default:"32" help:"concurrent senders"`
	faultEvery time.Duration `flag:"fault-every" default:"12s" help:"mean pause between faults"`
	drain      time.Duration `flag:"drain" default:"5m" help:"time allowed to finish processing after the last send"`
	dir        string        `flag:"dir" help:"working directory (default: a new temp dir, removed at the end)"`
	log        io.Writer     // progress
}

func main() { benchenv.Main("soak", soak) }

// soak is the command: flags, the run, its table on stdout; an error when
// an invariant fails.
func soak(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("soak", flag.ContinueOnError)
	o := &options{log: stderr}
	benchenv.Flags(fs, o)
	events := fs.Int("events", 100_000, "events to send (first sends; duplicates come on top)")
	if done, err := benchenv.ParseFlags(fs, "Usage: soak [flags]\n\nRuns gatehouse's combined chaos soak and prints its invariants table.\n\nExample:\n  go run ./deploy/soak -events 100000 -rate 800\n\nFlags:\n", args, stdout, stderr); done || err != nil {
		return err
	}
	o.perObject = max(*events/max(o.objects, 1), 1)
	res, err := run(ctx, o)
	if res != nil {
		res.print(stdout)
	}
	if err != nil {
		return err
	}
	if len(res.violations) > 0 {
		return fmt.Errorf("%d invariants violated", len(res.violations))
	}
	return nil
}

// run starts the stack, sends the load under faults, waits for the
// pipeline to finish and checks the invariants.
func run(ctx context.Context, o *options) (*result, error) {
	if o.dir == "" {
		d, err := os.MkdirTemp("", "gatehouse-soak-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(d)
		o.dir = d
	}
	s, err := startStack(ctx, o)
	if err != nil {
		return nil, err
	}
	defer s.close()
	mon := startMonitor(ctx, s)
	gen := newGenerator(o, s)
	faults := make(chan []*fault, 1)
	fctx, stopFaults := context.WithCancel(ctx)
	go func() { faults <- s.injectFaults(fctx, o) }()
	start := time.Now()
	if err := gen.run(ctx); err != nil {
		stopFaults()
		<-faults
		return nil, err
	}
	stopFaults()
	injected := <-faults
	sendTime := time.Since(start)
	s.logf("sent %d events (%d acknowledged) in %v; waiting for the pipeline", gen.sent(), len(gen.acked()), sendTime.Round(time.Second))
	drainErr := s.waitFinal(ctx, gen.acked(), o.drain)
	mon.stop()
	res, err := s.check(ctx, gen, injected, mon, sendTime)
	if err != nil {
		return nil, err
	}
	if drainErr != nil {
		res.violations = append(res.violations, drainErr.Error())
	}
	return res, nil
}

// syncWriter serialises writes to w.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
