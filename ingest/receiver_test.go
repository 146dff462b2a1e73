package ingest_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/ingest"
)

func TestAcceptedOnceThenDuplicate(t *testing.T) {
	h := newHarness(t)
	r := h.send("evt_1", map[string]any{"payment_id": "pay_1"})
	expectStatus(t, r, http.StatusNoContent)
	if r.body != "" {
		t.Fatalf("204 carries a body: %q", r.body)
	}
	var (
		verified             bool
		secretID, state, typ string
		payload              map[string]any
	)
	err := h.pool.QueryRow(context.Background(),
		`SELECT verified, secret_id, processing_state, event_type, payload FROM inbox WHERE provider='demo' AND event_id='evt_1'`).
		Scan(&verified, &secretID, &state, &typ, &payload)
	if err != nil {
		t.Fatal(err)
	}
	if !verified || secretID != "current" || state != "pending" || typ != "payment.succeeded" || payload["id"] != "evt_1" {
		t.Fatalf("inbox row = %v %q %q %q %v", verified, secretID, state, typ, payload)
	}
	var aggType, aggID, obType, topic, evID string
	var sameTime bool
	err = h.pool.QueryRow(context.Background(), `SELECT o.aggregatetype, o.aggregateid, o.type, o.topic, o.event_id,
		o.event_time IS NOT NULL AND o.event_time = i.payload->>'created_at' AND o.event_time::timestamptz = i.event_created_at
		FROM outbox o JOIN inbox i ON i.provider = o.aggregatetype AND i.event_id = o.event_id`).Scan(&aggType, &aggID, &obType, &topic, &evID, &sameTime)
	if err != nil {
		t.Fatal(err)
	}
	if aggType != "demo" || aggID != "pay_1" || obType != "payment.succeeded" || topic != "gatehouse.webhooks.demo" || evID != "evt_1" {
		t.Fatalf("outbox row = %q %q %q %q %q", aggType, aggID, obType, topic, evID)
	}
	if !sameTime {
		t.Fatal("outbox.event_time is not the envelope's created_at text (and inbox.event_created_at its instant)")
	}
	// The same event again: the same 2xx, nothing added, counted as duplicate.
	expectStatus(t, h.send("evt_1", map[string]any{"payment_id": "pay_1"}), http.StatusNoContent)
	if n := h.count("inbox", ""); n != 1 {
		t.Fatalf("inbox rows = %d, want 1", n)
	}
	if n := h.count("outbox", ""); n != 1 {
		t.Fatalf("outbox rows = %d, want 1", n)
	}
	if got := h.metric("gatehouse_webhook_duplicates_total", "provider=demo"); got != 1 {
		t.Fatalf("duplicates metric = %v, want 1", got)
	}
	if got := h.metric("gatehouse_webhook_deliveries_total", "outcome=accepted", "provider=demo"); got != 1 {
		t.Fatalf("accepted metric = %v, want 1", got)
	}
	if !strings.Contains(h.logs.String(), `"outcome":"duplicate"`) {
		t.Fatalf("duplicate not logged: %s", h.logs.String())
	}
}

func TestUnknownProviderIs404(t *testing.T) {
	h := newHarness(t)
	body := envelope("evt_x", "payment.succeeded", nil)
	r := h.post("nosuch", h.sign("demo", demoSecret, body, h.now, ""), body)
	expectStatus(t, r, http.StatusNotFound)
	if h.count("inbox", "") != 0 {
		t.Fatal("row stored for an unknown provider")
	}
}

func TestOtherMethodsAre405WithAllow(t *testing.T) {
	h := newHarness(t)
	for _, m := range []string{http.MethodGet, http.MethodPut, http.MethodDelete, http.MethodPatch} {
		r := h.do(m, "/webhooks/demo", nil, nil, 0)
		expectStatus(t, r, http.StatusMethodNotAllowed)
		if got := r.header.Get("Allow"); got != "POST" {
			t.Fatalf("%s: Allow = %q, want POST", m, got)
		}
	}
}

func TestAnyContentTypeIsReadAsBytesNever415(t *testing.T) {
	h := newHarness(t)
	for i, ct := range []string{"text/plain", "application/x-www-form-urlencoded", "application/octet-stream", "application/json; charset=utf-8"} {
		id := "evt_ct_" + string(rune('a'+i))
		body := envelope(id, "invoice.paid", map[string]any{"invoice_id": "in_1"})
		hdr := h.sign("demo", demoSecret, body, h.now, "")
		hdr.Set("Content-Type", ct)
		expectStatus(t, h.post("demo", hdr, body), http.StatusNoContent)
	}
	if n := h.count("outbox", "aggregateid = 'in_1'"); n != 4 {
		t.Fatalf("outbox rows keyed by invoice id = %d, want 4", n)
	}
}

func TestVerificationFailures(t *testing.T) {
	h := newHarness(t)
	body := envelope("evt_sig", "payment.succeeded", map[string]any{"payment_id": "pay_9"})
	good := func() map[string][]string { return h.sign("demo", demoSecret, body, h.now, "") }
	cases := []struct {
		name   string
		hdr    map[string][]string
		body   []byte
		reason string
	}{
		{"no signature headers", map[string][]string{}, body, "missing_header"},
		{"missing signature", func() map[string][]string { x := good(); delete(x, "X-Gatehouse-Signature"); return x }(), body, "missing_header"},
		{"non-numeric timestamp", func() map[string][]string { x := good(); x["X-Gatehouse-Timestamp"] = []string{"yesterday"}; return x }(), body, "malformed_header"},
		{"non-hex signature", func() map[string][]string { x := good(); x["X-Gatehouse-Signature"] = []string{"zz-not-hex"}; return x }(), body, "malformed_header"},
		{"timestamp 301 s old", h.sign("demo", demoSecret, body, h.now.Add(-301*time.Second), ""), body, "stale_timestamp"},
		{"timestamp 301 s in the future", h.sign("demo", demoSecret, body, h.now.Add(301*time.Second), ""), body, "future_timestamp"},
		{"one byte of the body changed", good(), []byte(strings.Replace(string(body), "pay_9", "pay_8", 1)), "bad_signature"},
		{"body re-serialised", good(), []byte(strings.Replace(string(body), `","`, `", "`, 1)), "bad_signature"},
		{"secret of another endpoint", h.sign("demo", stripeSecret, body, h.now, ""), body, "bad_signature"},
		{"removed secret", h.sign("demo", "whsec_test_demo_retired_000", body, h.now, ""), body, "bad_signature"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := h.metric("gatehouse_webhook_verification_failures_total", "provider=demo", "reason="+c.reason)
			r := h.post("demo", c.hdr, c.body)
			expectStatus(t, r, ingest.StatusVerificationFailed)
			if strings.TrimSpace(r.body) != ingest.VerificationFailed {
				t.Fatalf("body = %q", r.body)
			}
			if got := h.metric("gatehouse_webhook_verification_failures_total", "provider=demo", "reason="+c.reason); got != before+1 {
				t.Fatalf("failures{reason=%s} = %v, want %v", c.reason, got, before+1)
			}
			if h.count("inbox", "") != 0 || h.count("outbox", "") != 0 {
				t.Fatal("a rejected delivery stored a row")
			}
		})
	}
	// The boundary itself is inside the tolerance, both ways.
	for i, d := range []time.Duration{-300 * time.Second, 300 * time.Second} {
		id := []string{"evt_edge_past", "evt_edge_future"}[i]
		b := envelope(id, "payment.succeeded", map[string]any{"payment_id": "pay_9"})
		expectStatus(t, h.post("demo", h.sign("demo", demoSecret, b, h.now.Add(d), ""), b), http.StatusNoContent)
	}
}

func TestSecretRotation(t *testing.T) {
	h := newHarness(t)
	for _, c := range []struct{ id, secret, label string }{{"evt_new", demoSecret, "current"}, {"evt_old", oldSecret, "previous"}} {
		body := envelope(c.id, "payment.succeeded", map[string]any{"payment_id": "p"})
		expectStatus(t, h.post("demo", h.sign("demo", c.secret, body, h.now, ""), body), http.StatusNoContent)
		if got := h.metric("gatehouse_webhook_secret_matched_total", "provider=demo", "secret_id="+c.label); got != 1 {
			t.Fatalf("secret_matched{%s} = %v, want 1", c.label, got)
		}
		var sid string
		if err := h.pool.QueryRow(context.Background(), `SELECT secret_id FROM inbox WHERE event_id=$1`, c.id).Scan(&sid); err != nil || sid != c.label {
			t.Fatalf("inbox.secret_id = %q (%v), want %q", sid, err, c.label)
		}
	}
	// The secret of one endpoint does not verify another endpoint.
	body := envelope("evt_cross", "payment.succeeded", nil)
	expectStatus(t, h.post("small", h.sign("small", oldSecret, body, h.now, ""), body), ingest.StatusVerificationFailed)
}

func TestBodyLimit413(t *testing.T) {
	h := newHarness(t)
	big := envelope("evt_big", "payment.succeeded", map[string]any{"pad": strings.Repeat("x", 2000)})
	hdr := h.sign("small", demoSecret, big, h.now, "")
	expectStatus(t, h.post("small", hdr, big), http.StatusRequestEntityTooLarge)
	// Chunked: no Content-Length, the limit is enforced while streaming.
	pr, pw := io.Pipe()
	go func() {
		for i := 0; i < 8; i++ {
			_, _ = pw.Write(big[:len(big)/8])
		}
		pw.Close()
	}()
	expectStatus(t, h.do(http.MethodPost, "/webhooks/small", hdr, pr, -1), http.StatusRequestEntityTooLarge)
	if h.count("inbox", "") != 0 {
		t.Fatal("oversized body stored")
	}
	// Just under the limit passes.
	ok := envelope("evt_ok", "payment.succeeded", map[string]any{"pad": strings.Repeat("x", 900)})
	expectStatus(t, h.post("small", h.sign("small", demoSecret, ok, h.now, ""), ok), http.StatusNoContent)
}

func TestMalformedEnvelopeIs400(t *testing.T) {
	h := newHarness(t)
	for name, body := range map[string]string{
		"not JSON":      `{"id": "evt_bad", `,
		"not object":    `["evt_bad"]`,
		"missing id":    `{"type":"payment.succeeded","data":{}}`,
		"missing type":  `{"id":"evt_bad","data":{}}`,
		"number id":     `{"id":7,"type":"payment.succeeded"}`,
		"invalid UTF-8": "{\"id\":\"evt_u\",\"type\":\"t\",\"data\":\"\xc3\x28\"}",
		"NUL escape":    `{"id":"evt_n","type":"t","data":"\u0000"}`,
	} {
		r := h.post("demo", h.sign("demo", demoSecret, []byte(body), h.now, ""), []byte(body))
		expectStatus(t, r, http.StatusBadRequest)
		if r.body == "" || strings.Contains(r.body, ingest.VerificationFailed) {
			t.Fatalf("%s: unclear message %q", name, r.body)
		}
	}
	if h.count("inbox", "") != 0 || h.count("outbox", "") != 0 {
		t.Fatal("malformed envelope stored")
	}
}

func TestConcurrentDuplicatesStoreOnce(t *testing.T) {
	h := newHarness(t)
	body := envelope("evt_race", "payment.succeeded", map[string]any{"payment_id": "pay_r"})
	hdr := h.sign("demo", demoSecret, body, h.now, "")
	var wg sync.WaitGroup
	statuses := make([]int, 50)
	for i := range statuses {
		wg.Add(1)
		go func() {
			defer wg.Done()
			statuses[i] = h.post("demo", hdr, body).status
		}()
	}
	wg.Wait()
	for i, s := range statuses {
		if s != http.StatusNoContent {
			t.Fatalf("delivery %d: status %d", i, s)
		}
	}
	if n, m := h.count("inbox", ""), h.count("outbox", ""); n != 1 || m != 1 {
		t.Fatalf("inbox=%d outbox=%d, want 1 and 1", n, m)
	}
	if got := h.metric("gatehouse_webhook_duplicates_total", "provider=demo"); got != 49 {
		t.Fatalf("duplicates = %v, want 49", got)
	}
}

func TestExistingRowIsToleratedNotAnError(t *testing.T) {
	// The unique-constraint row of SPEC.md: a row already there (from a
	// previous delivery or another instance) never surfaces as an error.
	// A stored event is an inbox row and its dedupe key (docs/STORAGE.md).
	h := newHarness(t)
	_, err := h.pool.Exec(context.Background(), `WITH k AS (
		INSERT INTO dedupe_keys (provider, event_id, gen)
		SELECT 'demo', 'evt_pre', starts FROM storage_partitions WHERE parent = 'dedupe_keys' AND starts <= now() AND ends > now())
		INSERT INTO inbox (provider, event_id, event_type, payload, verified, secret_id, processing_state)
		VALUES ('demo', 'evt_pre', 'payment.succeeded', '{}', true, 'current', 'succeeded')`)
	if err != nil {
		t.Fatal(err)
	}
	expectStatus(t, h.send("evt_pre", map[string]any{"payment_id": "p"}), http.StatusNoContent)
	if h.count("outbox", "") != 0 {
		t.Fatal("duplicate enqueued an outbox job")
	}
	if !strings.Contains(h.logs.String(), `"processing_state":"succeeded"`) {
		t.Fatalf("duplicate log lacks the stored state: %s", h.logs.String())
	}
}

func TestSlackURLVerificationIsAnsweredAfterVerification(t *testing.T) {
	h := newHarness(t)
	body := []byte(`{"type":"url_verification","challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P","token":"x"}`)
	r := h.post("slack", h.sign("slack", slackSecret, body, h.now, ""), body)
	expectStatus(t, r, http.StatusOK)
	var got map[string]string
	if err := json.Unmarshal([]byte(r.body), &got); err != nil || got["challenge"] != "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P" {
		t.Fatalf("challenge answer = %q", r.body)
	}
	// Unsigned handshakes are refused like any other delivery.
	expectStatus(t, h.post("slack", nil, body), ingest.StatusVerificationFailed)
	if h.count("inbox", "") != 0 {
		t.Fatal("handshake stored")
	}
}
