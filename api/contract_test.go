package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
)

// TestEscapedPathParams (issue 17, defect 1): provider event ids and object
// ids are arbitrary strings; one with "/" or "?" is reached by escaping it
// in the path, a literal "%" stays literal, and every path parameter of
// every operation is decoded (an escaped session id too).
func TestEscapedPathParams(t *testing.T) {
	f := newFixture(t, fixtureOpts{operator: true})
	ctx := context.Background()
	for _, id := range []string{"e/slash?x", "p%41", "sp ace#1"} {
		if _, err := f.pool.Exec(ctx, `INSERT INTO inbox (provider, event_id, event_type, payload, verified, secret_id, processing_state)
VALUES ('acme', $1, 'payment.succeeded', '{"id":"x"}', true, 'secret1', 'dead')`, id); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.pool.Exec(ctx, `INSERT INTO provider_objects (provider, object_id, object_type, version, data, last_event_id)
VALUES ('acme', 'cus/1?x', 'thing', 1, $1, 'e/slash?x')`, `{"customer":{"metadata":{"owner":"`+f.is.URL+` alice"}}}`); err != nil {
		t.Fatal(err)
	}
	carol := f.token("carol", "events:read events:replay")
	for path, want := range map[string]string{
		"/api/v1/events/acme/e%2Fslash%3Fx": "e/slash?x",
		"/api/v1/events/acme/p%2541":        "p%41",
		"/api/v1/events/acme/sp%20ace%231":  "sp ace#1",
		"/api/v1/events/%61cme/evt_%31":     "evt_1",
	} {
		a := f.bearerGet(path, carol)
		if a.status != 200 || a.body["event_id"] != want {
			t.Errorf("GET %s: %d %s, want event %q", path, a.status, a.raw, want)
		}
	}
	if a := f.bearerGet("/api/v1/events/acme/e/slash%3Fx", carol); a.status != 404 {
		t.Errorf("unescaped slash must not reach the event: %d %s", a.status, a.raw)
	}
	a := f.do(http.MethodPost, "/api/v1/events/acme/e%2Fslash%3Fx/replay", nil, "Authorization", "Bearer "+carol)
	if a.status != 202 || a.body["event_id"] != "e/slash?x" {
		t.Fatalf("replay of an escaped id: %d %s", a.status, a.raw)
	}
	if a := f.bearerGet("/api/v1/objects/acme/cus%2F1%3Fx", f.token("alice", "objects:read")); a.status != 200 || a.body["object_id"] != "cus/1?x" {
		t.Fatalf("object with an escaped id: %d %s", a.status, a.raw)
	}
	sid, _ := f.newSession("alice")
	escaped := strings.ReplaceAll(sid, "-", "%2D")
	if a := f.do(http.MethodDelete, "/api/v1/sessions/"+escaped, nil, "Authorization", "Bearer "+f.token("alice", "sessions:write")); a.status != 204 {
		t.Fatalf("revoke with an escaped session id: %d %s", a.status, a.raw)
	}
}

// TestMethodNotAllowed (issue 17, defect 2): every API path answers a
// method it does not serve with 405, the documented error body and the
// Allow header RFC 9110 requires; a path no method serves stays 404.
func TestMethodNotAllowed(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	paths := map[string]string{
		"/api/v1/openapi.yaml":             "GET",
		"/api/v1/sessions":                 "GET",
		"/api/v1/sessions/abc":             "DELETE",
		"/api/v1/events":                   "GET",
		"/api/v1/events/acme/evt_1":        "GET",
		"/api/v1/events/acme/e%2F1":        "GET",
		"/api/v1/events/acme/evt_1/replay": "POST",
		"/api/v1/objects":                  "GET",
		"/api/v1/objects/acme/pay_1":       "GET",
	}
	for path, allow := range paths {
		for _, m := range []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE"} {
			if m == allow {
				continue
			}
			req, _ := http.NewRequest(m, f.srv.URL+path, nil)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 405 || resp.Header.Get("Allow") != allow {
				t.Errorf("%s %s: %d Allow %q, want 405 Allow %q", m, path, resp.StatusCode, resp.Header.Get("Allow"), allow)
			}
		}
	}
	if a := f.do(http.MethodPut, "/api/v1/events", nil); a.body["error"] != "method_not_allowed" {
		t.Errorf("405 body: %s", a.raw)
	}
	if a := f.do(http.MethodPut, "/api/v1/nowhere", nil); a.status != 404 {
		t.Errorf("PUT on no route: %d %s", a.status, a.raw)
	}
}

// TestFilterValidation (issue 17, defect 3): processing_state takes only the
// documented states; an unknown or empty filter is a 400 invalid_request,
// never an empty (or unfiltered) list.
func TestFilterValidation(t *testing.T) {
	f := newFixture(t, fixtureOpts{operator: true})
	carol := f.token("carol", "events:read")
	for _, q := range []string{
		"?processing_state=AAA", "?processing_state=", "?processing_state=DEAD", "?provider=", "?type=",
		"?type=" + strings.Repeat("a", 129), "?limit=", "?limit=x",
	} {
		if a := f.bearerGet("/api/v1/events"+q, carol); a.status != 400 || a.body["error"] != "invalid_request" || a.body["error_description"] == "" {
			t.Errorf("events%s: %d %s, want 400 invalid_request", q, a.status, a.raw)
		}
	}
	for _, st := range []string{"pending", "processing", "succeeded", "ignored_stale", "skipped", "retrying", "dead"} {
		if a := f.bearerGet("/api/v1/events?processing_state="+st, carol); a.status != 200 {
			t.Errorf("processing_state=%s: %d %s", st, a.status, a.raw)
		}
	}
	if a := f.bearerGet("/api/v1/events?type="+strings.Repeat("a", 128), carol); a.status != 200 {
		t.Errorf("128-character filter: %d %s", a.status, a.raw)
	}
	alice := f.token("alice", "objects:read")
	for _, q := range []string{"?provider=", "?provider=a%20b"} {
		if a := f.bearerGet("/api/v1/objects"+q, alice); a.status != 400 || a.body["error"] != "invalid_request" {
			t.Errorf("objects%s: %d %s, want 400", q, a.status, a.raw)
		}
	}
	dave := f.token("dave", "events:replay", "roles", []string{"gatehouse:operator"})
	if a := f.do(http.MethodPost, "/api/v1/events/acme/evt_1/replay?force=", nil, "Authorization", "Bearer "+dave); a.status != 400 {
		t.Errorf("force=: %d %s", a.status, a.raw)
	}
}
