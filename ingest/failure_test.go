package ingest_test

import (
	"context"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/ingest"
	"github.com/gatehouse/gatehouse/internal/testenv"
)

func TestDatabaseUnreachableIs503ThenRecovers(t *testing.T) {
	dir := t.TempDir()
	pg, err := testenv.StartPG(context.Background(), dir, false) // durable: it is crashed below
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pg.Stop(true); os.RemoveAll(dir) })
	dbURL, err := testenv.CreateDatabase(context.Background(), pg.AdminURL(), true)
	if err != nil {
		t.Fatal(err)
	}
	h := newHarnessDB(t, dbURL)
	expectStatus(t, h.send("evt_before", map[string]any{"payment_id": "p"}), http.StatusNoContent)

	if err := pg.Stop(true); err != nil {
		t.Fatal(err)
	}
	r := h.send("evt_during", map[string]any{"payment_id": "p"})
	expectStatus(t, r, http.StatusServiceUnavailable)
	if r.header.Get("Retry-After") == "" {
		t.Fatal("503 without Retry-After")
	}
	if got := h.metric("gatehouse_webhook_deliveries_total", "outcome=unavailable", "provider=demo"); got != 1 {
		t.Fatalf("unavailable metric = %v", got)
	}

	if err := pg.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The provider retries; the event is recorded exactly once.
	deadline := time.Now().Add(20 * time.Second)
	for {
		r = h.send("evt_during", map[string]any{"payment_id": "p"})
		if r.status == http.StatusNoContent || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if r.status != http.StatusNoContent {
		t.Log(h.logs.String())
	}
	expectStatus(t, r, http.StatusNoContent)
	if n := h.count("inbox", ""); n != 2 {
		t.Fatalf("inbox rows = %d, want 2", n)
	}
}

func TestSlowDatabaseAnswers503BeforeTheProviderTimesOut(t *testing.T) {
	// SPEC.md's 504 row: a handler must never answer too slowly. When the
	// write cannot finish in time the provider gets 503 + Retry-After at
	// once, and a later retry records the event.
	h := newHarness(t, func(c *ingest.Config) { c.WriteTimeout = 300 * time.Millisecond })
	ctx := context.Background()
	tx, err := h.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a failed test must not leave the pool's Close waiting
	// An uncommitted insert of the same dedupe key makes the receiver's insert wait.
	if _, err := tx.Exec(ctx, `INSERT INTO dedupe_keys (provider, event_id, gen)
		SELECT 'demo', 'evt_slow', starts FROM storage_partitions
		WHERE parent = 'dedupe_keys' AND starts <= now() AND ends > now()`); err != nil {
		t.Fatal(err)
	}
	r := h.send("evt_slow", map[string]any{"payment_id": "p"})
	expectStatus(t, r, http.StatusServiceUnavailable)
	if r.header.Get("Retry-After") == "" {
		t.Fatal("503 without Retry-After")
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	expectStatus(t, h.send("evt_slow", map[string]any{"payment_id": "p"}), http.StatusNoContent)
	if n := h.count("outbox", "event_id = 'evt_slow'"); n != 1 {
		t.Fatalf("outbox rows = %d, want 1", n)
	}
}

func TestLogsNeverContainSecretsOrSignatures(t *testing.T) {
	h := newHarness(t)
	var sigValues []string
	record := func(hdr http.Header) http.Header {
		for _, k := range []string{"X-Gatehouse-Signature", "Stripe-Signature", "X-Hub-Signature-256", "Webhook-Signature", "X-Shopify-Hmac-Sha256", "X-Slack-Signature"} {
			if v := hdr.Get(k); v != "" {
				sigValues = append(sigValues, v)
			}
		}
		return hdr
	}
	body := envelope("evt_log", "payment.succeeded", map[string]any{"payment_id": "p"})
	h.post("demo", record(h.sign("demo", demoSecret, body, h.now, "")), body)
	h.post("demo", record(h.sign("demo", demoSecret, body, h.now, "")), body)                      // duplicate
	h.post("demo", record(h.sign("demo", oldSecret, body, h.now.Add(-time.Hour), "")), body)       // stale
	h.post("demo", record(h.sign("demo", "whsec_wrong_secret_zzz", body, h.now, "")), body)        // forged
	h.post("stripe", record(h.sign("stripe", stripeSecret, body, h.now, "")), body)                // ok
	h.post("github", record(h.sign("github", githubSecret, body, h.now, "1:guid-1")), body)        // ok
	h.post("svix", record(h.sign("svix", svixSecret, body, h.now, "msg_1")), body)                 // ok
	h.post("shopify", record(h.sign("shopify", shopSecret, body, h.now, "shop-1")), body)          // ok
	h.post("slack", record(h.sign("slack", slackSecret, []byte(`{"type":"x"}`), h.now, "")), body) // bad signature
	h.post("demo", http.Header{"Authorization": {"Bearer sekret-bearer-token"}}, body)             // missing headers

	logs := h.logs.String()
	if strings.Count(logs, `"msg":"webhook delivery"`) != 10 {
		t.Fatalf("want one log line per delivery, got:\n%s", logs)
	}
	for _, field := range []string{`"provider":`, `"event_id":`, `"type":`, `"verified":`, `"response_status":`, `"queue_id":`, `"processing_state":`, `"attempt":`, `"request_id":`} {
		if !strings.Contains(logs, field) {
			t.Fatalf("log lacks %s", field)
		}
	}
	secrets := []string{demoSecret, oldSecret, stripeSecret, githubSecret, svixSecret, shopSecret, slackSecret, "whsec_wrong_secret_zzz", "sekret-bearer-token"}
	for _, s := range append(secrets, sigValues...) {
		if strings.Contains(logs, s) {
			t.Fatalf("log contains a secret or signature value %q", s)
		}
	}
	if len(sigValues) < 9 {
		t.Fatalf("only %d signature values captured", len(sigValues))
	}
}
