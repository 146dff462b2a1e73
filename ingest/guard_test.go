package ingest_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/gatehouse/gatehouse/ingest"
	"github.com/gatehouse/gatehouse/ingest/inbox"
	"github.com/gatehouse/gatehouse/ingest/upkeep"
	"github.com/gatehouse/gatehouse/wiring"
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
	for _, c := range guardedDeliveries(h) {
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
	// The lifetime runs on the database's clock, as the dedupe keys' do.
	var left time.Duration
	if err := h.pool.QueryRow(context.Background(), `SELECT extract(epoch FROM expires_at - now())::float8 * 1e9 FROM ingest_replay_guard`).Scan(&left); err != nil {
		t.Fatal(err)
	}
	if d := inbox.DefaultReplayGuardTTL - left; d < 0 || d > 5*time.Second {
		t.Errorf("bitbucket (no signed timestamp): guard lifetime %v left, want %v", left, inbox.DefaultReplayGuardTTL)
	}
	if _, err := h.pool.Exec(context.Background(), `UPDATE ingest_replay_guard SET expires_at = now() - interval '1 second'`); err != nil {
		t.Fatal(err)
	}
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
	go func() { done <- upkeep.SweepReplayGuard(ctx, h.pool, time.Hour, 1000, slog.New(slog.DiscardHandler)) }()
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

// guardedDelivery is one provider whose event id is not signed: where its
// id goes, a body and its own headers.
type guardedDelivery struct {
	provider, idHeader, body string
	headers                  map[string]string
}

// guardedDeliveries are the catalogue's providers that keep a content guard.
func guardedDeliveries(h *catalogHarness) []guardedDelivery {
	return []guardedDelivery{
		{"github", "X-GitHub-Delivery", `{"action":"opened","repository":{"full_name":"o/r"}}`, map[string]string{"X-GitHub-Event": "issues", "X-GitHub-Hook-ID": "7"}},
		{"shopify", "X-Shopify-Webhook-Id", `{"id":820982911946154508}`, map[string]string{"X-Shopify-Topic": "orders/create"}},
		{"bitbucket", "X-Request-UUID", `{"repository":{"full_name":"team/repo"}}`, map[string]string{"X-Event-Key": "repo:push"}},
		{"twilio", "I-Twilio-Idempotency-Token", `MessageSid=SM1&MessageStatus=delivered`, nil},
		{"linear", "Linear-Delivery", `{"action":"create","type":"Issue","data":{"id":"i1"},"webhookTimestamp":` + ms(h.harness) + `}`, nil},
	}
}

// changed is body with one more member (or form field).
func changed(body string) []byte {
	if strings.HasPrefix(body, "{") {
		return []byte(`{"n":2,` + body[1:])
	}
	return []byte(body + "&n=2")
}

// Finding 1 of issue 39: the content key hashed the raw query string
// with the body, and GitHub, Shopify, Bitbucket and Linear sign only the
// body, so a captured delivery resent with a new id and any ?x=1 was a new
// verified event. The query string is part of the key only where the
// scheme signs the URL.
func TestQueryStringDoesNotBypassGuard(t *testing.T) {
	h := newCatalogHarness(t)
	for _, c := range guardedDeliveries(h) {
		if c.provider == "twilio" {
			continue // Twilio signs the URL: another query string does not verify
		}
		t.Run(c.provider, func(t *testing.T) {
			extra := map[string]string{c.idHeader: "id-1"}
			for k, v := range c.headers {
				extra[k] = v
			}
			d := h.signed(t, c.provider, h.sign[c.provider], []byte(c.body), extra, "id-1")
			for _, q := range []struct{ id, query string }{{"id-1", ""}, {"id-2", "replay=a"}, {"id-3", "replay=b"}} {
				d.header = d.header.Clone()
				d.header.Set(c.idHeader, q.id)
				d.query = q.query
				expectStatus(t, h.deliver(t, c.provider, d), http.StatusNoContent)
			}
			if n, m := h.count("inbox", "provider = $1", c.provider), h.count("outbox", "aggregatetype = $1", c.provider); n != 1 || m != 1 {
				t.Errorf("inbox %d, outbox %d rows; want 1 and 1", n, m)
			}
		})
	}
}

// failFirst fails the first write of each event id (the database refused
// it, say), and passes the rest to the Writer.
type failFirst struct {
	inner *inbox.Writer
	mu    sync.Mutex
	seen  map[string]bool
}

func (s *failFirst) Write(ctx context.Context, rec inbox.Record) (inbox.Outcome, error) {
	s.mu.Lock()
	first := !s.seen[rec.EventID]
	s.seen[rec.EventID] = true
	s.mu.Unlock()
	if first {
		return inbox.Outcome{}, errors.New("database refused the write")
	}
	return s.inner.Write(ctx, rec)
}

// Finding 2 of issue 39: the guard's row was written before the inbox
// write and not undone when that write failed, so the provider's retry
// (Bitbucket retries with a new X-Request-UUID) was answered as a
// duplicate of an event that was never stored. The guard's row is now
// written in the event's own transaction.
func TestGuardNeverAcknowledgesAnUnstoredEvent(t *testing.T) {
	h := newCatalogHarness(t)
	h2 := newHarnessDB(t, h.dbURL, func(c *ingest.Config) {
		c.Providers = wiring.Providers(h.cat)
		c.ReservedUnverifiedBytes = h.cat.Ingest.ReservedUnverifiedBytes
		w := c.Writer.(*inbox.Writer)
		c.Writer = &failFirst{inner: w, seen: map[string]bool{}}
	})
	body := []byte(`{"repository":{"full_name":"team/repo"},"push":{"n":1}}`)
	d := h.signed(t, "bitbucket", h.sign["bitbucket"], body, map[string]string{"X-Request-UUID": "u-1", "X-Event-Key": "repo:push"}, "u-1")
	r := h2.post("bitbucket", d.header, d.body)
	expectStatus(t, r, http.StatusServiceUnavailable)
	d.header = d.header.Clone()
	d.header.Set("X-Request-UUID", "u-2") // Bitbucket's retry
	expectStatus(t, h2.post("bitbucket", d.header, d.body), http.StatusServiceUnavailable)
	d.header.Set("X-Request-UUID", "u-3")
	expectStatus(t, h2.post("bitbucket", d.header, d.body), http.StatusServiceUnavailable)
	d.header.Set("X-Request-UUID", "u-2") // u-2's retry: the write passes
	expectStatus(t, h2.post("bitbucket", d.header, d.body), http.StatusNoContent)
	if n := h.count("inbox", "provider = 'bitbucket'"); n != 1 {
		t.Fatalf("inbox %d rows after a 204, want 1", n)
	}
}

// The same signed content under two ids at once (a replay racing the
// genuine delivery, or two redeliveries) stores one event, whether the
// two meet in one coalesced batch or in two concurrent ones.
func TestSameContentUnderTwoIDsAtOnceStoresOne(t *testing.T) {
	h := newCatalogHarness(t)
	const n = 25 // 50 deliveries at once, within the provider's share of 64
	var wg sync.WaitGroup
	statuses := make(chan int, 2*n)
	for i := range n {
		body := []byte(`{"action":"opened","number":` + strconv.Itoa(i) + `,"repository":{"full_name":"o/r"}}`)
		d := h.signed(t, "github", h.sign["github"], body, map[string]string{"X-GitHub-Event": "issues", "X-GitHub-Hook-ID": "7", "X-GitHub-Delivery": "a-" + strconv.Itoa(i)}, "a-"+strconv.Itoa(i))
		for _, id := range []string{"a-", "b-"} {
			hdr := d.header.Clone()
			hdr.Set("X-GitHub-Delivery", id+strconv.Itoa(i))
			wg.Add(1)
			go func() {
				defer wg.Done()
				statuses <- h.post("github", hdr, d.body).status
			}()
		}
	}
	wg.Wait()
	close(statuses)
	for s := range statuses {
		if s != http.StatusNoContent {
			t.Errorf("status %d, want 204", s)
		}
	}
	if got, out := h.count("inbox", "provider = 'github'"), h.count("outbox", "aggregatetype = 'github'"); got != n || out != n {
		t.Errorf("inbox %d, outbox %d rows; want %d and %d", got, out, n, n)
	}
}
