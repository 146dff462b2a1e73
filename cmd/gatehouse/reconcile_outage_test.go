package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gatehouse/gatehouse/internal/testenv"
)

// outageEvents is how many events the Stripe account creates while the
// receiver is down: more than a page (100), so the pass follows the cursor.
const outageEvents = 130

// End to end through the real binary, the case: the receiver is
// down while Stripe sends. The account (behind Prism validating each call
// against Stripe's published description) creates 130 events and sends
// each as a signed webhook to an endpoint that refuses the connection.
// serve then starts with reconciliation on: its pass lists the account's
// events over two pages and backfills every one, each stored once and
// marked via reconcile; the relay and the consumers process each once.
// Stripe's retries of the same webhooks then arrive, signed, and each is
// a duplicate: no second inbox, outbox or processed row.
func TestReconcileReceiverDownWhileStripeSends(t *testing.T) {
	const secret = "whsec_outage_e2e"
	acct, apiURL := startStripeAccount(t, secret)
	down := refusingURL(t)
	start := time.Now().Add(-30 * time.Minute)
	ids := make([]string, outageEvents)
	for i := range ids {
		ids[i] = acct.create(i, start.Add(time.Duration(i)*10*time.Second))
		if got := acct.send(t, i, down); got != 0 {
			t.Fatalf("the endpoint that is down answered %d", got)
		}
	}

	dbURL := testenv.PostgresUnmigrated(t)
	brokers := testenv.KafkaForTest(t)
	suffix := fmt.Sprint(time.Now().UnixNano())
	cfgPath := writeConfigYAML(t, fmt.Sprintf(`kafka:
  partitions: 2
relay:
  mode: poll
consumers:
  group: e2e-outage-%[1]s
providers:
  stripe:
    scheme: stripe
    secrets: [{id: s1, value: %[2]s}]
    topic: e2e.outage.%[1]s
    api_url: %[3]s
    api_key: sk_test_outage
    reconcile:
      enabled: true
      interval: 1s
`, suffix, secret, apiURL))
	t.Setenv("GATEHOUSE_KAFKA_BROKERS", strings.Join(brokers, ","))
	if out, err := gatehouse(t, dbURL, "migrate", "--config", cfgPath).CombinedOutput(); err != nil {
		t.Fatalf("migrate: %v %s", err, out)
	}
	srv := startServe(t, dbURL, cfgPath)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	waitCount := func(what, sql string) {
		t.Helper()
		deadline := time.Now().Add(120 * time.Second)
		for {
			var n int
			_ = conn.QueryRow(ctx, sql, ids).Scan(&n)
			if n == len(ids) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d of %d; serve stderr:\n%s", what, n, len(ids), srv.stderr)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	waitCount("backfilled", `SELECT count(*) FROM inbox WHERE provider = 'stripe' AND event_id = ANY($1) AND via = 'reconcile'`)
	acct.mu.Lock()
	lists := acct.lists
	acct.mu.Unlock()
	if lists < 2 {
		t.Fatalf("the account's list was read %d times through Prism: want the two pages", lists)
	}

	relay, _ := startLong(t, dbURL, "relay", "--config", cfgPath)
	cons, _ := startLong(t, dbURL, "consume", "--config", cfgPath)
	defer func() {
		if t.Failed() {
			t.Logf("relay stderr:\n%s\nconsume stderr:\n%s", relay.stderr, cons.stderr)
		}
	}()
	waitCount("processed", `SELECT count(*) FROM inbox WHERE provider = 'stripe' AND event_id = ANY($1)
  AND processing_state IN ('succeeded', 'skipped', 'ignored_stale')`)

	// Stripe retries: every webhook arrives now, signed, and is a duplicate
	for i := range ids {
		if got := acct.send(t, i, srv.public+"/webhooks/stripe"); got < 200 || got > 299 {
			t.Fatalf("retry of %s: the receiver answered %d; stderr:\n%s", ids[i], got, srv.stderr)
		}
	}
	var inboxRows, outboxRows, processed, viaWebhook int
	if err := conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM inbox WHERE provider = 'stripe' AND event_id = ANY($1)),
  (SELECT count(*) FROM outbox WHERE event_id = ANY($1)), (SELECT count(*) FROM processed_events WHERE event_id = ANY($1)),
  (SELECT count(*) FROM inbox WHERE provider = 'stripe' AND event_id = ANY($1) AND via <> 'reconcile')`, ids).Scan(
		&inboxRows, &outboxRows, &processed, &viaWebhook); err != nil {
		t.Fatal(err)
	}
	if inboxRows != len(ids) || outboxRows != len(ids) || processed != len(ids) || viaWebhook != 0 {
		t.Fatalf("inbox %d, outbox %d, processed %d, not via reconcile %d: want each of the %d events once, via reconcile",
			inboxRows, outboxRows, processed, viaWebhook, len(ids))
	}
	var result string
	var missing int
	if err := conn.QueryRow(ctx, `SELECT result, missing FROM reconcile_passes WHERE provider = 'stripe'`).Scan(&result, &missing); err != nil {
		t.Fatal(err)
	}
	if result == "failed" {
		t.Fatalf("the last pass failed; serve stderr:\n%s", srv.stderr)
	}
	if strings.Contains(srv.stderr.String(), "sk_test_outage") {
		t.Fatal("the API key reached the logs")
	}
}
