package console

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// The Issues page lists issues (filtered by status) and links each to its
// page, which shows the issue escaped, its status buttons and the replay of
// its dead events (both call the API from app.js, no inline script).
func TestIssuesPages(t *testing.T) {
	srv, pool := newServer(t)
	ctx := context.Background()
	insertEvent(t, pool, "acme", "evt_<b>1", "dead", `{"id":"x"}`)
	var id int64
	if err := pool.QueryRow(ctx, `INSERT INTO failure_issues (provider, stage, fingerprint, error_class, message, last_error,
  event_count, failures, event_types, sample_event_ids)
VALUES ('acme', 'forward:billing', 'f00d', 'permanent', 'status 422: <script>alert(1)</script>', 'status 422: <script>alert(1)</script>',
  1, 2, '{payment.failed}', '{evt_<b>1}') RETURNING id`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO failure_issue_events (issue_id, provider, event_id, received_at)
SELECT $1, provider, event_id, received_at FROM inbox WHERE event_id = 'evt_<b>1'`, id); err != nil {
		t.Fatal(err)
	}
	if code, _, _ := get(t, srv, "/console/issues", visitor.Subject); code != http.StatusForbidden {
		t.Errorf("non-operator: %d, want 403", code)
	}
	code, h, body := get(t, srv, "/console/issues", operator.Subject)
	if code != 200 || !strings.Contains(body, fmt.Sprintf(`href="/console/issues/%d"`, id)) || !strings.Contains(body, "forward:billing") ||
		!strings.Contains(body, `href="/console/issues" aria-current="page">Issues</a>`) {
		t.Fatalf("issues page: %d\n%s", code, body)
	}
	if strings.Contains(body, "<script>alert") || !strings.Contains(body, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Error("the issue's error is not escaped on the list")
	}
	if !strings.Contains(h.Get("Content-Security-Policy"), "script-src 'self'") {
		t.Errorf("CSP: %q", h.Get("Content-Security-Policy"))
	}
	if _, _, body := get(t, srv, "/console/issues?status=resolved", operator.Subject); strings.Contains(body, "forward:billing") || !strings.Contains(body, "No issue in status resolved") {
		t.Errorf("status filter: %s", body)
	}
	code, _, body = get(t, srv, fmt.Sprintf("/console/issues/%d", id), operator.Subject)
	if code != 200 {
		t.Fatalf("issue page: %d", code)
	}
	for _, want := range []string{
		fmt.Sprintf(`class="issue-status" data-issue="%d" data-status="resolved"`, id),
		fmt.Sprintf(`class="issue-replay" data-issue="%d">Replay every dead event`, id),
		"1 dead now", "2 failed attempts", "payment.failed",
		`href="/console/events/acme/evt_%3Cb%3E1">evt_&lt;b&gt;1</a>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("issue page lacks %q", want)
		}
	}
	if strings.Contains(body, `data-status="open"`) || strings.Contains(body, "<script>alert") || strings.Contains(body, "<b>1") {
		t.Errorf("issue page: a button for its own status, or unescaped text:\n%s", body)
	}
	for _, p := range []string{"/console/issues/999999", "/console/issues/x"} {
		if code, _, _ := get(t, srv, p, operator.Subject); code != http.StatusNotFound {
			t.Errorf("%s: %d, want 404", p, code)
		}
	}
}
