package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gatehouse/gatehouse/deploy/bench/benchenv"
)

// The unverified-bytes attack of the overload mode (issue 45, finding 1):
// -budget-conns connections to provider A's endpoint from one address
// (-attack-from), each declaring a 1 MiB body, sending 513 KiB of it at
// once and idling within the read deadline (2 s + 1 MiB at 16 KiB/s), as a
// client without A's secret holding the unverified-bytes budget would;
// beside provider B's signed deliveries at -budget-rate a second. B alone,
// then beside each attack size, in turn, -runs times.

// budgetRun is one run: B alone (conns 0) or beside conns attackers.
type budgetRun struct {
	conns     int
	b         benchenv.LoadResult
	peakRSSKB int64
	opened    int64 // the attack's connections, and those the server answered (refused)
	refused   int64
}

// attackBody is what an attacking connection sends: a 1 MiB declaration
// and 513 KiB of it.
func attackBody(provider string) []byte {
	head := "POST /webhooks/" + provider + " HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\nContent-Length: 1048576\r\n\r\n"
	return append([]byte(head), strings.Repeat("x", 513<<10)...)
}

// budgetAttack keeps n such connections from the address from to addr for
// d: each idles until the server answers or closes it, and its attacker
// comes back a second later. It counts the connections and the answers.
func budgetAttack(ctx context.Context, addr, from, provider string, n int, d time.Duration, opened, refused *atomic.Int64) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	body := attackBody(provider)
	dialer := &net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	benchenv.Loop(ctx, n, d, func(int) error {
		c, err := dialer.DialContext(ctx, "tcp", addr)
		if err != nil {
			time.Sleep(100 * time.Millisecond)
			return err
		}
		opened.Add(1)
		stop := context.AfterFunc(ctx, func() { c.Close() })
		defer stop()
		defer c.Close()
		_, _ = c.Write(body)
		if got, _ := c.Read(make([]byte, 1)); got > 0 { // the server answered: refused
			refused.Add(1)
		}
		select { // an attacker refused comes back a second later
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
		return nil
	})
}

// budgetOnce runs B at -budget-rate alone (conns 0) or beside conns
// attackers of A; gatehouse's peak RSS is the VmHWM of the run (reset by
// clear_refs, else the largest VmRSS sampled every 50 ms).
func budgetOnce(ctx context.Context, g *benchenv.Proc, o *options, b benchenv.Load, conns int) budgetRun {
	r := budgetRun{conns: conns}
	hwm := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", g.Pid()), []byte("5"), 0) == nil
	stopRSS := benchenv.Every(ctx, 50*time.Millisecond, func(context.Context) {
		r.peakRSSKB = max(r.peakRSSKB, benchenv.StatusKB(g.Pid(), "VmRSS:"))
	})
	var opened, refused atomic.Int64
	done := make(chan struct{})
	if conns > 0 {
		go func() {
			budgetAttack(ctx, g.Public, o.attackFrom, "a", conns, o.duration+time.Second, &opened, &refused)
			close(done)
		}()
		time.Sleep(time.Second) // the attack holds what it can when B starts
	}
	r.b = b.Fixed(ctx, float64(o.budgetRate), o.duration)
	if conns > 0 {
		<-done
	}
	stopRSS()
	if hwm {
		r.peakRSSKB = max(r.peakRSSKB, benchenv.StatusKB(g.Pid(), "VmHWM:"))
	}
	r.opened, r.refused = opened.Load(), refused.Load()
	return r
}

// budgetSection runs the attack's table: B alone and beside each
// -budget-conns size, -runs times in turn.
func budgetSection(ctx context.Context, st *benchenv.Stack, g *benchenv.Proc, o *options, b benchenv.Load) [][]budgetRun {
	sizes := append([]int{0}, o.budgetConns...)
	runs := make([][]budgetRun, len(sizes))
	for i := range o.runs {
		for j, n := range sizes {
			st.Logf("run %d/%d: B at %d/s beside %d connections holding unverified bytes of A", i+1, o.runs, o.budgetRate, n)
			runs[j] = append(runs[j], budgetOnce(ctx, g, o, b, n))
			time.Sleep(2 * time.Second) // the attack's connections are gone
		}
	}
	return runs
}

// refusals is B's 503 and 429 answers in r.
func refusals(r budgetRun) float64 {
	n := 0
	for _, a := range r.b.Acks {
		if a.Status == 503 || a.Status == 429 {
			n++
		}
	}
	return float64(n)
}

// budgetReport prints the attack's table, with B's acknowledged events
// looked up in the inbox.
func budgetReport(ctx context.Context, w io.Writer, st *benchenv.Stack, o *options, runs [][]budgetRun) error {
	acked, missing := 0, 0
	for _, rs := range runs {
		for _, r := range rs {
			n, m, err := missingFromInbox(ctx, st, "b", r.b)
			if err != nil {
				return err
			}
			acked, missing = acked+n, missing+m
		}
	}
	p99 := func(r budgetRun) float64 { all, _, _ := answered(r.b); return benchenv.Millis(all.Q(0.99)) }
	failed := func(r budgetRun) float64 { _, f := r.b.Counts(); return float64(f) }
	rss := func(r budgetRun) float64 { return float64(r.peakRSSKB) / 1024 }
	sum := func(rs []budgetRun, f func(budgetRun) float64) int { return int(benchenv.Sum(benchenv.Col(rs, f))) }
	alone := benchenv.MedianOf(runs[0], p99)
	fmt.Fprintf(w, "\n### Unverified bytes held by clients without a secret\n\n")
	fmt.Fprintf(w, "Provider B's signed deliveries at %d/s (open loop), alone and beside connections to provider A's endpoint from one other address (%s), "+
		"each declaring a 1 MiB body, sending 513 KiB at once and idling within the read deadline (a refused one comes back a second later); "+
		"defaults: ingest.max_unverified_bytes 64 MiB, reserved_unverified_bytes 4 MiB per provider, max_unverified_bytes_per_client 8 MiB. "+
		"%d runs of %v each, in turn; p99 the median of the runs, peak RSS the largest (VmHWM of the run).\n\n", o.budgetRate, o.attackFrom, o.runs, o.duration)
	t := benchenv.NewTable(w, "B beside", "B's refusals (503/429), all runs", "B's other failures", "B's p99 ack", "ratio to alone", "gatehouse peak RSS", "attack's connections / refused, per run")
	for _, rs := range runs {
		name, ratio, attack := "nothing (alone)", "", ""
		if n := rs[0].conns; n > 0 {
			name = fmt.Sprintf("%d attacking connections", n)
			ratio = fmt.Sprintf("%.2f×", benchenv.MedianOf(rs, p99)/max(alone, 1e-9))
			attack = fmt.Sprintf("%.0f / %.0f", benchenv.MedianOf(rs, func(r budgetRun) float64 { return float64(r.opened) }),
				benchenv.MedianOf(rs, func(r budgetRun) float64 { return float64(r.refused) }))
		}
		t.Row(name, sum(rs, refusals), sum(rs, failed)-sum(rs, refusals), fmt.Sprintf("%.2f ms", benchenv.MedianOf(rs, p99)), ratio,
			fmt.Sprintf("%.0f MB", slices.Max(benchenv.Col(rs, rss))), attack)
	}
	t.Row("target", 0, 0, "", "≤ 2×", "≤ 150 MB", "")
	fmt.Fprintf(w, "\nB's events acknowledged in these runs / missing from the inbox: %d / %d (target 0 missing).\n", acked, missing)
	fmt.Fprintf(w, "\nCommand: `deploy/bench/40-overload.sh -runs %d -d %v -budget-only`.\n", o.runs, o.duration)
	return nil
}
