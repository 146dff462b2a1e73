// Command gatehouse signs people in and receives webhooks; see README.md.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
)

// defaultGOGC is the garbage collector's target unless GOGC is set.
// gatehouse's live heap is a few MB, so at Go's default of 100 the collector
// ran many times a second and its per-cycle cost took ~18 % of the webhook
// receiver's CPU (ingestbench, docs/BENCHMARKS.md); 400 spends a few tens of
// MB of heap on that instead.
const defaultGOGC = 400

// defaultMemoryLimit is the collector's soft memory limit unless GOMEMLIMIT
// is set: with GOGC at 400 the heap may grow to five times what is live,
// which under a flood (hundreds of connections held, refusals waiting on
// their timers) took the receiver past 150 MB; near the limit the
// collector runs more often instead. At ordinary load the live heap is far
// below it and nothing changes.
const defaultMemoryLimit = 100 << 20

func main() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(defaultGOGC)
	}
	if _, set := os.LookupEnv("GOMEMLIMIT"); !set {
		debug.SetMemoryLimit(defaultMemoryLimit)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "gatehouse:", err)
		os.Exit(1)
	}
}
