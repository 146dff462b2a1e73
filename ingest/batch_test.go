package ingest_test

import (
	"net/http"
	"strings"
	"testing"
)

// A batch provider's delivery records each of its events once, by the
// event's own id: a redelivery, a retry that batches the events
// differently, or HubSpot's retry with a new attemptNumber adds only the
// events not yet stored; one bad element refuses the whole delivery and
// stores nothing of it.
func TestBatchDeliveriesRecordEachEventOnce(t *testing.T) {
	h := newCatalogHarness(t)
	post := func(provider, body string) response {
		t.Helper()
		return h.deliver(t, provider, h.signed(t, provider, h.sign[provider], []byte(body), nil, ""))
	}
	ev := func(id, typ, msg string) string {
		return `{"email":"a@example.com","timestamp":1513299569,"event":"` + typ + `","sg_event_id":"` + id + `","sg_message_id":"` + msg + `"}`
	}
	batch := func(evs ...string) string { return "[" + strings.Join(evs, ",") + "]" }

	expectStatus(t, post("sendgrid", batch(ev("e1", "processed", "m1"), ev("e2", "delivered", "m1"))), http.StatusNoContent)
	if n := h.count("inbox", "provider = 'sendgrid'"); n != 2 {
		t.Fatalf("rows = %d, want 2", n)
	}
	if n := h.count("outbox", "aggregatetype = 'sendgrid' AND aggregateid = 'm1'"); n != 2 {
		t.Fatalf("outbox rows keyed m1 = %d, want 2", n)
	}
	expectStatus(t, post("sendgrid", batch(ev("e2", "delivered", "m1"), ev("e3", "open", "m1"), ev("e1", "processed", "m1"))), http.StatusNoContent)
	if n := h.count("inbox", "provider = 'sendgrid'"); n != 3 {
		t.Fatalf("rows after a re-batched retry = %d, want 3", n)
	}
	if n := h.count("inbox", "provider = 'sendgrid' AND event_id = 'e3' AND event_type = 'open'"); n != 1 {
		t.Fatal("e3 not stored with its own type")
	}
	r := post("sendgrid", batch(ev("e4", "open", "m2"), `"not an event"`))
	expectStatus(t, r, http.StatusBadRequest)
	if !strings.Contains(r.body, "event 1 of the batch") {
		t.Fatalf("body %q does not name the element", r.body)
	}
	if n := h.count("inbox", "provider = 'sendgrid' AND event_id = 'e4'"); n != 0 {
		t.Fatal("a refused batch stored one of its events")
	}
	expectStatus(t, post("sendgrid", "[]"), http.StatusNoContent)
	expectStatus(t, post("sendgrid", `{"event":"delivered"}`), http.StatusBadRequest)

	hub := func(attempt string) string {
		return `[{"eventId":100,"subscriptionId":7,"subscriptionType":"contact.propertyChange","objectId":42,"occurredAt":1762000000000,"attemptNumber":` + attempt + `},` +
			`{"eventId":101,"subscriptionId":7,"subscriptionType":"contact.deletion","objectId":43,"occurredAt":1762000000001,"attemptNumber":` + attempt + `}]`
	}
	expectStatus(t, post("hubspot", hub("0")), http.StatusNoContent)
	expectStatus(t, post("hubspot", hub("1")), http.StatusNoContent)
	if n := h.count("inbox", "provider = 'hubspot'"); n != 2 {
		t.Fatalf("hubspot rows after a retry = %d, want 2", n)
	}
	if n := h.count("outbox", "aggregatetype = 'hubspot' AND event_id = '7.101' AND aggregateid = '43'"); n != 1 {
		t.Fatal("hubspot event 7.101 not keyed by its object")
	}
	if !strings.Contains(h.logs.String(), `"events":3`) {
		t.Fatal("the delivery log does not count the batch's events")
	}
}
