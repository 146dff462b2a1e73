package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"time"

	"github.com/gatehouse/gatehouse/deploy/bench/benchenv"
)

// mixResult is each scheme's name and samples, the reference scheme first.
type mixResult struct {
	names []string
	ss    [][]sample
}

// mix runs the catalogue's schemes as their providers send them, in
// closed loop, beside the reference scheme: o.mixRuns rounds, each in an
// order rotated by the round.
func (b *bench) mix(ctx context.Context) (*mixResult, error) {
	res := &mixResult{names: append([]string{"reference"}, benchenv.MixSchemes...)}
	var sides []side
	for i, name := range res.names {
		sd := b.closedSide(ctx, "mix "+name, b.recv, b.o.mixConns)
		switch {
		case name == "github": // single.go's rows wrote the first ids already
			sd.src = b.github
		case i > 0:
			d, err := benchenv.NewSchemeDeliveries(name, b.recv.Public, b.mixSecret, b.o.bodyBytes)
			if err != nil {
				return nil, err
			}
			sd.src = d
		}
		sides = append(sides, sd)
	}
	// Every round starts from emptied tables filled by a second of every
	// scheme and analyzed, not on tables grown by the previous rounds.
	fill := func() error {
		b.emptied = false
		for i, sd := range sides {
			src := presign(cmp.Or(sd.src, b.gen), 0, 0)
			if _, err := b.sampleRun(ctx, res.names[i]+" warm-up", func() (sample, error) { return b.closed(ctx, b.o.mixConns, time.Second, src) }); err != nil {
				return err
			}
		}
		return benchenv.Analyze(ctx, b.Pool)
	}
	if err := fill(); err != nil {
		return nil, err
	}
	b.rate = max(b.rate, 20000) // presign plenty: the fastest schemes outrun the reference scheme
	var err, fillErr error
	res.ss, err = b.rotate(ctx, b.o.mixRuns, sides, func(round int, ss [][]sample) {
		for i, name := range res.names {
			s, ref := ss[i][round], ss[0][round]
			b.Logf("mix round %d %s: %.0f/s p99 %.2f ms, %.1f events/commit, receiver %.0f µs, PostgreSQL %.0f µs per event, ratio %.2f, load %.1f",
				round+1, name, s.tput(), s.p99(), s.perCommit(), s.recvPer(), s.pgPer(), s.tput()/ref.tput(), s.load)
		}
		if round < b.o.mixRuns-1 && fillErr == nil {
			fillErr = fill()
		}
	})
	return res, cmp.Or(err, fillErr)
}

func (m *mixResult) print(w io.Writer, b *bench) {
	fmt.Fprintf(w, "\n### The catalogue's schemes\n\n")
	fmt.Fprintf(w, "Each provider's deliveries as it sends them (`deploy/bench/benchenv/schemes.go`: GitHub's body HMAC with an unsigned delivery id, so the replay guard; Stripe's timestamped header; Shopify's base64 HMAC; Slack's `v0:`; Standard Webhooks; Twilio's form body with the URL signed; Mailgun's token inside the body), about %d-byte bodies, unique events, closed loop at %d connections, %d rounds of %s per scheme; each round starts from emptied tables filled by one second of every scheme and analyzed, and runs every scheme, the reference scheme too, in an order rotated by round. Receiver CPU is the `gatehouse serve` process's; PostgreSQL CPU all its processes'. Ratio: the scheme's events/s over the reference scheme's of the same round (median of rounds). Medians.\n\n",
		b.o.bodyBytes, b.o.mixConns, b.o.mixRuns, b.o.duration)
	tb := benchenv.NewTable(w, "scheme", "events/s>", "p99 ack>", "events per commit>", "receiver CPU per event>", "PostgreSQL CPU per event>", "WAL per event>", "ratio to the reference scheme (range)>")
	ok := true
	for i, ss := range m.ss {
		lo, hi, ratio := paired(ss, m.ss[0])
		ok = ok && (i == 0 || ratio >= 0.9)
		tb.Rowf("%s | %s | %.2f ms | %.1f | %.0f µs | %.0f µs | %s B | %.2f (%.2f–%.2f)", m.names[i], benchenv.Thousands(med(ss, sample.tput)),
			med(ss, sample.p99), med(ss, sample.perCommit), med(ss, sample.recvPer), med(ss, sample.pgPer), benchenv.Thousands(med(ss, sample.walPer)), ratio, lo, hi)
	}
	fmt.Fprintf(w, "\nTarget: every scheme ≥ 0.9 of the reference scheme: %s.\n", benchenv.Verdict(ok))
}
