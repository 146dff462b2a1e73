package api_test

import (
	"net/url"
	"strings"
	"testing"
)

// TestPayloadSearchIsPosted: the values a payload search looks for are
// personal data, so they travel in a POST body, never in a URL (every
// proxy's access log keeps URLs): GET /api/v1/events with match= or path=
// is a 400 naming POST /api/v1/events/search, which answers the same
// events, pages with the cursor in its body, and keeps the scope, role
// and CSRF rules of the events API.
func TestPayloadSearchIsPosted(t *testing.T) {
	f := newFixture(t, fixtureOpts{operator: true})
	op := f.token("dave", "events:read", "roles", []string{"gatehouse:operator"})
	for _, q := range []string{"match=" + url.QueryEscape(`{"data":{"payment_id":"pay_1"}}`), "path=" + url.QueryEscape("data.payment_id=pay_1"),
		"provider=acme&path=" + url.QueryEscape("data.payment_id=pay_1")} {
		a := f.bearerGet("/api/v1/events?"+q, op)
		if desc, _ := a.body["error_description"].(string); a.status != 400 || !strings.Contains(desc, "POST /api/v1/events/search") {
			t.Errorf("GET ?%s: %d %s; want 400 naming POST /api/v1/events/search", q, a.status, a.raw)
		}
	}
	ids := func(a answer) []string {
		var out []string
		list, _ := a.body["events"].([]any)
		for _, e := range list {
			out = append(out, e.(map[string]any)["event_id"].(string))
		}
		return out
	}
	since := `"since":"2025-12-31T00:00:00Z"`
	a := f.postSearch(`{"provider":"acme",`+since+`,"paths":[{"path":"data.payment_id","value":"pay_1"}]}`, op)
	if got := strings.Join(ids(a), ","); a.status != 200 || got != "evt_1" {
		t.Fatalf("search by path: %d %s", a.status, a.raw)
	}
	a = f.postSearch(`{`+since+`,"match":{"type":"payment.succeeded"},"limit":1}`, op)
	next, _ := a.body["next_cursor"].(string)
	if got := strings.Join(ids(a), ","); a.status != 200 || got != "evt_2" || next == "" {
		t.Fatalf("search by match, page 1: %d %s", a.status, a.raw)
	}
	a = f.postSearch(`{`+since+`,"match":{"type":"payment.succeeded"},"limit":1,"cursor":"`+next+`"}`, op)
	if got := strings.Join(ids(a), ","); a.status != 200 || got != "evt_1" {
		t.Fatalf("search by match, page 2: %d %s", a.status, a.raw)
	}
	if a := f.postSearch(`{"match":{"type":"payment.succeeded"}}`, f.token("alice", "events:read")); a.status != 403 {
		t.Errorf("search by a non-operator: %d %s", a.status, a.raw)
	}
	if a := f.postSearch(`{"match":{"type":"payment.succeeded"}}`, f.token("dave", "objects:read", "roles", []string{"gatehouse:operator"})); a.status != 403 {
		t.Errorf("search without events:read: %d %s", a.status, a.raw)
	}
	_, cookie := f.newSession("carol")
	cc := sessionCookie("__Host-gatehouse-session", cookie)
	if a := f.do("POST", "/api/v1/events/search", strings.NewReader(`{"match":{"type":"x"}}`), "Cookie", cc); a.status != 403 || a.body["error"] != "csrf_required" {
		t.Errorf("search by session without X-CSRF: %d %s", a.status, a.raw)
	}
	if a := f.do("POST", "/api/v1/events/search", strings.NewReader(`{`+since+`,"match":{"type":"invoice.paid"}}`), "Cookie", cc, "X-CSRF", "1"); a.status != 200 || len(ids(a)) != 3 {
		t.Errorf("search by session: %d %s", a.status, a.raw)
	}
	if strings.Contains(f.logs.String(), "pay_1") {
		t.Errorf("a searched value reached the logs:\n%s", f.logs.String())
	}
}
