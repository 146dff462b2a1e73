package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"strings"
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

// mixYAML is the providers entries of the mix's schemes.
func mixYAML(schemes []string, secret []byte) string {
	var sb strings.Builder
	for _, s := range schemes {
		sb.WriteString(benchenv.SchemeYAML(s, secret))
	}
	return sb.String()
}

// mixRow is one scheme's samples (the reference scheme's row included).
type mixRow struct {
	scheme string
	ss     []sample
	ratio  []float64 // per run, to the reference scheme's run
}

type mixResult struct {
	conns int
	rows  []*mixRow // the reference first
}

// mix runs o.mixRuns rounds; each round runs the reference scheme and then
// every scheme of the mix, in an order rotated by the round so no scheme
// always follows the same one.
func (b *bench) mix(ctx context.Context) (*mixResult, error) {
	res := &mixResult{conns: b.o.mixConns, rows: []*mixRow{{scheme: "reference"}}}
	srcs := []source{b.gen}
	for _, s := range b.o.mix {
		d, err := benchenv.NewSchemeDeliveries(s, b.recv.Public, b.mixSecret, b.o.bodyBytes)
		if err != nil {
			return nil, err
		}
		srcs = append(srcs, d)
		res.rows = append(res.rows, &mixRow{scheme: s})
	}
	// One untimed warm-up of every scheme (the receiver's and PostgreSQL's
	// caches, the plans of each provider's statement).
	for i, src := range srcs {
		if _, err := b.sampleRun(ctx, res.rows[i].scheme+" warm-up", func() (runResult, error) {
			return b.closed(ctx, res.conns, time.Second, presign(src, 2000))
		}); err != nil {
			return nil, err
		}
	}
	rate := 20000.0
	for round := range b.o.mixRuns {
		order := make([]int, 0, len(srcs))
		for i := range srcs[1:] {
			order = append(order, 1+(i+round)%(len(srcs)-1))
		}
		var ref sample
		for j, i := range append([]int{0}, order...) {
			src := presign(srcs[i], int(rate*b.o.duration.Seconds()*1.3)+2000)
			s, err := b.sampleRun(ctx, "mix "+res.rows[i].scheme, func() (runResult, error) {
				return b.closed(ctx, res.conns, b.o.duration, src)
			})
			if err != nil {
				return nil, err
			}
			rate = max(rate, s.tput())
			row := res.rows[i]
			row.ss = append(row.ss, s)
			if j == 0 {
				ref = s
			}
			row.ratio = append(row.ratio, s.tput()/ref.tput())
			b.Logf("mix round %d %s: %.0f/s p99 %s, %.1f events/commit, receiver %.0f µs, PostgreSQL %.0f µs per event, ratio %.2f, load %.1f",
				round+1, row.scheme, s.tput(), ms(s.pct(0.99)), s.perCommit(), cpuPerEvent(s.recvCPU, s.n), cpuPerEvent(s.pgCPU, s.n), s.tput()/ref.tput(), s.load)
		}
	}
	return res, nil
}

func (m *mixResult) print(w io.Writer, b *bench) {
	fmt.Fprintf(w, "\n### The catalogue's schemes\n\n")
	fmt.Fprintf(w, "Each provider's deliveries as it sends them (`deploy/bench/benchenv/schemes.go`: GitHub's body HMAC with an unsigned delivery id, so the replay guard; Stripe's timestamped header; Shopify's base64 HMAC; Slack's `v0:`; Standard Webhooks; Twilio's form body with the URL signed; Mailgun's token inside the body), about %d-byte bodies, unique events, closed loop at %d connections, %d rounds of %s per scheme; each round runs the reference scheme first and then the others in an order rotated by round. Receiver CPU is the `gatehouse serve` process's; PostgreSQL CPU all its processes'. Ratio: the scheme's events/s over the reference scheme's of the same round (median of rounds). Medians.\n\n",
		b.o.bodyBytes, m.conns, b.o.mixRuns, b.o.duration)
	tb := benchenv.NewTable(w, "scheme", "events/s>", "p99 ack>", "events per commit>", "receiver CPU per event>", "PostgreSQL CPU per event>", "WAL per event>", "ratio to the reference scheme (range)>")
	ok := true
	for _, r := range m.rows {
		lo, hi, med := benchenv.Spread(r.ratio)
		if r.scheme != "reference" && med < 0.9 {
			ok = false
		}
		tb.Rowf("%s | %s | %s | %.1f | %.0f µs | %.0f µs | %s B | %.2f (%.2f–%.2f)", r.scheme,
			benchenv.Thousands(benchenv.MedianOf(r.ss, sample.tput)), medianMs(r.ss, 0.99), benchenv.MedianOf(r.ss, sample.perCommit),
			benchenv.MedianOf(r.ss, func(s sample) float64 { return cpuPerEvent(s.recvCPU, s.n) }),
			benchenv.MedianOf(r.ss, func(s sample) float64 { return cpuPerEvent(s.pgCPU, s.n) }),
			benchenv.Thousands(benchenv.MedianOf(r.ss, func(s sample) float64 { return float64(s.walBytes) / float64(s.n) })), med, lo, hi)
	}
	fmt.Fprintf(w, "\nTarget: every scheme ≥ 0.9 of the reference scheme: %s.\n", benchenv.Verdict(ok))
}
