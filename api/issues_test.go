package api_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gatehouse/gatehouse/api"
)

// seedIssues writes two failure issues over the fixture's inbox rows: acme
// fetch (evt_1 dead, evt_2 succeeded), seen last; beta forward:billing
// (evt_4 dead, evt_5 retrying). It returns their ids.
func (f *fixture) seedIssues(ctx context.Context) (acme, beta int64) {
	f.t.Helper()
	base := time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)
	ins := func(provider, stage string, seen time.Time, events ...string) int64 {
		var id int64
		if err := f.pool.QueryRow(ctx, `INSERT INTO failure_issues (provider, stage, fingerprint, error_class, message, last_error,
  first_seen, last_seen, event_count, failures, event_types, sample_event_ids)
VALUES ($1, $2, 'f00d', 'permanent', 'status <n>', 'status 404', $3, $3, $4, $4, '{payment.succeeded}', $5) RETURNING id`,
			provider, stage, seen, len(events), events).Scan(&id); err != nil {
			f.t.Fatal(err)
		}
		if _, err := f.pool.Exec(ctx, `INSERT INTO failure_issue_events (issue_id, provider, event_id, received_at)
SELECT $1, provider, event_id, received_at FROM inbox WHERE provider = $2 AND event_id = ANY($3)`, id, provider, events); err != nil {
			f.t.Fatal(err)
		}
		return id
	}
	beta = ins("beta", "forward:billing", base, "evt_4", "evt_5")
	acme = ins("acme", "fetch", base.Add(time.Hour), "evt_1", "evt_2")
	return acme, beta
}

func issueIDs(a answer) []string {
	var out []string
	list, _ := a.body["issues"].([]any)
	for _, it := range list {
		out = append(out, fmt.Sprint(it.(map[string]any)["id"]))
	}
	return out
}

// TestIssuesAPI: operators list (filtered, paged, newest last_seen first),
// read, change the status of and replay failure issues; the scope, role
// and CSRF rules of the replay endpoints apply.
func TestIssuesAPI(t *testing.T) {
	f := newFixture(t, fixtureOpts{operator: true})
	ctx := context.Background()
	acme, beta := f.seedIssues(ctx)
	a1, b1 := fmt.Sprint(acme), fmt.Sprint(beta)
	reg := prometheus.NewRegistry()
	reg.MustRegister(api.NewIssuesOpenCollector(f.pool))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var open []string
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			open = append(open, fmt.Sprintf("%s %s/%s=%v", mf.GetName(), m.GetLabel()[0].GetValue(), m.GetLabel()[1].GetValue(), m.GetGauge().GetValue()))
		}
	}
	if got := strings.Join(open, ", "); got != "gatehouse_issues_open acme/fetch=1, gatehouse_issues_open beta/forward:billing=1" {
		t.Errorf("metrics = %s", got)
	}
	read := f.token("dave", "events:read", "roles", []string{"gatehouse:operator"})
	op := f.token("dave", "events:read events:replay", "roles", []string{"gatehouse:operator"})
	post := func(path, tok, body string) answer {
		return f.do(http.MethodPost, path, strings.NewReader(body), "Authorization", "Bearer "+tok, "Content-Type", "application/json")
	}

	if a := f.bearerGet("/api/v1/issues", f.token("alice", "events:read")); a.status != 403 || a.body["error"] != "forbidden" {
		t.Fatalf("list by non-operator: %d %s", a.status, a.raw)
	}
	a := f.bearerGet("/api/v1/issues", read)
	if got := strings.Join(issueIDs(a), ","); a.status != 200 || got != a1+","+b1 {
		t.Fatalf("list: %d %s (ids %s)", a.status, a.raw, got)
	}
	a = f.bearerGet("/api/v1/issues?limit=1", read)
	next, _ := a.body["next_cursor"].(string)
	if got := issueIDs(a); len(got) != 1 || got[0] != a1 || next == "" {
		t.Fatalf("page 1: %s", a.raw)
	}
	a = f.bearerGet("/api/v1/issues?limit=1&cursor="+url.QueryEscape(next), read)
	if got := issueIDs(a); len(got) != 1 || got[0] != b1 || a.body["next_cursor"] != nil {
		t.Fatalf("page 2: %s", a.raw)
	}
	if a := f.bearerGet("/api/v1/issues?provider=beta", read); strings.Join(issueIDs(a), ",") != b1 {
		t.Fatalf("provider filter: %s", a.raw)
	}
	for _, q := range []string{"status=closed", "status=", "provider=", "cursor=x", "limit=0"} {
		if a := f.bearerGet("/api/v1/issues?"+q, read); a.status != 400 {
			t.Errorf("?%s: %d %s, want 400", q, a.status, a.raw)
		}
	}

	a = f.bearerGet("/api/v1/issues/"+a1, read)
	if a.status != 200 || a.body["stage"] != "fetch" || a.body["dead_events"] != float64(1) || a.body["event_count"] != float64(2) {
		t.Fatalf("get: %d %s", a.status, a.raw)
	}
	for _, p := range []string{"/api/v1/issues/999999", "/api/v1/issues/abc"} {
		if a := f.bearerGet(p, read); a.status != 404 {
			t.Errorf("GET %s: %d, want 404", p, a.status)
		}
	}

	if a := post("/api/v1/issues/"+a1+"/status", read, `{"status":"resolved"}`); a.status != 403 || a.body["scope"] != "events:replay" {
		t.Fatalf("status without events:replay: %d %s", a.status, a.raw)
	}
	for _, body := range []string{`{"status":"closed"}`, `{}`, `{"status":"muted","x":1}`, `nope`} {
		if a := post("/api/v1/issues/"+a1+"/status", op, body); a.status != 400 {
			t.Errorf("status %s: %d %s, want 400", body, a.status, a.raw)
		}
	}
	if a := post("/api/v1/issues/"+a1+"/status", op, `{"status":"resolved"}`); a.status != 200 || a.body["status"] != "resolved" {
		t.Fatalf("resolve: %d %s", a.status, a.raw)
	}
	if a := f.bearerGet("/api/v1/issues?status=resolved", read); strings.Join(issueIDs(a), ",") != a1 {
		t.Fatalf("status filter: %s", a.raw)
	}
	_, cookie := f.newSession("carol")
	cc := sessionCookie("__Host-gatehouse-session", cookie)
	if a := f.do(http.MethodPost, "/api/v1/issues/"+b1+"/status", strings.NewReader(`{"status":"muted"}`), "Cookie", cc); a.status != 403 || a.body["error"] != "csrf_required" {
		t.Fatalf("status by session without X-CSRF: %d %s", a.status, a.raw)
	}
	if a := f.do(http.MethodPost, "/api/v1/issues/"+b1+"/status", strings.NewReader(`{"status":"muted"}`), "Cookie", cc, "X-CSRF", "1"); a.status != 200 {
		t.Fatalf("status by session: %d %s", a.status, a.raw)
	}
	if a := post("/api/v1/issues/999999/status", op, `{"status":"muted"}`); a.status != 404 {
		t.Fatalf("status of a missing issue: %d", a.status)
	}

	if a := post("/api/v1/issues/"+a1+"/replay", read, ""); a.status != 403 {
		t.Fatalf("replay without events:replay: %d %s", a.status, a.raw)
	}
	a = post("/api/v1/issues/"+a1+"/replay", op, "")
	replayed, _ := a.body["replayed"].([]any)
	if a.status != 202 || len(replayed) != 1 || replayed[0].(map[string]any)["event_id"] != "evt_1" || a.body["remaining"] != float64(0) {
		t.Fatalf("replay issue: %d %s", a.status, a.raw)
	}
	var state, by string
	if err := f.pool.QueryRow(ctx, `SELECT i.processing_state, r.requested_by FROM inbox i JOIN replays r USING (provider, event_id)
WHERE i.provider = 'acme' AND i.event_id = 'evt_1'`).Scan(&state, &by); err != nil {
		t.Fatal(err)
	}
	if state != "pending" || by != "api:"+f.is.URL+" dave" {
		t.Fatalf("evt_1 after the issue's replay: state %s, requested_by %q", state, by)
	}
	if a := f.bearerGet("/api/v1/issues/"+a1, read); a.body["replayed_events"] != float64(1) || a.body["last_replayed_by"] != "api:"+f.is.URL+" dave" || a.body["dead_events"] != float64(0) {
		t.Fatalf("issue after its replay: %s", a.raw)
	}
	if a := post("/api/v1/issues/"+a1+"/replay", op, ""); a.status != 202 || len(a.body["replayed"].([]any)) != 0 {
		t.Fatalf("second replay: %d %s", a.status, a.raw)
	}
	if a := post("/api/v1/issues/999999/replay", op, ""); a.status != 404 {
		t.Fatalf("replay of a missing issue: %d", a.status)
	}
	if !strings.Contains(f.logs.String(), "failure issue replayed via api") {
		t.Error("the issue's replay was not logged")
	}
}
