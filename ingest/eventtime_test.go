package ingest_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/ingest/admin"
)

// TestEventTimeIsExact: outbox.event_time (the record's ce_time) is the
// provider's creation time exactly as given — nanoseconds kept, whole
// seconds without an invented fraction, a Unix time in RFC 3339 at its own
// precision — and a wrapped envelope's created_at is the same text, also
// when it is the receiver's clock (GitHub sends no time). A replay writes
// the same text again.
func TestEventTimeIsExact(t *testing.T) {
	h := newHarness(t)
	h.now = time.Date(2026, 11, 20, 10, 15, 0, 157850679, time.UTC)
	refNano := []byte(`{"id":"evt_nano","type":"payment.succeeded","created_at":"2026-11-20T10:15:41.314187999Z","data":{"payment_id":"pay_n"}}`)
	refSec := []byte(`{"id":"evt_sec","type":"payment.succeeded","created_at":"2026-11-20T10:15:41Z","data":{"payment_id":"pay_s"}}`)
	stripeBody := []byte(`{"id":"evt_time_stripe","object":"event","created":1762000000,"type":"charge.updated","data":{"object":{"id":"ch_1"}}}`)
	githubBody := []byte(`{"action":"opened","repository":{"full_name":"octo/time"}}`)
	shopBody := []byte(`{"id":1}`)
	slackBody := []byte(`{"type":"event_callback","event_id":"EvTime","event_time":1762000000,"event":{"type":"app_mention"}}`)
	shopHdr := withHeader(h.sign("shopify", shopSecret, shopBody, h.now, "shop-time-1"), "X-Shopify-Topic", "orders/create")
	shopHdr.Set("X-Shopify-Triggered-At", "2023-03-29T18:00:27.877041743Z")
	cases := []struct {
		provider, id string
		hdr          http.Header
		body         []byte
		want         string
		wrapped      bool
	}{
		{"demo", "evt_nano", h.sign("demo", demoSecret, refNano, h.now, ""), refNano, "2026-11-20T10:15:41.314187999Z", false},
		{"demo", "evt_sec", h.sign("demo", demoSecret, refSec, h.now, ""), refSec, "2026-11-20T10:15:41Z", false},
		{"stripe", "evt_time_stripe", h.sign("stripe", stripeSecret, stripeBody, h.now, ""), stripeBody, "2025-11-01T12:26:40Z", false},
		{"github", "9:gh-time", withHeader(h.sign("github", githubSecret, githubBody, h.now, "9:gh-time"), "X-GitHub-Event", "pull_request"),
			githubBody, "2026-11-20T10:15:00.157850679Z", true},
		{"shopify", "shop-time-1", shopHdr, shopBody, "2023-03-29T18:00:27.877041743Z", true},
		{"slack", "EvTime", h.sign("slack", slackSecret, slackBody, h.now, ""), slackBody, "2025-11-01T12:26:40Z", true},
	}
	for _, c := range cases {
		t.Run(c.provider+"/"+c.id, func(t *testing.T) {
			expectStatus(t, h.post(c.provider, c.hdr, c.body), http.StatusNoContent)
			var eventTime, createdAt string
			var instant time.Time
			if err := h.pool.QueryRow(context.Background(), `SELECT o.event_time, coalesce(i.payload->>'created_at', ''), i.event_created_at
				FROM outbox o JOIN inbox i ON i.provider = o.aggregatetype AND i.event_id = o.event_id
				WHERE o.aggregatetype = $1 AND o.event_id = $2`, c.provider, c.id).Scan(&eventTime, &createdAt, &instant); err != nil {
				t.Fatal(err)
			}
			if eventTime != c.want {
				t.Errorf("outbox.event_time = %q, want exactly %q", eventTime, c.want)
			}
			if c.wrapped && createdAt != eventTime {
				t.Errorf("wrapped envelope's created_at %q is not its event_time %q", createdAt, eventTime)
			}
			want, _ := time.Parse(time.RFC3339Nano, c.want)
			if !instant.Equal(want.Truncate(time.Microsecond)) {
				t.Errorf("inbox.event_created_at = %v, want %v", instant, want.Truncate(time.Microsecond))
			}
		})
	}
	// A replay's outbox row carries the same text (read from the stored
	// envelope, not from inbox.event_created_at's microseconds).
	for _, c := range cases {
		res, err := admin.Replay(context.Background(), h.pool, admin.ReplayTarget{Topic: "t"}, admin.ReplayRequest{Provider: c.provider, EventID: c.id})
		if err != nil {
			t.Fatalf("replay %s: %v", c.id, err)
		}
		var eventTime string
		if err := h.pool.QueryRow(context.Background(), `SELECT event_time FROM outbox WHERE id = $1`, res.OutboxID).Scan(&eventTime); err != nil {
			t.Fatal(err)
		}
		if eventTime != c.want {
			t.Errorf("replayed %s: event_time = %q, want %q", c.id, eventTime, c.want)
		}
	}
}
