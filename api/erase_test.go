package api_test

import (
	"context"
	"strings"
	"testing"
)

func TestEraseAPIErasesAuditsAndRefusesUnclearSelectors(t *testing.T) {
	f := newFixture(t, fixtureOpts{operator: true})
	tok := f.token("carol", "events:erase")
	a := f.do("POST", "/api/v1/erasures", strings.NewReader(`{"provider":"acme","event_id":"evt_1","reason":"ticket 7"}`),
		"Authorization", "Bearer "+tok, "Content-Type", "application/json")
	if a.status != 200 || a.body["events"] != float64(1) || a.body["selector"] != "event evt_1" {
		t.Fatalf("erase: %d %s", a.status, a.raw)
	}
	var payload, by, reason string
	if err := f.pool.QueryRow(context.Background(), `SELECT payload::text FROM inbox WHERE provider = 'acme' AND event_id = 'evt_1'`).Scan(&payload); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(payload, `"erased": true`) {
		t.Fatalf("payload after erase: %s", payload)
	}
	if err := f.pool.QueryRow(context.Background(), `SELECT requested_by, reason FROM erasures`).Scan(&by, &reason); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(by, "api:") || !strings.HasSuffix(by, " carol") || reason != "ticket 7" {
		t.Fatalf("audit: %q %q", by, reason)
	}
	for _, body := range []string{`{"provider":"acme"}`, `{"provider":"acme","event_id":"e","path":"a","value":"b"}`, `{"provider":"acme","path":"a"}`, `not json`, `{"provider":"acme","event_id":"e","extra":1}`} {
		if a := f.do("POST", "/api/v1/erasures", strings.NewReader(body), "Authorization", "Bearer "+tok); a.status != 400 || a.body["error"] != "invalid_request" {
			t.Errorf("%s: %d %s, want 400 invalid_request", body, a.status, a.raw)
		}
	}
	// A non-operator holding the scope is refused.
	if a := f.do("POST", "/api/v1/erasures", strings.NewReader(`{"provider":"acme","event_id":"evt_2"}`),
		"Authorization", "Bearer "+f.token("alice", "events:erase")); a.status != 403 {
		t.Fatalf("non-operator: %d %s", a.status, a.raw)
	}
}
