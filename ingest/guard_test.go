package ingest_test

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/gatehouse/gatehouse/ingest"
)

// Finding 3 of issue 25: Mailgun signs only signature.timestamp and
// signature.token, so one captured signature let anyone post any
// event-data for 5 minutes, stored as verified. The token is now accepted
// once: the same signature beside other event data is refused (400,
// reason replayed) and stores nothing, while the very same delivery sent
// again is a duplicate, as any redelivery.
func TestMailgunTokenIsAcceptedOnce(t *testing.T) {
	h := newCatalogHarness(t)
	event := func(id string) string {
		return `{"event-data":{"id":"` + id + `","event":"delivered","timestamp":1521472262.908181,"message":{"headers":{"message-id":"m@example.com"}}}}`
	}
	good := h.signed(t, "mailgun", h.sign["mailgun"], []byte(event("mg-genuine")), nil, "")
	expectStatus(t, h.deliver(t, "mailgun", good), http.StatusNoContent)
	expectStatus(t, h.deliver(t, "mailgun", good), http.StatusNoContent) // the same delivery again

	// The captured signature member beside forged event data.
	sig := gjson.GetBytes(good.body, "signature").Raw
	forged := good
	forged.body = []byte(`{"signature":` + sig + `,` + strings.TrimPrefix(event("mg-forged"), "{"))
	r := h.deliver(t, "mailgun", forged)
	expectStatus(t, r, ingest.StatusVerificationFailed)
	if strings.TrimSpace(r.body) != ingest.VerificationFailed {
		t.Errorf("replayed token: body %q", r.body)
	}
	if got := h.metric("gatehouse_webhook_verification_failures_total", "provider=mailgun", "reason=replayed"); got != 1 {
		t.Errorf("verification_failures{replayed} = %v, want 1", got)
	}
	if n := h.count("inbox", "provider = 'mailgun'"); n != 1 {
		t.Errorf("mailgun rows = %d, want the genuine one only", n)
	}
	// A new signature (new token) for other data is a new event.
	expectStatus(t, h.deliver(t, "mailgun", h.signed(t, "mailgun", h.sign["mailgun"], []byte(event("mg-second")), nil, "")), http.StatusNoContent)
	if n := h.count("inbox", "provider = 'mailgun'"); n != 2 {
		t.Errorf("mailgun rows = %d, want 2", n)
	}
}

// Finding 4 of issue 25: where the event id comes from a header the
// signature does not cover, the same body and signature sent with three
// different ids made three verified rows and three outbox jobs. Each is
// now one event: the later deliveries are duplicates of the first.
func TestUnsignedIDCannotStoreADeliveryAgain(t *testing.T) {
	h := newCatalogHarness(t)
	for _, c := range []struct {
		provider, idHeader, body string
		headers                  map[string]string
	}{
		{"github", "X-GitHub-Delivery", `{"action":"opened","repository":{"full_name":"o/r"}}`, map[string]string{"X-GitHub-Event": "issues", "X-GitHub-Hook-ID": "7"}},
		{"shopify", "X-Shopify-Webhook-Id", `{"id":820982911946154508}`, map[string]string{"X-Shopify-Topic": "orders/create"}},
		{"bitbucket", "X-Request-UUID", `{"repository":{"full_name":"team/repo"}}`, map[string]string{"X-Event-Key": "repo:push"}},
		{"twilio", "I-Twilio-Idempotency-Token", `MessageSid=SM1&MessageStatus=delivered`, nil},
		{"linear", "Linear-Delivery", `{"action":"create","type":"Issue","data":{"id":"i1"},"webhookTimestamp":` + ms(h.harness) + `}`, nil},
	} {
		t.Run(c.provider, func(t *testing.T) {
			extra := map[string]string{c.idHeader: "id-1"}
			for k, v := range c.headers {
				extra[k] = v
			}
			d := h.signed(t, c.provider, h.sign[c.provider], []byte(c.body), extra, "id-1")
			for _, id := range []string{"id-1", "id-2", "id-3", "id-1"} {
				d.header = d.header.Clone()
				d.header.Set(c.idHeader, id)
				expectStatus(t, h.deliver(t, c.provider, d), http.StatusNoContent)
			}
			if n, m := h.count("inbox", "provider = $1", c.provider), h.count("outbox", "aggregatetype = $1", c.provider); n != 1 || m != 1 {
				t.Errorf("inbox %d, outbox %d rows; want 1 and 1", n, m)
			}
			// Other content signed properly under a new id is a new event.
			other := h.signed(t, c.provider, h.sign[c.provider], changed(c.body), map[string]string{c.idHeader: "id-4"}, "id-4")
			for k, v := range c.headers {
				other.header.Set(k, v)
			}
			expectStatus(t, h.deliver(t, c.provider, other), http.StatusNoContent)
			if n := h.count("inbox", "provider = $1", c.provider); n != 2 {
				t.Errorf("inbox %d rows after a different event, want 2", n)
			}
		})
	}
}

// The guard's records have a lifetime: past it a record no longer counts,
// and the sweep deletes expired records in bounded batches.
func TestReplayGuardExpires(t *testing.T) {
	h := newCatalogHarness(t)
	body := []byte(`{"repository":{"full_name":"team/repo"}}`)
	d := h.signed(t, "bitbucket", h.sign["bitbucket"], body, map[string]string{"X-Request-UUID": "u-1", "X-Event-Key": "repo:push"}, "u-1")
	expectStatus(t, h.deliver(t, "bitbucket", d), http.StatusNoContent)
	var expires time.Time
	if err := h.pool.QueryRow(context.Background(), `SELECT expires_at FROM ingest_replay_guard`).Scan(&expires); err != nil {
		t.Fatal(err)
	}
	if got := expires.Sub(h.now); got != ingest.DefaultReplayGuardTTL {
		t.Errorf("bitbucket (no signed timestamp): guard lifetime %v, want %v", got, ingest.DefaultReplayGuardTTL)
	}
	h.now = h.now.Add(ingest.DefaultReplayGuardTTL + time.Second)
	d.header.Set("X-Request-UUID", "u-2")
	expectStatus(t, h.deliver(t, "bitbucket", d), http.StatusNoContent)
	if n := h.count("inbox", "provider = 'bitbucket'"); n != 2 {
		t.Errorf("past its lifetime the record still counted: %d rows", n)
	}
	// The sweep deletes what expired, in batches.
	if _, err := h.pool.Exec(context.Background(), `INSERT INTO ingest_replay_guard (key, event_id, expires_at)
		SELECT sha256(i::text::bytea), 'x', now() - interval '1 hour' FROM generate_series(1, 2500) i`); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ingest.SweepReplayGuard(ctx, h.pool, time.Hour, 1000, slog.New(slog.DiscardHandler)) }()
	deadline := time.Now().Add(10 * time.Second)
	for h.count("ingest_replay_guard", "expires_at < now()") > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := h.count("ingest_replay_guard", "expires_at < now()"); n != 0 {
		t.Errorf("%d expired records left", n)
	}
	if n := h.count("ingest_replay_guard", "expires_at > now()"); n != 1 {
		t.Errorf("%d live records, want 1 (u-2's)", n)
	}
}

// changed is body with one more member (or form field).
func changed(body string) []byte {
	if strings.HasPrefix(body, "{") {
		return []byte(`{"n":2,` + body[1:])
	}
	return []byte(body + "&n=2")
}
