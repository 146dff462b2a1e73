package relay

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gatehouse/gatehouse/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// env is one relay test's world: a database, a slot name, a topic and the
// brokers.
type env struct {
	t       testing.TB
	mode    string
	dbURL   string
	pool    *pgxpool.Pool
	brokers []string
	slot    string
	topic   string // rows go to topic (provider "prov") unless told otherwise
	tune    func(*Config)
}

func newEnv(t testing.TB, mode string, brokers []string, dbURL string) *env {
	t.Helper()
	if dbURL == "" {
		dbURL = testenv.Postgres(t)
	}
	// Tiny decoding memory makes PostgreSQL stream every transaction larger
	// than 64kB to the relay before it commits (protocol v2 streaming).
	dbURL += "&options=-c%20logical_decoding_work_mem%3D64kB"
	pool, err := pgxpool.New(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	id := randHex(4)
	e := &env{t: t, mode: mode, dbURL: dbURL, pool: pool, brokers: brokers,
		slot: "relay_" + id, topic: "test." + id + ".prov"}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, _ = pool.Exec(ctx, `SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = $1 AND NOT active`, e.slot)
	})
	return e
}

func (e *env) config(reg prometheus.Registerer) Config {
	rc := Settings{Mode: e.mode, Slot: e.slot, Publication: "gatehouse_outbox", RepublishAfter: 2 * time.Second,
		StatusInterval: 100 * time.Millisecond, HeartbeatInterval: 200 * time.Millisecond, PollInterval: 20 * time.Millisecond,
		BatchSize: 500, MetricsInterval: 200 * time.Millisecond}
	kc := Kafka{Brokers: e.brokers, ClientID: "relay-test", Partitions: 3, ReplicationFactor: 1}
	lvl := slog.LevelWarn
	if os.Getenv("RELAY_TEST_DEBUG") != "" {
		lvl = slog.LevelDebug
	}
	cfg := Config{Pool: e.pool, DatabaseURL: e.dbURL, Relay: rc, Kafka: kc, Topics: []string{e.topic},
		Logger:     slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lvl})).With("test", e.t.Name()),
		Registerer: reg, RetryInterval: 200 * time.Millisecond}
	if e.tune != nil {
		e.tune(&cfg)
	}
	return cfg
}

// running is an in-process relay.
type running struct {
	r      *Relay
	reg    *prometheus.Registry
	cancel context.CancelFunc
	done   chan error
}

// start runs a relay and waits until it publishes (holds the lock and
// streams or polls).
func (e *env) start() *running {
	e.t.Helper()
	rn := e.startNoWait()
	select {
	case <-rn.r.Ready():
	case <-time.After(30 * time.Second):
		e.t.Fatal("relay not ready after 30s")
	}
	return rn
}

// startNoWait runs a relay without waiting for it to become active.
func (e *env) startNoWait() *running {
	e.t.Helper()
	reg := prometheus.NewRegistry()
	r, err := New(e.config(reg))
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	rn := &running{r: r, reg: reg, cancel: cancel, done: make(chan error, 1)}
	go func() { rn.done <- r.Run(ctx) }()
	e.t.Cleanup(rn.stop)
	return rn
}

func (rn *running) stop() {
	if rn.cancel == nil {
		return
	}
	rn.cancel()
	<-rn.done
	rn.r.Close()
	rn.cancel = nil
}

// event is one outbox row a test writes.
type event struct {
	ID      string // outbox id
	Key     string
	Version int
	Topic   string
	EventID string
}

func payload(ev event) string {
	b, _ := json.Marshal(map[string]any{"id": ev.EventID, "type": "test.changed", "created_at": "2026-01-02T03:04:05Z",
		"data": map[string]any{"object_id": ev.Key, "version": ev.Version}})
	return string(b)
}

// newEvents makes n events for key with versions from, from+1, ….
func (e *env) newEvents(key string, from, n int) []event {
	out := make([]event, n)
	for i := range out {
		v := from + i
		out[i] = event{ID: uuid.NewString(), Key: key, Version: v, Topic: e.topic, EventID: fmt.Sprintf("evt_%s_%d_%s", key, v, randHex(3))}
	}
	return out
}

const insertSQL = `INSERT INTO outbox (id, aggregatetype, aggregateid, type, payload, event_id, topic)
SELECT id, 'prov', key, 'test.changed', p::jsonb, eid, topic FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::text[]) AS t(id, key, p, eid, topic)`

func insertArgs(evs []event) []any {
	ids, keys, ps, eids, topics := make([]string, len(evs)), make([]string, len(evs)), make([]string, len(evs)), make([]string, len(evs)), make([]string, len(evs))
	for i, ev := range evs {
		ids[i], keys[i], ps[i], eids[i], topics[i] = ev.ID, ev.Key, payload(ev), ev.EventID, ev.Topic
	}
	return []any{ids, keys, ps, eids, topics}
}

// insert writes evs in one transaction (in order).
func (e *env) insert(ctx context.Context, evs []event) error {
	_, err := e.pool.Exec(ctx, insertSQL, insertArgs(evs)...)
	return err
}

func (e *env) mustInsert(evs ...event) {
	e.t.Helper()
	if err := e.insert(context.Background(), evs); err != nil {
		e.t.Fatal(err)
	}
}

// got is what a test read back from Kafka.
type got struct {
	recs   []*kgo.Record
	firsts map[string]int // outbox id -> index of its first record
}

// collect reads topics from the start until every id in want was seen (and
// then a short moment more for duplicates) or timeout, which fails the test.
func collect(t testing.TB, brokers []string, topics []string, want []event, timeout time.Duration) *got {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topics...),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	need := map[string]bool{}
	for _, ev := range want {
		need[ev.ID] = true
	}
	g := &got{firsts: map[string]int{}}
	deadline := time.Now().Add(timeout)
	for len(need) > 0 && time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		fs := cl.PollFetches(ctx)
		cancel()
		fs.EachRecord(func(r *kgo.Record) {
			id := header(r, "gatehouse_outbox_id")
			if _, ok := g.firsts[id]; !ok {
				g.firsts[id] = len(g.recs)
			}
			g.recs = append(g.recs, r)
			delete(need, id)
		})
	}
	if len(need) > 0 {
		var missing []string
		for id := range need {
			missing = append(missing, id)
		}
		sort.Strings(missing)
		if len(missing) > 5 {
			missing = missing[:5]
		}
		t.Fatalf("%d of %d outbox rows never reached Kafka within %v (e.g. %v); read %d records", len(need), len(want), timeout, missing, len(g.recs))
	}
	return g
}

func header(r *kgo.Record, key string) string {
	for _, h := range r.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

// checkOrder asserts that, per key, the first occurrences of the rows are in
// version order, and that each record's key is the row's key.
func checkOrder(t testing.TB, g *got, want []event) {
	t.Helper()
	byID := map[string]event{}
	for _, ev := range want {
		byID[ev.ID] = ev
	}
	last := map[string]int{}
	seen := map[string]bool{}
	for _, r := range g.recs {
		id := header(r, "gatehouse_outbox_id")
		ev, ok := byID[id]
		if !ok || seen[id] {
			continue
		}
		seen[id] = true
		if string(r.Key) != ev.Key {
			t.Fatalf("record of %s has key %q, want %q", id, r.Key, ev.Key)
		}
		if prev, ok := last[ev.Key]; ok && ev.Version < prev {
			t.Fatalf("key %s: version %d first appeared after version %d", ev.Key, ev.Version, prev)
		}
		last[ev.Key] = ev.Version
	}
}

// dups counts records beyond the first per outbox id.
func (g *got) dups() int { return len(g.recs) - len(g.firsts) }

// waitFor polls cond every 50ms until it holds or timeout fails the test.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// unsent counts outbox rows the slot's cursor (the default one before the
// relay first ran) has not passed.
func (e *env) unsent() int {
	var n int
	if err := e.pool.QueryRow(context.Background(), `SELECT count(*) FROM outbox o,
		(SELECT snap FROM outbox_cursor WHERE slot IN ($1, '*') ORDER BY slot = '*' LIMIT 1) c
		WHERE NOT pg_visible_in_snapshot(o.txid, c.snap)`, e.slot).Scan(&n); err != nil {
		e.t.Fatal(err)
	}
	return n
}

// writer writes events for keys concurrently (one goroutine per key group,
// per-key sequential), in transactions of 1..maxTx rows, until n events per
// key were written or stop is closed; it returns the committed events.
func (e *env) writer(ctx context.Context, keys []string, perKey, maxTx int, pause time.Duration) []event {
	var (
		mu  sync.Mutex
		out []event
		wg  sync.WaitGroup
	)
	groups := 4
	for g := 0; g < groups; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []string
			for i, k := range keys {
				if i%groups == g {
					mine = append(mine, k)
				}
			}
			next := map[string]int{}
			for round := 0; ; round++ {
				var batch []event
				for _, k := range mine {
					if next[k] >= perKey {
						continue
					}
					n := min(1+round%maxTx, perKey-next[k])
					batch = append(batch, e.newEvents(k, next[k], n)...)
				}
				if len(batch) == 0 || ctx.Err() != nil {
					return
				}
				if err := e.insert(ctx, batch); err != nil {
					// Unknown outcome (e.g. the server restarted): the rows
					// are found in the table afterwards if they committed.
					time.Sleep(100 * time.Millisecond)
					continue
				}
				for _, ev := range batch {
					next[ev.Key] = ev.Version + 1
				}
				mu.Lock()
				out = append(out, batch...)
				mu.Unlock()
				time.Sleep(pause)
			}
		}()
	}
	wg.Wait()
	return out
}

// value reads a gauge or counter.
func value(c prometheus.Collector) float64 {
	ch := make(chan prometheus.Metric, 1)
	c.Collect(ch)
	var m dto.Metric
	if err := (<-ch).Write(&m); err != nil {
		return -1
	}
	switch {
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Counter != nil:
		return m.Counter.GetValue()
	}
	return -1
}

// privatePG starts a PostgreSQL cluster of the test's own (durable commits:
// fsync and synchronous_commit on) and returns it with a migrated
// database's URL: for tests that restart the server or change its
// configuration.
func privatePG(t *testing.T, ctx context.Context) (*testenv.PG, string) {
	t.Helper()
	pg, err := testenv.StartPG(ctx, t.TempDir(), false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pg.Stop(true) })
	dbURL, err := testenv.CreateDatabase(ctx, pg.AdminURL(), true)
	if err != nil {
		t.Fatal(err)
	}
	return pg, dbURL
}
