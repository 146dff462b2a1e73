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

// TestEraseByPathKeepsNoValueInAuditOrLogs: after an erasure by path the
// erased value (an e-mail address) appears nowhere: not in the answer's
// selector, not in the erasures table, not in the logs. The audit keeps a
// keyed digest of it instead, and the per-table counts.
func TestEraseByPathKeepsNoValueInAuditOrLogs(t *testing.T) {
	f := newFixture(t, fixtureOpts{operator: true})
	const email = "dora.erased@example.com"
	if _, err := f.pool.Exec(context.Background(), `UPDATE inbox SET payload = jsonb_set(payload, '{data,email}', to_jsonb($1::text))
WHERE provider = 'acme' AND event_id IN ('evt_1', 'evt_2')`, email); err != nil {
		t.Fatal(err)
	}
	a := f.do("POST", "/api/v1/erasures", strings.NewReader(`{"provider":"acme","path":"data.email","value":"`+email+`","reason":"ticket 8"}`),
		"Authorization", "Bearer "+f.token("carol", "events:erase"), "Content-Type", "application/json")
	if a.status != 200 || a.body["events"] != float64(2) {
		t.Fatalf("erase: %d %s", a.status, a.raw)
	}
	sel, _ := a.body["selector"].(string)
	if !strings.HasPrefix(sel, "path data.email = hmac-sha256:k1:") {
		t.Errorf("selector %q, want the path and a keyed digest of the value", sel)
	}
	var audit string
	if err := f.pool.QueryRow(context.Background(), `SELECT string_agg(row_to_json(erasures)::text, ' ') FROM erasures`).Scan(&audit); err != nil {
		t.Fatal(err)
	}
	for where, text := range map[string]string{"answer": string(a.raw), "erasures table": audit, "logs": f.logs.String()} {
		if strings.Contains(text, "dora.erased") {
			t.Errorf("the %s holds the erased value: %s", where, text)
		}
	}
	if !strings.Contains(audit, sel) || !strings.Contains(f.logs.String(), sel) {
		t.Errorf("the audit row (%s) or the log lines do not name the digest %s", audit, sel)
	}
}

// TestEraseRemovesProjectionsListedUnderTheRuleKey: the consumers applied
// evt_1 and evt_2 (aggregate ids pay_1 and pay_2) under a fetch rule's key
// (charge/pay_1, HubSpot's contact/{id} pattern), which /api/v1/objects
// lists. Erasing by object pay_1, then by event evt_2, removes each
// projection: the list no longer holds it.
func TestEraseRemovesProjectionsListedUnderTheRuleKey(t *testing.T) {
	f := newFixture(t, fixtureOpts{operator: true})
	ctx := context.Background()
	for _, ev := range []struct{ id, key string }{{"evt_1", "charge/pay_1"}, {"evt_2", "charge/pay_2"}} {
		data := `{"customer":{"metadata":{"owner":"` + f.is.URL + ` alice"}}}`
		var st string
		if err := f.pool.QueryRow(ctx, `SELECT consumers_apply('acme', $1, 'payment.succeeded', $2, 'charge', 1, $3::jsonb, NULL)`,
			ev.id, ev.key, data).Scan(&st); err != nil || st != "succeeded" {
			t.Fatalf("apply %s: %q %v", ev.id, st, err)
		}
	}
	alice := f.token("alice", "objects:read")
	listed := func(key string) bool {
		t.Helper()
		a := f.bearerGet("/api/v1/objects?provider=acme", alice)
		if a.status != 200 {
			t.Fatalf("list: %d %s", a.status, a.raw)
		}
		return strings.Contains(a.raw, `"`+key+`"`)
	}
	if !listed("charge/pay_1") || !listed("charge/pay_2") {
		t.Fatal("the applied projections are not listed")
	}
	op := f.token("carol", "events:erase")
	for _, tc := range []struct {
		body, gone string
		objects    float64
	}{
		{`{"provider":"acme","object_id":"pay_1"}`, "charge/pay_1", 2}, // and the seeded projection stored under pay_1
		{`{"provider":"acme","event_id":"evt_2"}`, "charge/pay_2", 1},
	} {
		a := f.do("POST", "/api/v1/erasures", strings.NewReader(tc.body), "Authorization", "Bearer "+op, "Content-Type", "application/json")
		if a.status != 200 || a.body["objects"] != tc.objects {
			t.Errorf("erase %s: %d %s, want %v objects removed", tc.body, a.status, a.raw, tc.objects)
		}
		if listed(tc.gone) {
			t.Errorf("erase %s: /api/v1/objects still lists %s", tc.body, tc.gone)
		}
	}
}
