package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gatehouse/gatehouse/internal/testenv"
	"github.com/gatehouse/gatehouse/internal/testkit"
)

// End to end through the real binary, with Stripe's API on stripe-mock:
// the receiver was down while Stripe created the event (no webhook ever
// arrived). serve's scheduled reconciliation backfills it once, marked via
// reconcile; the relay publishes it with ce_gatehousevia=reconcile; the
// consumers process it once. The webhook arriving afterwards is a
// duplicate, and the passes after it find nothing missing.
func TestReconcileEndToEnd(t *testing.T) {
	sm, ev := stripeMockEvent(t)
	age := time.Since(time.Unix(ev.Created, 0)).Round(time.Hour) + 48*time.Hour // the fixture is years old

	dbURL := testenv.PostgresUnmigrated(t)
	brokers := testenv.KafkaForTest(t)
	suffix := fmt.Sprint(time.Now().UnixNano())
	topic := "e2e.reconcile." + suffix
	cfgPath := writeConfigYAML(t, fmt.Sprintf(`kafka:
  partitions: 2
relay:
  mode: poll
consumers:
  group: e2e-reconcile-%[1]s
providers:
  stripe:
    scheme: stripe
    secrets: [{id: s1, value: whsec_e2e}]
    topic: %[2]s
    api_url: %[3]s
    api_key: sk_test_123
    dedupe_window: %[4]s
    retention: %[4]s
    reconcile:
      enabled: true
      interval: 1s
`, suffix, topic, sm.URL, age))
	t.Setenv("GATEHOUSE_KAFKA_BROKERS", strings.Join(brokers, ","))
	if out, err := gatehouse(t, dbURL, "migrate", "--config", cfgPath).CombinedOutput(); err != nil {
		t.Fatalf("migrate: %v %s", err, out)
	}
	srv := startServe(t, dbURL, cfgPath)
	conn, err := pgx.Connect(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	ctx := context.Background()
	waitFor := func(what, sql string, ok func(string) bool) {
		t.Helper()
		deadline := time.Now().Add(90 * time.Second)
		for {
			var v string
			_ = conn.QueryRow(ctx, sql, ev.ID).Scan(&v)
			if ok(v) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: got %q; serve stderr:\n%s", what, v, srv.stderr)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	waitFor("backfilled", `SELECT via FROM inbox WHERE provider = 'stripe' AND event_id = $1`, func(v string) bool { return v == "reconcile" })

	startLong(t, dbURL, "relay", "--config", cfgPath)
	cons, _ := startLong(t, dbURL, "consume", "--config", cfgPath)
	final := map[string]bool{"succeeded": true, "skipped": true, "ignored_stale": true}
	waitFor("processed", `SELECT processing_state FROM inbox WHERE provider = 'stripe' AND event_id = $1`, func(v string) bool { return final[v] })

	// the webhook of the same event arrives after its backfill: a duplicate
	out, err := gatehouse(t, dbURL, "send", "--config", cfgPath, "--url", srv.public, "--provider", "stripe",
		"--id", ev.ID, "--type", ev.Type).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "204") {
		t.Fatalf("send: %v %s", err, out)
	}
	// two more passes find nothing missing
	var before time.Time
	if err := conn.QueryRow(ctx, `SELECT started_at FROM reconcile_passes WHERE provider = 'stripe'`).Scan(&before); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		var started time.Time
		var result string
		var missing int
		if err := conn.QueryRow(ctx, `SELECT started_at, result, missing FROM reconcile_passes WHERE provider = 'stripe'`).Scan(&started, &result, &missing); err != nil {
			t.Fatal(err)
		}
		if started.After(before.Add(time.Second)) && result == "ok" {
			if missing != 0 {
				t.Fatalf("a later pass found %d missing", missing)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no later pass; serve stderr:\n%s", srv.stderr)
		}
		time.Sleep(200 * time.Millisecond)
	}
	var inboxRows, outboxRows, processed int
	if err := conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM inbox WHERE event_id = $1), (SELECT count(*) FROM outbox WHERE event_id = $1),
  (SELECT count(*) FROM processed_events WHERE event_id = $1)`, ev.ID).Scan(&inboxRows, &outboxRows, &processed); err != nil {
		t.Fatal(err)
	}
	if inboxRows != 1 || outboxRows != 1 || processed != 1 {
		t.Fatalf("inbox %d, outbox %d, processed %d: want each once", inboxRows, outboxRows, processed)
	}

	// the record carries ce_gatehousevia=reconcile
	tail := gatehouse(t, dbURL, "tail", "--config", cfgPath, "--topic", topic, "--from-beginning")
	tailOut := &testkit.SyncBuffer{} // written by the process's copying goroutine while the test reads it
	tail.Stdout = tailOut
	if err := tail.Start(); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(30 * time.Second)
	for !strings.Contains(tailOut.String(), `"ce_gatehousevia":"reconcile"`) {
		if time.Now().After(deadline) {
			_ = tail.Process.Kill()
			t.Fatalf("no record with ce_gatehousevia=reconcile on %s:\n%s", topic, tailOut.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	_ = tail.Process.Kill()
	_ = tail.Wait()

	mresp, err := http.Get(srv.admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(mresp.Body)
	mresp.Body.Close()
	for _, want := range []string{`gatehouse_reconcile_missing_total{provider="stripe",way="backfill"} 1`,
		`gatehouse_reconcile_passes_total{provider="stripe",result="ok"}`, "gatehouse_reconcile_last_success_timestamp_seconds"} {
		if !bytes.Contains(metrics, []byte(want)) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if strings.Contains(srv.stderr.String(), "sk_test_123") || strings.Contains(cons.stderr.String(), "sk_test_123") {
		t.Fatal("the API key reached the logs")
	}
}
