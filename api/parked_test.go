package api_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/gatehouse/gatehouse/api"
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
	var issue int64
	if err := f.pool.QueryRow(ctx, `INSERT INTO failure_issues (provider, stage, fingerprint, error_class, message, last_error)
VALUES ('acme', 'forward:https://team.example/…#3f2a9c1e', 'f1', 'transient', 'forward to x: status 503', 'forward to x: status 503') RETURNING id`).Scan(&issue); err != nil {
		t.Fatal(err)
	}
	if _, err := f.pool.Exec(ctx, `INSERT INTO failure_issue_events (issue_id, provider, event_id, received_at) VALUES ($1, 'acme', 'evt_1', now())`, issue); err != nil {
		t.Fatal(err)
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
	if k := keys[0].(map[string]any); k["key"] != "pay_1" || k["state"] != "held" || k["events"] != float64(1) || k["head_event_id"] != "evt_1" ||
		k["issue_id"] != float64(issue) {
		t.Errorf("first parked key: %v, want issue %d", k, issue)
	}
	if k := keys[1].(map[string]any); k["issue_id"] != nil {
		t.Errorf("second parked key: %v, want no issue", k)
	}
	// the keys grouped by cause (the console's): the head's error and its failure issue
	causes, err := (api.Inbox{Pool: f.pool}).ListParkedCauses(ctx)
	if err != nil || len(causes) != 2 {
		t.Fatalf("causes: %v, %v", causes, err)
	}
	if c := causes[0]; c.Cause != "forward to x: status 503" || c.IssueID == nil || *c.IssueID != issue || c.Keys != 1 || c.Events != 1 {
		t.Errorf("first cause: %+v", c)
	}
	if c := causes[1]; c.Cause != "" || c.IssueID != nil || c.Keys != 1 || c.Events != 0 {
		t.Errorf("second cause: %+v", c)
	}
	if a := f.bearerGet(fmt.Sprintf("/api/v1/issues/%d", issue), read); a.status != 200 || a.body["parked_keys"] != float64(1) {
		t.Errorf("issue %d: %d %s, want parked_keys 1", issue, a.status, a.raw)
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
