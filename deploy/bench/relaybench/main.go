// Command relaybench measures gatehouse's outbox relay: outbox rows
// committed → records readable on the Kafka topic, against the ceiling of a
// franz-go producer writing the same records straight to the same broker in
// the same run. It starts a private PostgreSQL cluster (fsync on) and a
// private Kafka 4 broker (internal/testenv), runs the relay in-process
// (the code of `gatehouse relay`), and for each mode measures:
//
//   - paced runs (open loop, default 1k/s and 5k/s): a writer commits rows
//     in small transactions every 10ms; commit-to-topic latency is the time
//     from the writer's COMMIT returning to a consumer receiving the record;
//   - a max run: writers commit batches as fast as they can while the relay
//     publishes; throughput is rows committed / time until the last arrived;
//   - a backlog drain: rows written while the relay was stopped, then
//     published as fast as the relay can, with the CPU time each process
//     (this one, PostgreSQL's walsender and other backends, the broker)
//     spent per row; in replication mode, the same backlog streamed again
//     by PostgreSQL's walsender to a reader that only receives (its own
//     slot, the relay stopped): the rate no logical-replication relay here
//     can pass.
//
// The ceiling producer runs at the same rates (latency = Produce call to
// consumer receipt), flat out, and as a burst of the backlog's size just
// before each drain (the ceiling at the drain's moment). It prints a
// Markdown section on stdout and progress on stderr. Usage:
//
//	go run ./deploy/bench/relaybench [-d 10s] [-rates 1000,5000] [-modes replication,poll]
package main

import (
	"context"
	"io"
	"time"

	"github.com/gatehouse/gatehouse/deploy/bench/benchenv"
)

type options struct {
	benchenv.Options
	duration   time.Duration `flag:"d" default:"10s" help:"length of each paced and max run"`
	rates      []int         `flag:"rates" default:"1000,5000" help:"paced rates in rows/s"`
	modes      []string      `flag:"modes" default:"replication,poll" help:"relay modes to measure"`
	backlog    int           `flag:"backlog" default:"200000" help:"rows of the backlog-drain run (0 skips it)"`
	keys       int           `flag:"keys" default:"1000" help:"distinct keys (subject objects)"`
	batch      int           `flag:"batch" default:"500" help:"rows per transaction in max and backlog runs"`
	writers    int           `flag:"writers" default:"2" help:"concurrent writers in the max run"`
	partitions int           `flag:"partitions" default:"6" help:"partitions of the benchmark topics"`
	runs       int           `flag:"runs" default:"1" help:"repetitions of every measurement (each is a row)"`
	cpuProfile string        `flag:"cpuprofile" help:"write a CPU profile of this process (relay and benchmark consumer) during the first backlog drain to this file"`
}

func main() {
	o := &options{Options: benchenv.Options{Name: "relaybench", Kafka: true}}
	benchenv.Run(helpText, o, func(ctx context.Context, st *benchenv.Stack, stdout io.Writer) error { return run(ctx, st, o, stdout) })
}

const helpText = `relaybench measures gatehouse's outbox relay (logical replication and
poll mode) against a plain franz-go producer writing the same records to the
same broker in the same run: paced latency, a max run, and a backlog drain
with its CPU per row and, in replication mode, the walsender's own rate. It
starts a private PostgreSQL and Kafka and prints a Markdown section.

Example:
  go run ./deploy/bench/relaybench -runs 3 -d 3s -rates 1000 -backlog 200000 -cpuprofile /tmp/relay.prof

Flags:
`

func run(ctx context.Context, st *benchenv.Stack, o *options, stdout io.Writer) error {
	b := &bench{Stack: st, o: o}
	var rows []result
	for run := range max(o.runs, 1) {
		first := len(rows)
		for _, rate := range append(append([]int{}, o.rates...), 0) {
			r, err := b.ceiling(ctx, rate)
			if err != nil {
				return err
			}
			rows = append(rows, r)
		}
		r, err := b.writersAlone(ctx)
		if err != nil {
			return err
		}
		rows = append(rows, r)
		for _, mode := range o.modes {
			res, err := b.relayRuns(ctx, mode)
			if err != nil {
				return err
			}
			rows = append(rows, res...)
		}
		for i := first; i < len(rows); i++ {
			rows[i].run = run
		}
	}
	report(stdout, o, b, rows)
	return nil
}
