package relay

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/internal/testenv"
)

var builtBinary struct {
	once sync.Once
	path string
	err  error
}

// gatehouseBinary builds cmd/gatehouse once per test binary.
func gatehouseBinary(t *testing.T) string {
	t.Helper()
	builtBinary.once.Do(func() {
		root, err := testenv.RepoRoot()
		if err != nil {
			builtBinary.err = err
			return
		}
		dir, err := os.MkdirTemp("", "gatehouse-relay-bin-")
		if err != nil {
			builtBinary.err = err
			return
		}
		builtBinary.path = filepath.Join(dir, "gatehouse")
		cmd := exec.Command("go", "build", "-o", builtBinary.path, "./cmd/gatehouse")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			builtBinary.err = fmt.Errorf("go build ./cmd/gatehouse: %v\n%s", err, out)
		}
	})
	if builtBinary.err != nil {
		t.Fatal(builtBinary.err)
	}
	return builtBinary.path
}

// proc is one `gatehouse relay` process.
type proc struct {
	cmd  *exec.Cmd
	log  string
	done chan struct{}
}

func (e *env) writeConfig(t *testing.T) string {
	t.Helper()
	cfg := fmt.Sprintf(`database_url: %q
admin_listen: "127.0.0.1:0"
log_level: info
kafka:
  brokers: [%q]
  client_id: relay-kill-test
  partitions: 3
relay:
  mode: %s
  slot: %s
  republish_after: 3s
  status_interval: 100ms
  heartbeat_interval: 200ms
  poll_interval: 20ms
  batch_size: 200
  metrics_interval: 1s
`, e.dbURL, e.brokers[0], e.mode, e.slot)
	path := filepath.Join(t.TempDir(), "gatehouse.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func startProc(t *testing.T, bin, cfg string, n int) *proc {
	t.Helper()
	p := &proc{log: filepath.Join(filepath.Dir(cfg), fmt.Sprintf("relay-%02d.log", n)), done: make(chan struct{})}
	f, err := os.Create(p.log)
	if err != nil {
		t.Fatal(err)
	}
	p.cmd = exec.Command(bin, "relay", "--config", cfg)
	p.cmd.Stdout, p.cmd.Stderr = f, f
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = p.cmd.Wait(); f.Close(); close(p.done) }()
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			b, _ := os.ReadFile(p.log)
			if len(b) > 4000 {
				b = b[len(b)-4000:]
			}
			t.Logf("--- %s ---\n%s", filepath.Base(p.log), b)
		}
	})
	return p
}

func (p *proc) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

func (p *proc) active() bool {
	b, _ := os.ReadFile(p.log)
	return bytes.Contains(b, []byte(`"msg":"relay active"`))
}

// TestKillRelayProcess SIGKILLs real relay processes at random moments
// while events flow, always with a standby process waiting for the lock:
// every outbox row reaches its topic, per-key order holds, the standby
// takes over, and the slot ends confirmed past the last insert.
func TestKillRelayProcess(t *testing.T) {
	brokers := testenv.KafkaForTest(t)
	bin := gatehouseBinary(t)
	for _, mode := range []string{ModeReplication, ModePoll} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, mode, brokers, "")
			cfg := e.writeConfig(t)
			n := 0
			next := func() *proc { n++; return startProc(t, bin, cfg, n) }
			activeP, standby := next(), next()
			waitFor(t, 30*time.Second, "a relay process active", func() bool { return activeP.active() || standby.active() })
			if !activeP.active() {
				activeP, standby = standby, activeP
			}

			var keys []string
			for i := range 24 {
				keys = append(keys, fmt.Sprintf("k%02d", i))
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			written := make(chan []event, 1)
			go func() { written <- e.writer(ctx, keys, 120, 3, 80*time.Millisecond) }()

			kills := 0
			var evs []event
		loop:
			for {
				select {
				case evs = <-written:
					break loop
				case <-time.After(time.Duration(300+rand.IntN(1200)) * time.Millisecond):
				}
				activeP.kill()
				kills++
				killedAt := time.Now()
				waitFor(t, 30*time.Second, "standby takes over", standby.active)
				t.Logf("kill %d: standby active %v after SIGKILL", kills, time.Since(killedAt).Round(10*time.Millisecond))
				activeP, standby = standby, next()
			}
			if kills < 2 {
				t.Fatalf("only %d kills happened while events flowed; the writer finished too fast", kills)
			}
			want := evs
			g := collect(t, e.brokers, []string{e.topic}, want, 90*time.Second)
			checkOrder(t, g, want)
			waitFor(t, 30*time.Second, "the cursor passing every row", func() bool { return e.unsent() == 0 })
			if mode == ModeReplication {
				after := currentLSN(t, e)
				waitFor(t, 30*time.Second, "slot confirmed past the last insert", func() bool {
					var ok bool
					err := e.pool.QueryRow(context.Background(), `SELECT confirmed_flush_lsn >= $2::pg_lsn FROM pg_replication_slots
						WHERE slot_name = $1`, e.slot, after).Scan(&ok)
					return err == nil && ok
				})
			}
			t.Logf("%s: %d rows, %d kills, %d records (%d duplicates)", mode, len(want), kills, len(g.recs), g.dups())
		})
	}
}

// TestKafkaRestart crashes (SIGKILL) or stops (SIGTERM) the broker and
// starts it again while the relay publishes: nothing is lost, per-key order
// holds and, in replication mode, the relay leaves no published row behind:
// the outbox ends empty without the dispatcher re-publishing anything and
// every finish found its row (a commit streamed a moment before it is
// visible is looked for again).
func TestKafkaRestart(t *testing.T) {
	for _, c := range []struct {
		mode string
		sig  syscall.Signal
	}{{ModeReplication, syscall.SIGKILL}, {ModeReplication, syscall.SIGTERM}, {ModePoll, syscall.SIGKILL}} {
		t.Run(c.mode+"/"+c.sig.String(), func(t *testing.T) {
			k := testenv.PrivateKafka(t)
			e := newEnv(t, c.mode, k.Brokers, "")
			rn := e.start()
			chaosDuring(t, e, rn, func() {
				stop := k.Kill
				if c.sig == syscall.SIGTERM {
					stop = k.Stop
				}
				if err := stop(); err != nil {
					t.Fatal(err)
				}
				time.Sleep(time.Second)
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				defer cancel()
				if err := k.Restart(ctx); err != nil {
					t.Fatal(err)
				}
			})
			if c.mode != ModeReplication {
				return
			}
			// Past republish_after: a row left behind would have been
			// re-published by now.
			time.Sleep(e.config(nil).Relay.RepublishAfter + time.Second)
			if n := value(rn.r.m.published.WithLabelValues(e.topic, pathDispatcher)); n != 0 {
				t.Errorf("the dispatcher re-published %v rows the stream had published", n)
			}
			waitFor(t, 10*time.Second, "the cursor passing every row", func() bool { return e.unsent() == 0 })
		})
	}
}

// TestPostgresRestart crashes (immediate stop) and restarts PostgreSQL
// while the relay publishes: it reconnects and nothing is lost.
func TestPostgresRestart(t *testing.T) {
	brokers := testenv.KafkaForTest(t)
	for _, mode := range []string{ModeReplication, ModePoll} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			// Durable commits (fsync and synchronous_commit on): a crash
			// must not take back a commit the writer saw succeed.
			pg, dbURL := privatePG(t, ctx)
			e := newEnv(t, mode, brokers, dbURL)
			rn := e.start()
			chaosDuring(t, e, rn, func() {
				if err := pg.Stop(true); err != nil {
					t.Fatal(err)
				}
				time.Sleep(500 * time.Millisecond)
				if err := pg.Start(ctx); err != nil {
					t.Fatal(err)
				}
			})
		})
	}
}

// chaosDuring writes events, runs disrupt once some were published, and
// checks that every row whose commit was acknowledged reaches Kafka in
// per-key order.
func chaosDuring(t *testing.T, e *env, rn *running, disrupt func()) {
	var keys []string
	for i := range 12 {
		keys = append(keys, fmt.Sprintf("c%02d", i))
	}
	written := make(chan []event, 1)
	go func() { written <- e.writer(context.Background(), keys, 80, 3, 10*time.Millisecond) }()
	waitFor(t, 60*time.Second, "some records published", func() bool {
		n := 0.0
		for _, path := range []string{pathStream, pathPoll, pathDispatcher, pathSnapshot} {
			n += value(rn.r.m.published.WithLabelValues(e.topic, path))
		}
		return n >= 100
	})
	disrupt()
	// Rows whose commit the writer saw fail are not expected (they may or
	// may not have committed); every acknowledged commit must arrive.
	want := <-written
	g := collect(t, e.brokers, []string{e.topic}, want, 120*time.Second)
	checkOrder(t, g, want)
	waitFor(t, 60*time.Second, "the cursor passing every row", func() bool { return e.unsent() == 0 })
	t.Logf("%d rows, %d records (%d duplicates)", len(want), len(g.recs), g.dups())
}

// TestIdleSlotLag writes WAL the publication does not carry (inbox rows)
// after some outbox traffic: keepalives and heartbeats move the slot, so its
// lag returns near zero instead of pinning the WAL.
func TestIdleSlotLag(t *testing.T) {
	e := newEnv(t, ModeReplication, testenv.KafkaForTest(t), "")
	rn := e.start()
	evs := e.newEvents("idle", 0, 20)
	e.mustInsert(evs...)
	collect(t, e.brokers, []string{e.topic}, evs, 30*time.Second)
	ctx := context.Background()
	// The insert position, not pg_current_wal_lsn (the write position): the
	// test cluster runs with synchronous_commit off, so a commit returns
	// before its WAL is written and the write position may not have moved.
	walNow := func() (lsn string) {
		if err := e.pool.QueryRow(ctx, `SELECT pg_current_wal_insert_lsn()::text`).Scan(&lsn); err != nil {
			t.Fatal(err)
		}
		return lsn
	}
	before := walNow()
	if _, err := e.pool.Exec(ctx, `INSERT INTO inbox (provider, event_id, event_type, payload, verified, secret_id)
		SELECT 'other', 'e' || g, 't', jsonb_build_object('pad', repeat('x', 500)), true, 's' FROM generate_series(1, 5000) g`); err != nil {
		t.Fatal(err)
	}
	after := walNow()
	// Precondition: the unrelated insert wrote enough WAL that a slot which
	// did not advance would show it. (Measured as WAL written, not as lag:
	// an idle relay may already have confirmed past it, which is the point.)
	var written int64
	if err := e.pool.QueryRow(ctx, `SELECT pg_wal_lsn_diff($1::pg_lsn, $2::pg_lsn)::bigint`, after, before).Scan(&written); err != nil {
		t.Fatal(err)
	}
	if written < 1<<20 {
		t.Fatalf("the inbox insert wrote only %d bytes of WAL; the test needs more", written)
	}
	lag := func() int64 {
		var n int64
		if err := e.pool.QueryRow(ctx, `SELECT (pg_current_wal_lsn() - confirmed_flush_lsn)::bigint FROM pg_replication_slots WHERE slot_name = $1`, e.slot).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	waitFor(t, 30*time.Second, "slot confirmed past the unrelated WAL", func() bool {
		var past bool
		if err := e.pool.QueryRow(ctx, `SELECT confirmed_flush_lsn >= $2::pg_lsn FROM pg_replication_slots WHERE slot_name = $1`, e.slot, after).Scan(&past); err != nil {
			t.Fatal(err)
		}
		return past
	})
	waitFor(t, 30*time.Second, "slot lag under 64 kB", func() bool { return lag() < 64<<10 })
	waitFor(t, 10*time.Second, "lag metric under 64 kB", func() bool {
		v := value(rn.r.m.lagBytes)
		return v >= 0 && v < 64<<10
	})
}
