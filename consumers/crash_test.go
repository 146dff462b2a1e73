package consumers

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gatehouse/gatehouse/consumers/fetch"
	"github.com/gatehouse/gatehouse/internal/kafka"
	"github.com/gatehouse/gatehouse/internal/settings"
	"github.com/gatehouse/gatehouse/schemas"
)

// childEnv carries a childSpec: the test binary then runs as a consumer
// process (so a test can SIGKILL it) instead of running tests.
const childEnv = "GATEHOUSE_TEST_CONSUMER_CHILD"

type childSpec struct {
	Brokers  []string        `json:"brokers"`
	DB       string          `json:"db"`
	Provider string          `json:"provider"`
	Topic    string          `json:"topic"`
	Group    string          `json:"group"`
	APIURL   string          `json:"api_url"`
	APIKey   string          `json:"api_key"`
	Delays   []time.Duration `json:"delays"`
	MaxPoll  int             `json:"max_poll"`
}

func runChild() int {
	var s childSpec
	if err := json.Unmarshal([]byte(os.Getenv(childEnv)), &s); err != nil {
		fmt.Fprintln(os.Stderr, "child spec:", err)
		return 2
	}
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, s.DB)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	api, err := fetch.NewAPIClient(fetch.APIClientConfig{BaseURL: s.APIURL, Key: []byte(s.APIKey), Version: "2026-01-01"})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	reg := NewRegistry()
	registerCatalogue(reg, s.Provider, "reference", api)
	r, err := New(Config{
		Consumers: settings.Consumers{Group: s.Group, RetryDelays: s.Delays, SessionTimeout: 6 * time.Second,
			MaxPollRecords: cmp.Or(s.MaxPoll, 500), Concurrency: 16, DrainTimeout: 30 * time.Second},
		Brokers: s.Brokers, Topics: map[string]string{s.Provider: s.Topic},
		Pool: pool, Handlers: reg, TopicSpec: kafka.TopicSpec{Partitions: 3},
		KafkaOpts: []kgo.Opt{kgo.HeartbeatInterval(500 * time.Millisecond), kgo.FetchMaxWait(200 * time.Millisecond)},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if err := r.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// A consumer process killed with SIGKILL while it works through a backlog in
// batches (ten records a poll) loses nothing: a new member resumes from the
// committed offsets, redelivered records are recognised by event id, every
// effect happens once.
func TestConsumerKilledMidBatch(t *testing.T) {
	f := newFixture(t)
	const n = 150
	evs := ids("evt_kill_", n)
	for i, id := range evs {
		pay := fmt.Sprintf("pay_kill_%d", i)
		f.api.setPayment(pay, 1, "succeeded")
		f.ingest(id, "payment.succeeded", pay)
	}
	f.api.mu.Lock()
	f.api.delay = 50 * time.Millisecond // keep the child busy inside its batch
	f.api.mu.Unlock()
	spec, _ := json.Marshal(childSpec{Brokers: f.brokers, DB: f.dbURL, Provider: f.provider, Topic: f.topic, Group: f.group,
		APIURL: f.api.srv.URL, APIKey: f.api.key, Delays: f.delays, MaxPoll: 10})
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+string(spec))
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	f.relay()
	// Kill once the child has processed part of the events, mid-batch.
	deadline := time.Now().Add(60 * time.Second)
	for {
		var done int
		if err := f.pool.QueryRow(context.Background(), `SELECT count(*) FROM processed_events`).Scan(&done); err != nil {
			t.Fatal(err)
		}
		if done >= n/3 {
			break
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatalf("child processed only %d events", done)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	var before int
	_ = f.pool.QueryRow(context.Background(), `SELECT count(*) FROM processed_events`).Scan(&before)
	if before >= n {
		t.Fatalf("child finished all %d events before the kill; the test did not cut a batch", n)
	}
	t.Logf("killed the child after %d of %d events", before, n)

	f.api.mu.Lock()
	f.api.delay = 0
	f.api.mu.Unlock()
	f.start(f.config(nil))
	f.waitState(schemas.StateSucceeded, 90*time.Second, evs...)
	eff := f.effects()
	applied := 0
	for _, id := range evs {
		if eff[id] > 1 {
			t.Errorf("event %s applied %d times", id, eff[id])
		}
		applied += eff[id]
	}
	if applied != n {
		t.Errorf("effects = %d, want %d (one per event)", applied, n)
	}
	var processed int
	_ = f.pool.QueryRow(context.Background(), `SELECT count(*) FROM processed_events`).Scan(&processed)
	if processed != n {
		t.Errorf("processed_events = %d, want %d", processed, n)
	}
}
