package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gatehouse/gatehouse/internal/testenv"
	"github.com/gatehouse/gatehouse/schemas"
)

// TestClusterLeaderKilledMidStream runs the production topology through the
// real binary on a three-node KRaft cluster (replication factor 3,
// min.insync.replicas 2): serve, relay and three `consume` processes in one
// group. While signed webhooks stream in, the leader of a partition of the
// provider's topic is SIGKILLed; later it comes back. Every acknowledged
// event reaches the topic, the first arrivals of each object keep the order
// they were sent in, every event ends succeeded or ignored_stale with at
// most one effect, nothing needed a restart, and the ISR recovers to three.
func TestClusterLeaderKilledMidStream(t *testing.T) {
	cluster := testenv.PrivateKafkaCluster(t)
	dbURL := testenv.PostgresUnmigrated(t)

	// The provider's API: an object's version is the number of events sent
	// for it so far (the authoritative state moves with the events).
	var mu sync.Mutex
	versions := map[string]int{}
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := strings.TrimPrefix(r.URL.Path, "/v1/payments/")
		mu.Lock()
		v := versions[id]
		mu.Unlock()
		fmt.Fprintf(w, `{"id":%q,"version":%d}`, id, v)
	}))
	defer api.Close()

	topic := "cluster.events." + strconv.FormatInt(time.Now().UnixNano(), 36)
	cfgPath := writeConfigYAML(t, fmt.Sprintf(`kafka:
  partitions: 3
  replication_factor: 3
  topic_configs: {min.insync.replicas: "2"}
consumers:
  group: cluster-%[1]s
  retry_delays: [200ms, 400ms, 800ms]
`+demoProvider+`    topic: %[1]s
    api_url: %[2]s
`, topic, api.URL))
	t.Setenv("GATEHOUSE_KAFKA_BROKERS", strings.Join(cluster.Brokers(), ","))
	if out, err := gatehouse(t, dbURL, "migrate", "--config", cfgPath).CombinedOutput(); err != nil {
		t.Fatalf("migrate: %v %s", err, out)
	}
	srv := startServe(t, dbURL, cfgPath)
	relayProc, _ := startLong(t, dbURL, "relay", "--config", cfgPath)
	var consumers []*process
	for range 3 {
		p, _ := startLong(t, dbURL, "consume", "--config", cfgPath)
		consumers = append(consumers, p)
	}
	ctx := context.Background()
	if _, err := cluster.Leader(ctx, topic, 0); err != nil {
		t.Fatalf("topic %s: %v", topic, err)
	}

	const objects, perObject = 12, 40
	var (
		ackMu sync.Mutex
		acked []string
		sent  = map[string][]string{} // object → event ids in send order
	)
	send := func(obj string, n int) {
		mu.Lock()
		versions[obj] = n
		mu.Unlock()
		id := fmt.Sprintf("evt_%s_%03d", obj, n)
		body := fmt.Sprintf(`{"id":%q,"type":"payment.updated","created_at":"2026-01-01T00:00:00Z","data":{"payment_id":%q}}`, id, obj)
		for attempt := 0; attempt < 50; attempt++ { // a provider retries until 2xx
			resp, err := http.DefaultClient.Do(signedRequest(ctx, srv.public, body))
			if err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == http.StatusNoContent {
					ackMu.Lock()
					acked = append(acked, id)
					sent[obj] = append(sent[obj], id)
					ackMu.Unlock()
					return
				}
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Errorf("%s never acknowledged", id)
	}
	var wg sync.WaitGroup
	killed := make(chan int32, 1)
	for o := range objects {
		wg.Add(1)
		go func() {
			defer wg.Done()
			obj := fmt.Sprintf("pay_%02d", o)
			for n := 1; n <= perObject; n++ {
				send(obj, n)
				if o == 0 && n == perObject/3 {
					leader, err := cluster.Leader(ctx, topic, 0)
					if err != nil {
						t.Error(err)
						continue
					}
					if err := cluster.Node(leader).Kill(); err != nil {
						t.Error(err)
					}
					killed <- leader
				}
				time.Sleep(5 * time.Millisecond)
			}
		}()
	}
	wg.Wait()
	leader := <-killed
	t.Logf("SIGKILLed node %d (leader of %s/0) mid-stream; %d events acknowledged", leader, topic, len(acked))

	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	waitFinal := func(what string) {
		t.Helper()
		deadline := time.Now().Add(3 * time.Minute)
		for {
			var open int
			_ = conn.QueryRow(ctx, `SELECT count(*) FROM inbox WHERE processing_state NOT IN ('succeeded', 'ignored_stale')`).Scan(&open)
			if open == 0 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d events not final; relay stderr:\n%s\nconsumer stderr:\n%s", what, open, relayProc.stderr, consumers[0].stderr)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	waitFinal("with a node down")

	if err := cluster.Node(leader).Restart(ctx); err != nil {
		t.Fatalf("restart node %d: %v", leader, err)
	}
	if err := cluster.WaitISR(ctx, topic, 3); err != nil {
		t.Fatalf("ISR after the node came back: %v", err)
	}

	// Every acknowledged event is on the topic; first arrivals per object
	// are in send order.
	recs := readAll(t, cluster.Brokers(), topic, len(acked))
	first := map[string]bool{}
	order := map[string][]string{}
	for _, r := range recs {
		d, err := schemas.Decode(r)
		if err != nil {
			t.Fatalf("record at %s/%d@%d: %v", r.Topic, r.Partition, r.Offset, err)
		}
		if !first[d.EventID] {
			first[d.EventID] = true
			order[d.Key] = append(order[d.Key], d.EventID)
		}
	}
	for _, id := range acked {
		if !first[id] {
			t.Errorf("acknowledged %s is not on the topic", id)
		}
	}
	for obj, want := range sent {
		if got := order[obj]; strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("object %s: first arrivals %v, sent %v", obj, got, want)
		}
	}
	var inbox, twice int
	if err := conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM inbox),
  (SELECT count(*) FROM (SELECT event_id FROM provider_object_changes GROUP BY provider, event_id HAVING count(*) > 1) x)`).Scan(&inbox, &twice); err != nil {
		t.Fatal(err)
	}
	if inbox != len(acked) || twice != 0 {
		t.Fatalf("inbox rows %d for %d acknowledged events; events applied twice: %d", inbox, len(acked), twice)
	}
	var stale int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM provider_objects WHERE version <> $1`, perObject).Scan(&stale); err != nil || stale != 0 {
		t.Fatalf("objects not at their newest version: %d (%v)", stale, err)
	}
	// Nothing was restarted: every process is still the one started above.
	for _, p := range append([]*process{srv, relayProc}, consumers...) {
		if p.cmd.ProcessState != nil {
			t.Fatalf("%s exited: %v", p.cmd.Args[1], p.cmd.ProcessState)
		}
	}
	for _, p := range append([]*process{srv, relayProc}, consumers...) {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
	}
}

// readAll reads topic from the start until it holds at least n distinct
// event ids or a minute passes.
func readAll(t *testing.T, brokers []string, topic string, n int) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out []*kgo.Record
	ids := map[string]bool{}
	for len(ids) < n && ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			out = append(out, r)
			ids[schemas.Headers(r)[schemas.HeaderID]] = true
		})
	}
	// Pick up records appended right behind the n-th id.
	pctx, pcancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer pcancel()
	cl.PollFetches(pctx).EachRecord(func(r *kgo.Record) { out = append(out, r) })
	return out
}
