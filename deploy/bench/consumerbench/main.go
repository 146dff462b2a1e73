// Command consumerbench measures gatehouse's consumers (section "Consumers"
// of `make bench`): throughput of the consumer group with the projection
// write against the Kafka read ceiling measured in the same run, and the
// end-to-end latency from the receiver's 2xx to processing_state succeeded
// at a steady rate, through the real receiver, relay (logical replication)
// and consumer, with a private PostgreSQL (fsync on) and Kafka broker.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"
)

type options struct {
	events         int
	rate           float64
	duration       time.Duration
	partitions     int
	concurrency    int
	keyConcurrency int
	apiLatency     time.Duration
	keep           bool
	cpuProfile     string
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "consumerbench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("consumerbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o := &options{}
	fs.IntVar(&o.events, "n", 20000, "events of the throughput run (pre-loaded into the topic)")
	fs.Float64Var(&o.rate, "rate", 100, "events/s of the steady-rate latency run")
	fs.DurationVar(&o.duration, "d", 20*time.Second, "duration of the latency run")
	fs.IntVar(&o.partitions, "partitions", 6, "partitions of the provider topic")
	fs.IntVar(&o.concurrency, "concurrency", 16, "consumers.concurrency (partitions processed in parallel)")
	fs.IntVar(&o.keyConcurrency, "key-concurrency", 4, "consumers.key_concurrency (objects of one partition processed in parallel)")
	fs.DurationVar(&o.apiLatency, "api-latency", 0, "added latency of the provider API's object fetch")
	fs.BoolVar(&o.keep, "keep", false, "keep the PostgreSQL and Kafka directories")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the throughput run (consumer, relay, API server in this process) to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if o.events < 1 || o.rate <= 0 || o.duration <= 0 || o.partitions < 1 || o.concurrency < 1 || o.keyConcurrency < 1 {
		return fmt.Errorf("-n, -rate, -d, -partitions and -concurrency must be positive")
	}
	b, err := setup(ctx, o, stderr)
	if err != nil {
		return err
	}
	defer b.close()
	res := &results{o: o, loadStart: loadAvg()}
	if err := b.throughput(ctx, res); err != nil {
		return err
	}
	if err := b.latency(ctx, res); err != nil {
		return err
	}
	res.print(stdout, b)
	return nil
}
