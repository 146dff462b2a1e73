package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gatehouse/gatehouse/internal/testenv"
)

// startLong starts a long-running subcommand and returns its process and
// the address printed after "admin=" on its first line.
func startLong(t *testing.T, dbURL string, args ...string) (*process, string) {
	t.Helper()
	p, r := launch(t, dbURL, args...)
	line, err := r.ReadString('\n')
	if err != nil {
		t.Fatalf("%s: no first line: %v; stderr: %s", args[0], err, p.stderr)
	}
	m := regexp.MustCompile(`admin=(\S+)`).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("%s: unexpected first line %q", args[0], line)
	}
	go func() { _, _ = io.Copy(io.Discard, r) }()
	return p, m[1]
}

// The production topology through the real binary: serve, relay and
// consume as separate processes; an event whose object exists succeeds, one
// whose object is missing (404) is dead; `replay --dead` re-enqueues it once
// the object exists and it succeeds.
func TestBinaryConsumeAndReplay(t *testing.T) {
	dbURL := testenv.PostgresUnmigrated(t)
	brokers := testenv.KafkaForTest(t)
	var mu sync.Mutex
	objects := map[string]string{"/v1/payments/pay_ok": `{"id":"pay_ok","version":1,"status":"succeeded"}`}
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		body, ok := objects[r.URL.Path]
		mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer api_key_e2e" || r.Header.Get("Api-Version") != "2026-01-01" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		if !ok {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		_, _ = io.WriteString(w, body)
	}))
	defer api.Close()
	suffix := fmt.Sprint(time.Now().UnixNano())
	cfgPath := writeConfigYAML(t, fmt.Sprintf(`kafka:
  partitions: 2
relay:
  mode: poll
consumers:
  group: e2e-%[1]s
  retry_delays: [200ms, 400ms]
`+demoProvider+`    topic: e2e.consume.%[1]s
    api_url: %[2]s
    api_key: env:E2E_API_KEY
    api_version: "2026-01-01"
`, suffix, api.URL))
	t.Setenv("GATEHOUSE_KAFKA_BROKERS", strings.Join(brokers, ","))
	t.Setenv("E2E_API_KEY", "api_key_e2e")
	if out, err := gatehouse(t, dbURL, "migrate", "--config", cfgPath).CombinedOutput(); err != nil {
		t.Fatalf("migrate: %v %s", err, out)
	}
	srv := startServe(t, dbURL, cfgPath)
	startLong(t, dbURL, "relay", "--config", cfgPath)
	cons, admin := startLong(t, dbURL, "consume", "--config", cfgPath)

	send := func(id, object string) {
		t.Helper()
		out, err := gatehouse(t, dbURL, "send", "--config", cfgPath, "--url", srv.public, "--id", id, "--object", object).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "204") {
			t.Fatalf("send %s: %v %s", id, err, out)
		}
	}
	send("evt_ok", "pay_ok")
	send("evt_gone", "pay_gone")

	conn, err := pgx.Connect(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	waitState := func(id, want string) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for {
			var st string
			_ = conn.QueryRow(context.Background(), `SELECT processing_state FROM inbox WHERE event_id = $1`, id).Scan(&st)
			if st == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s is %q, want %q; consume stderr:\n%s", id, st, want, cons.stderr)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	waitState("evt_ok", "succeeded")
	waitState("evt_gone", "dead")

	out, err := gatehouse(t, dbURL, "replay", "--config", cfgPath, "--dead", "--dry-run").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "evt_gone") || !strings.Contains(string(out), "1 dead event(s) would be replayed") {
		t.Fatalf("replay --dead --dry-run: %v %s", err, out)
	}
	mu.Lock()
	objects["/v1/payments/pay_gone"] = `{"id":"pay_gone","version":2,"status":"succeeded"}`
	mu.Unlock()
	out, err = gatehouse(t, dbURL, "replay", "--config", cfgPath, "--dead", "--provider", "demo", "--since", "1h").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "1/1 100%") || !strings.Contains(string(out), "replayed 1 of 1 dead event(s), 0 failed") {
		t.Fatalf("replay --dead: %v %s", err, out)
	}
	waitState("evt_gone", "succeeded")
	var replays, attempts int
	if err := conn.QueryRow(context.Background(), `SELECT (SELECT count(*) FROM replays WHERE event_id = 'evt_gone'), (SELECT attempts FROM inbox WHERE event_id = 'evt_gone')`).Scan(&replays, &attempts); err != nil {
		t.Fatal(err)
	}
	if replays != 1 || attempts != 1 {
		t.Errorf("replays %d attempts %d, want 1 and 1", replays, attempts)
	}
	// A succeeded event needs --force; the single-event form reports why.
	out, err = gatehouse(t, dbURL, "replay", "--config", cfgPath, "--provider", "demo", "--event-id", "evt_ok").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "--force") {
		t.Fatalf("replay of a succeeded event: %v %s", err, out)
	}
	// An event of a provider no longer configured is refused, as the API
	// refuses it (api's TestReplayUnconfiguredProvider).
	if _, err := conn.Exec(context.Background(), `INSERT INTO inbox (provider, event_id, event_type, payload, verified, secret_id, processing_state)
VALUES ('retired', 'evt_r', 'payment.succeeded', '{"id":"evt_r"}', true, 's1', 'dead')`); err != nil {
		t.Fatal(err)
	}
	out, err = gatehouse(t, dbURL, "replay", "--config", cfgPath, "--provider", "retired", "--event-id", "evt_r").CombinedOutput()
	if err == nil || !strings.Contains(string(out), `provider "retired" is not configured`) {
		t.Fatalf("replay of an unconfigured provider's event: %v %s", err, out)
	}

	resp, err := http.Get(admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`gatehouse_consumer_records_processed_total{group="e2e-` + suffix + `"`, `outcome="dead_lettered"`,
		"gatehouse_consumer_queue_age_seconds", "gatehouse_kafka_consumer_"} {
		if !bytes.Contains(metrics, []byte(want)) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	stopGracefully(t, cons, 30*time.Second)
	logs := cons.stderr.String()
	if strings.Contains(logs, "api_key_e2e") || strings.Contains(logs, e2eSecret) {
		t.Fatal("a secret reached the consumer's logs")
	}
	var lines int
	for _, l := range strings.Split(strings.TrimSpace(logs), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(l), &rec) == nil && rec["event_id"] == "evt_gone" && rec["processing_state"] == "dead" {
			lines++
		}
	}
	if lines != 1 {
		t.Errorf("want one structured log line for the dead event, got %d:\n%s", lines, logs)
	}
}

// `gatehouse dev` (embedded Kafka) runs the consumers too: an event sent to
// it is fetched from the provider API and succeeds.
func TestBinaryDevProcessesEvents(t *testing.T) {
	dbURL := testenv.Postgres(t)
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/payments/pay_dev_c" || r.Header.Get("Authorization") != "Bearer api_key_e2e" {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		_, _ = io.WriteString(w, `{"id":"pay_dev_c","version":7,"status":"succeeded"}`)
	}))
	defer api.Close()
	cfgPath := writeConfigYAML(t, demoProvider+fmt.Sprintf(`    api_url: %s
    api_key: env:E2E_API_KEY
`, api.URL))
	t.Setenv("E2E_API_KEY", "api_key_e2e")
	p, r := startDev(t, dbURL, cfgPath)
	var public string
	for public == "" {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("dev output ended: %v; stderr: %s", err, p.stderr)
		}
		if m := regexp.MustCompile(`public=(\S+)`).FindStringSubmatch(line); m != nil {
			public = m[1]
		}
	}
	go func() { _, _ = io.Copy(io.Discard, r) }()
	out, err := gatehouse(t, dbURL, "send", "--config", cfgPath, "--url", public, "--id", "evt_dev_c", "--object", "pay_dev_c").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "204") {
		t.Fatalf("send: %v %s", err, out)
	}
	conn, err := pgx.Connect(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	deadline := time.Now().Add(60 * time.Second)
	for {
		var st string
		var version int64
		_ = conn.QueryRow(context.Background(), `SELECT i.processing_state, coalesce(o.version, 0) FROM inbox i
LEFT JOIN provider_objects o ON o.provider = i.provider AND o.object_id = 'pay_dev_c' WHERE i.event_id = 'evt_dev_c'`).Scan(&st, &version)
		if st == "succeeded" && version == 7 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("evt_dev_c is %q (object v%d); dev stderr:\n%s", st, version, p.stderr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
