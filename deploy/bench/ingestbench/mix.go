package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"time"

	"github.com/gatehouse/gatehouse/deploy/bench/benchenv"
)

// The mix section: the catalogue's schemes sent the way their providers
// send them (benchenv.SchemeDeliveries), each in closed loop at one
// concurrency, beside the reference scheme in the same run, so each
// scheme's cost is read as a ratio to the reference scheme's.

// mixSecret is the mix providers' secret: a Standard Webhooks secret
// (whsec_ + base64), which every other scheme takes as an opaque string.
func mixSecret() []byte {
	k := make([]byte, 32)
	_, _ = rand.Read(k)
	return []byte("whsec_" + base64.StdEncoding.EncodeToString(k))
}

// mixRow is one scheme's samples (the reference scheme's row included).
type mixRow struct {
	scheme string
	src    interface{ Next(time.Time) []byte }
	ss     []sample
	ratio  []float64 // per run, to the reference scheme's run
}

type mixResult []*mixRow // the reference first

// mix runs o.mixRuns rounds; each round runs the reference scheme and then
// every scheme of the mix, in an order rotated by the round so no scheme
// always follows the same one.
func (b *bench) mix(ctx context.Context) (mixResult, error) {
	rows := mixResult{{scheme: "reference", src: b.gen}}
	for _, s := range benchenv.MixSchemes {
		d, err := benchenv.NewSchemeDeliveries(s, b.recv.Public, b.mixSecret, b.o.bodyBytes)
		if err != nil {
			return nil, err
		}
		rows = append(rows, &mixRow{scheme: s, src: d})
	}
	run := func(r *mixRow, name string, rate float64, d time.Duration) (sample, error) {
		src := presign(r.src, rate, d)
		return b.sampleRun(ctx, name, func() (runResult, error) { return b.closed(ctx, b.o.mixConns, d, src) })
	}
	// One untimed warm-up of every scheme (the receiver's and PostgreSQL's
	// caches, the plans of each provider's statement).
	for _, r := range rows {
		if _, err := run(r, r.scheme+" warm-up", 0, time.Second); err != nil {
			return nil, err
		}
	}
	rate := 20000.0
	for round := range b.o.mixRuns {
		var ref sample
		for j := range rows {
			row := rows[0]
			if j > 0 {
				row = rows[1+(j-1+round)%(len(rows)-1)]
			}
			s, err := run(row, "mix "+row.scheme, rate, b.o.duration)
			if err != nil {
				return nil, err
			}
			rate = max(rate, s.tput())
			if j == 0 {
				ref = s
			}
			row.ss, row.ratio = append(row.ss, s), append(row.ratio, s.tput()/ref.tput())
			b.Logf("mix round %d %s: %.0f/s p99 %.2f ms, %.1f events/commit, receiver %.0f µs, PostgreSQL %.0f µs per event, ratio %.2f, load %.1f",
				round+1, row.scheme, s.tput(), s.p99(), s.perCommit(), s.recvPer(), s.pgPer(), s.tput()/ref.tput(), s.load)
		}
	}
	return rows, nil
}

func (m mixResult) print(w io.Writer, b *bench) {
	fmt.Fprintf(w, "\n### The catalogue's schemes\n\n")
	fmt.Fprintf(w, "Each provider's deliveries as it sends them (`deploy/bench/benchenv/schemes.go`: GitHub's body HMAC with an unsigned delivery id, so the replay guard; Stripe's timestamped header; Shopify's base64 HMAC; Slack's `v0:`; Standard Webhooks; Twilio's form body with the URL signed; Mailgun's token inside the body), about %d-byte bodies, unique events, closed loop at %d connections, %d rounds of %s per scheme; each round runs the reference scheme first and then the others in an order rotated by round. Receiver CPU is the `gatehouse serve` process's; PostgreSQL CPU all its processes'. Ratio: the scheme's events/s over the reference scheme's of the same round (median of rounds). Medians.\n\n",
		b.o.bodyBytes, b.o.mixConns, b.o.mixRuns, b.o.duration)
	tb := benchenv.NewTable(w, "scheme", "events/s>", "p99 ack>", "events per commit>", "receiver CPU per event>", "PostgreSQL CPU per event>", "WAL per event>", "ratio to the reference scheme (range)>")
	ok := true
	for _, r := range m {
		lo, hi, ratio := benchenv.Spread(r.ratio)
		ok = ok && (r.scheme == "reference" || ratio >= 0.9)
		tb.Rowf("%s | %s | %.2f ms | %.1f | %.0f µs | %.0f µs | %s B | %.2f (%.2f–%.2f)", r.scheme, benchenv.Thousands(med(r.ss, sample.tput)),
			med(r.ss, sample.p99), med(r.ss, sample.perCommit), med(r.ss, sample.recvPer), med(r.ss, sample.pgPer), benchenv.Thousands(med(r.ss, sample.walPer)), ratio, lo, hi)
	}
	fmt.Fprintf(w, "\nTarget: every scheme ≥ 0.9 of the reference scheme: %s.\n", benchenv.Verdict(ok))
}
