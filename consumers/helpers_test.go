package consumers

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gatehouse/gatehouse/consumers/fetch"
	"github.com/gatehouse/gatehouse/ingest/inbox"
	"github.com/gatehouse/gatehouse/ingest/relay"
	"github.com/gatehouse/gatehouse/internal/kafka"
	"github.com/gatehouse/gatehouse/internal/settings"
	"github.com/gatehouse/gatehouse/internal/testenv"
	"github.com/gatehouse/gatehouse/schemas"
)

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(runChild())
	}
	testenv.Main(m)
}

// fixture is one test's database, topics and producer.
type fixture struct {
	t        *testing.T
	dbURL    string
	pool     *pgxpool.Pool
	brokers  []string
	provider string
	topic    string
	group    string
	prod     *kgo.Client
	writer   *inbox.Writer
	api      *refAPI
	delays   []time.Duration
	rl       *relay.Relay
}

var fixtureSeq atomic.Int64

func newFixture(t *testing.T) *fixture { return newFixtureFor(t, "ref") }

func newFixtureFor(t *testing.T, provider string) *fixture {
	t.Helper()
	ctx := context.Background()
	f := &fixture{t: t, dbURL: testenv.Postgres(t), brokers: testenv.KafkaForTest(t), provider: provider}
	n := fixtureSeq.Add(1)
	name := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	f.topic = fmt.Sprintf("test.%s.%d.%d", name, time.Now().UnixNano()%1e9, n)
	f.group = "g-" + f.topic
	f.delays = []time.Duration{200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond}
	var err error
	if f.pool, err = pgxpool.New(ctx, f.dbURL); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.pool.Close)
	if f.prod, err = kgo.NewClient(kgo.SeedBrokers(f.brokers...), kgo.ProducerLinger(0)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.prod.Close)
	l := newLayout(map[string]string{f.provider: f.topic}, f.delays)
	if _, err := kafka.EnsureTopics(ctx, kadm.NewClient(f.prod), nil, kafka.TopicSpec{Partitions: 3}, l.all()...); err != nil {
		t.Fatal(err)
	}
	if f.writer, err = inbox.NewWriter(f.pool, 2, 64); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.writer.Close)
	f.api = newRefAPI(t)
	return f
}

func (f *fixture) registry() *Registry {
	r := NewRegistry()
	registerCatalogue(r, f.provider, "reference", f.api.client(f.t))
	return r
}

func (f *fixture) config(reg prometheus.Registerer) Config {
	return Config{
		Consumers: settings.Consumers{Group: f.group, RetryDelays: f.delays,
			SessionTimeout: 6 * time.Second, DrainTimeout: 5 * time.Second, Concurrency: 16, MaxPollRecords: 500},
		Brokers: f.brokers, Topics: map[string]string{f.provider: f.topic},
		Pool: f.pool, Handlers: f.registry(), TopicSpec: kafka.TopicSpec{Partitions: 3},
		KafkaOpts:  []kgo.Opt{kgo.HeartbeatInterval(500 * time.Millisecond), kgo.FetchMaxWait(200 * time.Millisecond)},
		Logger:     testLogger(f.t),
		Registerer: reg,
	}
}

func testLogger(t *testing.T) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// start runs a Runner until the test ends or stop is called.
func (f *fixture) start(cfg Config) (r *Runner, stop func()) {
	f.t.Helper()
	r, err := New(cfg)
	if err != nil {
		f.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				f.t.Errorf("runner: %v", err)
			}
		})
	}
	f.t.Cleanup(stop)
	return r, stop
}

// ingest records a verified delivery the way the receiver does (inbox row
// and outbox row in one statement) and returns whether it was new.
func (f *fixture) ingest(id, typ, paymentID string) bool {
	f.t.Helper()
	return f.ingestData(id, typ, paymentID, map[string]any{"payment_id": paymentID})
}

func (f *fixture) ingestData(id, typ, aggregateID string, data map[string]any) bool {
	f.t.Helper()
	body, _ := json.Marshal(map[string]any{"id": id, "type": typ, "created_at": time.Now().UTC().Format(time.RFC3339),
		"data": data})
	now := time.Now().UTC()
	paymentID := aggregateID
	out, err := f.writer.Write(context.Background(), inbox.Record{
		Provider: f.provider, EventID: id, Type: typ, CreatedAt: &now, Payload: body,
		SecretID: "test", AggregateID: paymentID, Topic: f.topic,
	})
	if err != nil {
		f.t.Fatal(err)
	}
	return out.New
}

// relay publishes the outbox rows its cursor has not passed with the real
// relay's code (ingest/relay, one window of the log). It returns how many.
func (f *fixture) relay() int {
	f.t.Helper()
	n, err := f.publisher().PublishPending(context.Background())
	if err != nil {
		f.t.Fatal(err)
	}
	return n
}

// republish publishes again the outbox rows of the given event id (all
// when ""), exactly as the relay wrote them: the relay's at-least-once
// duplicate. It returns how many.
func (f *fixture) republish(eventID string) int {
	f.t.Helper()
	rows, err := f.pool.Query(context.Background(), `SELECT topic, aggregatetype, event_id, type, aggregateid, id::text, payload::text
		FROM outbox WHERE $1 = '' OR event_id = $1 ORDER BY txid, seq`, eventID)
	if err != nil {
		f.t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var topic, prov, id, typ, key, outboxID, payload string
		if err := rows.Scan(&topic, &prov, &id, &typ, &key, &outboxID, &payload); err != nil {
			f.t.Fatal(err)
		}
		rec := contractRecord(topic, prov, id, typ, key, outboxID, []byte(payload))
		if err := f.prod.ProduceSync(context.Background(), rec).FirstErr(); err != nil {
			f.t.Fatal(err)
		}
		n++
	}
	if err := rows.Err(); err != nil {
		f.t.Fatal(err)
	}
	return n
}

// publisher is the fixture's relay, built on first use.
func (f *fixture) publisher() *relay.Relay {
	if f.rl != nil {
		return f.rl
	}
	rc := relay.Settings{Mode: relay.ModePoll, BatchSize: 500}
	rl, err := relay.New(relay.Config{Pool: f.pool, DatabaseURL: f.dbURL, Relay: rc,
		Kafka: relay.Kafka{Brokers: f.brokers, Partitions: 3}})
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(rl.Close)
	f.rl = rl
	return rl
}

// contractRecord is a record exactly as the relay writes it (the contract
// in schemas.Record).
func contractRecord(topic, provider, eventID, typ, key, outboxID string, payload []byte) *kgo.Record {
	return schemas.Record{Topic: topic, Key: key, Provider: provider, EventID: eventID, Type: typ, OutboxID: outboxID,
		Payload: payload}.Encode()
}

type inboxRow struct {
	State, LastError, LastErrorClass string
	Attempts, Replays                int
}

func (f *fixture) inbox(id string) inboxRow {
	f.t.Helper()
	var r inboxRow
	var a, rp int32
	err := f.pool.QueryRow(context.Background(), `SELECT processing_state, coalesce(last_error,''), coalesce(last_error_class,''), attempts, replays
FROM inbox WHERE provider = $1 AND event_id = $2`, f.provider, id).Scan(&r.State, &r.LastError, &r.LastErrorClass, &a, &rp)
	if err != nil {
		f.t.Fatalf("inbox %s: %v", id, err)
	}
	r.Attempts, r.Replays = int(a), int(rp)
	return r
}

// waitState waits until every listed event is in state.
func (f *fixture) waitState(state string, timeout time.Duration, ids ...string) {
	f.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		var n int
		err := f.pool.QueryRow(context.Background(), `SELECT count(*) FROM inbox WHERE provider = $1 AND event_id = ANY($2) AND processing_state = $3`,
			f.provider, ids, state).Scan(&n)
		if err != nil {
			f.t.Fatal(err)
		}
		if n == len(ids) {
			return
		}
		if time.Now().After(deadline) {
			var states []string
			rows, _ := f.pool.Query(context.Background(), `SELECT event_id || '=' || processing_state FROM inbox WHERE provider = $1 AND event_id = ANY($2) AND processing_state <> $3 LIMIT 10`, f.provider, ids, state)
			for rows.Next() {
				var s string
				_ = rows.Scan(&s)
				states = append(states, s)
			}
			rows.Close()
			f.t.Fatalf("after %v only %d of %d events are %s; others: %v", timeout, n, len(ids), state, states)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// effects returns the number of effect-log rows per event id.
func (f *fixture) effects() map[string]int {
	f.t.Helper()
	rows, err := f.pool.Query(context.Background(), `SELECT event_id, count(*) FROM provider_object_changes WHERE provider = $1 GROUP BY event_id`, f.provider)
	if err != nil {
		f.t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var id string
		var n int
		if err := rows.Scan(&id, &n); err != nil {
			f.t.Fatal(err)
		}
		out[id] = n
	}
	return out
}

// readTopic reads n records of topic from the start (no group).
func (f *fixture) readTopic(topic string, n int, timeout time.Duration) []*kgo.Record {
	f.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(f.brokers...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		f.t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var out []*kgo.Record
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			f.t.Fatalf("topic %s: got %d of %d records", topic, len(out), n)
		}
		out = append(out, fs.Records()...)
	}
	return out
}

func header(rec *kgo.Record, key string) string {
	for _, h := range rec.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

func ids(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = prefix + strconv.Itoa(i)
	}
	return out
}

// registerCatalogue registers for provider the catalogue's fetch rules of
// scheme (fetch.Catalogue) reading through api.
func registerCatalogue(r *Registry, provider, scheme string, api *fetch.APIClient) {
	r.Register(provider, "*", fetch.Catalogue(scheme, api))
}
