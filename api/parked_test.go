package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
)

// GET /parked lists the parked keys, the longest parked first; POST
// /parked/release releases a held key (200, now ready), refuses a key
// that is not held (409) or unknown (404), and needs events:replay and
// the operator role.
func TestParkedListAndRelease(t *testing.T) {
	f := newFixture(t, fixtureOpts{operator: true})
	ctx := context.Background()
	for _, q := range []string{
		`INSERT INTO parked_keys (destination, provider, kafka_key, head_event_id, head_error, state, on_dead, parked_at)
VALUES ('https://team.example/…#3f2a9c1e', 'acme', 'pay_1', 'evt_1', 'forward to x: status 503', 'held', 'hold', now() - interval '1 hour')`,
		`INSERT INTO parked_keys (destination, provider, kafka_key, head_event_id, state) VALUES ('https://team.example/…#3f2a9c1e', 'acme', 'pay_2', 'evt_2', 'waiting')`,
		`INSERT INTO parked_events (destination, provider, kafka_key, event_id, event_type, envelope)
VALUES ('https://team.example/…#3f2a9c1e', 'acme', 'pay_1', 'evt_3', 'payment.succeeded', '{}')`,
	} {
		if _, err := f.pool.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	read := f.token("dave", "events:read", "roles", []string{"gatehouse:operator"})
	op := f.token("dave", "events:read events:replay", "roles", []string{"gatehouse:operator"})
	post := func(tok, body string) answer {
		return f.do(http.MethodPost, "/api/v1/parked/release", strings.NewReader(body), "Authorization", "Bearer "+tok, "Content-Type", "application/json")
	}
	if a := f.bearerGet("/api/v1/parked", f.token("alice", "events:read")); a.status != 403 {
		t.Fatalf("list by non-operator: %d %s", a.status, a.raw)
	}
	a := f.bearerGet("/api/v1/parked", read)
	keys, _ := a.body["parked"].([]any)
	if a.status != 200 || len(keys) != 2 {
		t.Fatalf("list: %d %s", a.status, a.raw)
	}
	if k := keys[0].(map[string]any); k["key"] != "pay_1" || k["state"] != "held" || k["events"] != float64(1) || k["head_event_id"] != "evt_1" {
		t.Errorf("first parked key: %v", k)
	}
	held := `{"destination": "https://team.example/…#3f2a9c1e", "provider": "acme", "key": "pay_1"}`
	if a := post(read, held); a.status != 403 {
		t.Errorf("release without events:replay: %d %s", a.status, a.raw)
	}
	for _, body := range []string{`{}`, `{"destination": "d", "provider": "acme"}`, `{"key": "k", "extra": 1}`, `nope`} {
		if a := post(op, body); a.status != 400 {
			t.Errorf("release %s: %d, want 400", body, a.status)
		}
	}
	if a := post(op, held); a.status != 200 || a.body["state"] != "ready" {
		t.Fatalf("release: %d %s", a.status, a.raw)
	}
	if a := post(op, held); a.status != 409 {
		t.Errorf("release again: %d %s, want 409", a.status, a.raw)
	}
	if a := post(op, strings.Replace(held, "pay_1", "pay_9", 1)); a.status != 404 {
		t.Errorf("release of an unknown key: %d %s, want 404", a.status, a.raw)
	}
	if !strings.Contains(f.logs.String(), "parked key released via api") {
		t.Error("the release was not logged")
	}
}
