// Command overloadbench is the "Under overload" section of `make bench`
// (issue 25): the real `gatehouse serve` binary on a private PostgreSQL,
// with two providers. Each run measures provider B alone (an open loop of
// -rate events a second) and then B beside an attack: provider A flooding
// closed-loop with -flood connections, and -slow-body connections sending
// a body a byte a second and -slow-header connections sending their
// headers so, both to B's own endpoint. Runs alternate (alone, overload, alone, …) and the table gives the
// medians; every event acknowledged with 2xx is then looked up in the
// inbox (none may be missing).
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"time"

	"github.com/gatehouse/gatehouse/deploy/bench/benchenv"
)

func main() { benchenv.Main("overloadbench", run) }

type options struct {
	gatehouse, receiverLog          string
	runs, flood, rate, slowB, slowH int
	maxInFlight, share              int
	d                               time.Duration
	keep                            bool
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("overloadbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	fs.StringVar(&o.gatehouse, "gatehouse", "bin/gatehouse", "the gatehouse binary to run (`gatehouse serve`)")
	fs.StringVar(&o.receiverLog, "receiver-log", "bin/overloadbench-gatehouse.log", "where gatehouse's log goes")
	fs.IntVar(&o.runs, "runs", 3, "interleaved pairs of runs (B alone, then under overload)")
	fs.DurationVar(&o.d, "d", 10*time.Second, "duration of each run")
	fs.IntVar(&o.flood, "flood", 500, "provider A's closed-loop connections")
	fs.IntVar(&o.rate, "rate", 200, "provider B's events per second (open loop)")
	fs.IntVar(&o.slowB, "slow-body", 200, "connections sending a body at 1 byte/s")
	fs.IntVar(&o.slowH, "slow-header", 200, "connections sending their headers at 1 byte/s")
	fs.BoolVar(&o.keep, "keep", false, "keep the data directories")
	fs.IntVar(&o.maxInFlight, "max-in-flight", 0, "ingest.max_in_flight (0: gatehouse's default)")
	fs.IntVar(&o.share, "share", 0, "each provider's max_in_flight (0: gatehouse's default)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "overloadbench measures provider B's latency beside provider A's flood and slow clients.\n\nExample: go run ./deploy/bench/overloadbench -gatehouse bin/gatehouse -runs 3 -d 10s\n\nFlags:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	st, err := benchenv.Start(ctx, benchenv.Options{Name: "overloadbench", Keep: o.keep}, stderr)
	if err != nil {
		return err
	}
	defer st.Close()
	g, err := startGatehouse(st, o)
	if err != nil {
		return err
	}
	defer g.stop()
	load := benchenv.LoadAvg()
	var alone, over []result
	for i := range o.runs {
		st.Logf("run %d/%d: B alone", i+1, o.runs)
		alone = append(alone, runAlone(ctx, g, o))
		st.Logf("run %d/%d: B beside A's flood and %d+%d slow connections", i+1, o.runs, o.slowB, o.slowH)
		over = append(over, runOverload(ctx, g, o))
	}
	time.Sleep(time.Second)
	var acked []string
	for _, r := range append(append([]result(nil), alone...), over...) {
		acked = append(append(acked, r.b.acked...), r.a.acked...)
	}
	missing, err := missingFromInbox(ctx, st, acked)
	if err != nil {
		return err
	}
	report(stdout, o, st, g, load, alone, over, len(acked), missing, rssKB(g.pid, "VmHWM:"))
	return nil
}

// gatehouse is the running `gatehouse serve`.
type gatehouse struct {
	base, addr string
	pid        int
	stop       func()
}

var listening = regexp.MustCompile(`public=http://(\S+) admin=http://(\S+)`)

func startGatehouse(st *benchenv.Stack, o options) (*gatehouse, error) {
	limits, share := "", ""
	if o.maxInFlight > 0 {
		limits = fmt.Sprintf("ingest: {max_in_flight: %d}\n", o.maxInFlight)
	}
	if o.share > 0 {
		share = fmt.Sprintf("    max_in_flight: %d\n", o.share)
	}
	cfg := limits + fmt.Sprintf(`listen: "127.0.0.1:0"
admin_listen: "127.0.0.1:0"
database_url: %q
log_level: info
providers:
  a:
    scheme: reference
    timestamp_header: %[2]s
    signature_header: %[3]s
    secrets: [{id: s1, value: %[4]q}]
%[5]s  b:
    scheme: reference
    timestamp_header: %[2]s
    signature_header: %[3]s
    secrets: [{id: s1, value: %[4]q}]
%[5]s`, st.DBURL, tsHeader, sigHeader, secret, share)
	path := filepath.Join(st.Dir, "overload.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		return nil, err
	}
	logf, err := os.Create(o.receiverLog)
	if err != nil {
		return nil, fmt.Errorf("receiver log: %w", err)
	}
	cmd := exec.Command(o.gatehouse, "serve", "--config", path)
	cmd.Stderr = logf
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", o.gatehouse, err)
	}
	stop := func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		logf.Close()
	}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if m := listening.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
			}
		}
		close(found)
	}()
	select {
	case addr, ok := <-found:
		if !ok {
			stop()
			return nil, errors.New("gatehouse serve exited before listening (see -receiver-log)")
		}
		return &gatehouse{base: "http://" + addr, addr: addr, pid: cmd.Process.Pid, stop: stop}, nil
	case <-time.After(30 * time.Second):
		stop()
		return nil, errors.New("gatehouse serve did not print its address within 30s")
	}
}

// result is one run.
type result struct {
	a, b         *outcome
	body, header *slow
	peakRSSKB    int64
}

func runAlone(ctx context.Context, g *gatehouse, o options) result {
	r := result{a: newOutcome("x"), b: newOutcome(fmt.Sprintf("b%d-", time.Now().UnixNano())), body: &slow{}, header: &slow{}}
	var rss rssSampler
	sctx, cancel := context.WithCancel(ctx)
	go rss.run(sctx, g.pid)
	openLoop(ctx, g.base, "b", o.rate, o.d, r.b)
	cancel()
	r.peakRSSKB = rss.peakKB.Load()
	return r
}

func runOverload(ctx context.Context, g *gatehouse, o options) result {
	stamp := time.Now().UnixNano()
	r := result{a: newOutcome(fmt.Sprintf("a%d-", stamp)), b: newOutcome(fmt.Sprintf("b%d-", stamp)), body: &slow{}, header: &slow{}}
	var rss rssSampler
	sctx, cancel := context.WithCancel(ctx)
	go rss.run(sctx, g.pid)
	done := make(chan struct{}, 3)
	// The slow clients aim at B's own endpoint: without B's secret they
	// must not take B's slots.
	go func() { slowClients(ctx, g.addr, "b", o.slowB, true, o.d+time.Second, r.body); done <- struct{}{} }()
	go func() { slowClients(ctx, g.addr, "b", o.slowH, false, o.d+time.Second, r.header); done <- struct{}{} }()
	go func() { closedLoop(ctx, g.base, "a", o.flood, o.d+time.Second, r.a); done <- struct{}{} }()
	time.Sleep(500 * time.Millisecond) // the attack is under way when B starts
	openLoop(ctx, g.base, "b", o.rate, o.d, r.b)
	for range 3 {
		<-done
	}
	cancel()
	r.peakRSSKB = rss.peakKB.Load()
	return r
}

// missingFromInbox counts the acknowledged ids the inbox does not hold.
func missingFromInbox(ctx context.Context, st *benchenv.Stack, ids []string) (int, error) {
	found, total := 0, len(ids)
	for len(ids) > 0 {
		n := min(len(ids), 10000)
		var c int
		if err := st.Pool.QueryRow(ctx, `SELECT count(*) FROM inbox WHERE provider IN ('a', 'b') AND event_id = ANY($1)`, ids[:n]).Scan(&c); err != nil {
			return 0, fmt.Errorf("look up acknowledged events: %w", err)
		}
		found += c
		ids = ids[n:]
	}
	return total - found, nil
}

func readFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	return string(b), err
}
