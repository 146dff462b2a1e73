package ingest_test

import (
	"context"
	"net/http"
	"testing"
)

// The later alternatives of a type rule reach the inbox through the real
// receiver (finding 5 of issue 25; TestEveryAlternativeOfEveryRule checks
// every alternative of every rule): a Discord interaction is typed
// "interaction.<type>", a Twilio voice callback "call.<CallStatus>" and a
// Twilio JSON request by its body type. On main all three were stored as
// "event" or "message".
func TestLaterTypeAlternativesAreStored(t *testing.T) {
	h := newCatalogHarness(t)
	for _, c := range []struct {
		provider, body, wantType string
		headers                  map[string]string
		wantStatus               int
	}{
		{provider: "discord", body: `{"id":"1290000000000000001","application_id":"1234","type":2,"token":"tok","data":{"name":"ping"}}`,
			wantType: "interaction.2", wantStatus: http.StatusOK},
		{provider: "twilio", body: `CallSid=CA1234&CallStatus=completed&AccountSid=AC1`,
			headers: map[string]string{"I-Twilio-Idempotency-Token": "idem-call-1"}, wantType: "call.completed", wantStatus: http.StatusNoContent},
		{provider: "twilio", body: `{"type":"com.twilio.messaging.message.delivered","data":{"sid":"SM9"}}`,
			headers: map[string]string{"I-Twilio-Idempotency-Token": "idem-json-1"}, wantType: "com.twilio.messaging.message.delivered", wantStatus: http.StatusNoContent},
	} {
		r := h.deliver(t, c.provider, h.signed(t, c.provider, h.sign[c.provider], []byte(c.body), c.headers, ""))
		expectStatus(t, r, c.wantStatus)
		var n int
		if err := h.pool.QueryRow(context.Background(), `SELECT count(*) FROM inbox WHERE provider = $1 AND event_type = $2`, c.provider, c.wantType).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 1 {
			t.Errorf("%s: no row typed %q", c.provider, c.wantType)
		}
	}
}
