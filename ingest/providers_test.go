package ingest_test

import (
	"context"
	"net/http"
	"testing"
)

// Each provider's delivery is mapped into the same inbox fields.
func TestProviderEnvelopesMapIntoInbox(t *testing.T) {
	h := newHarness(t)
	stripeBody := []byte(`{"id":"evt_1Stripe","object":"event","api_version":"2024-06-20","created":1762000000,"type":"payment_intent.succeeded","data":{"object":{"id":"pi_123","object":"payment_intent"}}}`)
	githubBody := []byte(`{"action":"opened","repository":{"full_name":"octo/hello"},"pull_request":{"id":7}}`)
	svixBody := []byte(`{"type":"customer.created","timestamp":"2026-11-01T10:00:00Z","data":{"customer_id":"cus_9"}}`)
	shopBody := []byte(`{"id":820982911946154508,"email":"a@example.com"}`)
	slackBody := []byte(`{"type":"event_callback","event_id":"Ev08MFMKH6","event_time":1762000000,"event":{"type":"app_mention","channel":"C1"}}`)

	cases := []struct {
		provider, eventID string
		hdr               http.Header
		body              []byte
		wantID, wantType  string
		wantAggregate     string
	}{
		{"stripe", "", h.sign("stripe", stripeSecret, stripeBody, h.now, ""), stripeBody, "evt_1Stripe", "payment_intent.succeeded", "pi_123"},
		{"github", "", withHeader(h.sign("github", githubSecret, githubBody, h.now, "4242:72d3162e-cc78-11e3-81ab-4c9367dc0958"), "X-GitHub-Event", "pull_request"), githubBody,
			"4242:72d3162e-cc78-11e3-81ab-4c9367dc0958", "pull_request.opened", "octo/hello"},
		{"svix", "", h.sign("svix", svixSecret, svixBody, h.now, "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W"), svixBody, "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W", "customer.created", "cus_9"},
		{"shopify", "", withHeader(h.sign("shopify", shopSecret, shopBody, h.now, "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043"), "X-Shopify-Topic", "orders/create"), shopBody,
			"b54557e4-bdd9-4b37-8a5f-bf7d70bcd043", "orders.create", "820982911946154508"},
		{"slack", "", h.sign("slack", slackSecret, slackBody, h.now, ""), slackBody, "Ev08MFMKH6", "app_mention", "Ev08MFMKH6"},
	}
	for _, c := range cases {
		t.Run(c.provider, func(t *testing.T) {
			expectStatus(t, h.post(c.provider, c.hdr, c.body), http.StatusNoContent)
			var typ, agg string
			err := h.pool.QueryRow(context.Background(),
				`SELECT i.event_type, o.aggregateid FROM inbox i JOIN outbox o ON o.aggregatetype = i.provider AND o.event_id = i.event_id
				 WHERE i.provider = $1 AND i.event_id = $2`, c.provider, c.wantID).Scan(&typ, &agg)
			if err != nil {
				t.Fatalf("stored row: %v", err)
			}
			if typ != c.wantType || agg != c.wantAggregate {
				t.Fatalf("type=%q aggregate=%q, want %q %q", typ, agg, c.wantType, c.wantAggregate)
			}
			// A redelivery is a duplicate.
			expectStatus(t, h.post(c.provider, c.hdr, c.body), http.StatusNoContent)
			if n := h.count("inbox", "provider = $1", c.provider); n != 1 {
				t.Fatalf("inbox rows = %d", n)
			}
		})
	}
	// The same GitHub delivery GUID reaching another hook with another
	// body is another event; with the same body it is the same signed
	// content, whose hook id (not signed) anyone could have changed: a
	// duplicate (the replay guard, issue 25 finding 4).
	other := append([]byte(`{"hook":{"id":4343},`), githubBody[1:]...)
	hdr := withHeader(h.sign("github", githubSecret, other, h.now, "4343:72d3162e-cc78-11e3-81ab-4c9367dc0958"), "X-GitHub-Event", "pull_request")
	expectStatus(t, h.post("github", hdr, other), http.StatusNoContent)
	hdr = withHeader(h.sign("github", githubSecret, githubBody, h.now, "4444:72d3162e-cc78-11e3-81ab-4c9367dc0958"), "X-GitHub-Event", "pull_request")
	expectStatus(t, h.post("github", hdr, githubBody), http.StatusNoContent)
	if n := h.count("inbox", "provider = 'github'"); n != 2 {
		t.Fatalf("github inbox rows = %d, want 2", n)
	}
}

func withHeader(h http.Header, k, v string) http.Header {
	h.Set(k, v)
	return h
}

// TestSignatureBesideJunkIsAccepted: a Standard Webhooks sender whose
// header carries an entry gatehouse cannot use next to the genuine one gets
// 204, as with the official library; junk alone is refused with 400.
func TestSignatureBesideJunkIsAccepted(t *testing.T) {
	h := newHarness(t)
	body := []byte(`{"type":"customer.updated","timestamp":"2026-11-01T10:00:00Z","data":{"customer_id":"cus_junk"}}`)
	hdr := h.sign("svix", svixSecret, body, h.now, "msg_beside_junk")
	hdr.Set("Webhook-Signature", "v1,<junk> nocomma "+hdr.Get("Webhook-Signature"))
	if r := h.post("svix", hdr, body); r.status != 204 {
		t.Fatalf("genuine signature beside junk: %d %s", r.status, r.body)
	}
	hdr.Set("Webhook-Id", "msg_junk_only")
	hdr.Set("Webhook-Signature", "v1,<junk> nocomma")
	if r := h.post("svix", hdr, body); r.status != 400 {
		t.Fatalf("junk alone: %d %s", r.status, r.body)
	}
}
