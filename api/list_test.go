package api_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/api"
)

// TestEventListBoundsFiltersNoIndexServes: a type filter (no index serves
// it) without since or until searches only the last 24 hours and says so
// (window); with since, a page reads at most api.ScanBudget rows: the rare
// event lies behind more than that many newer rows of another type, so
// the first page is partial, empty, and its cursor continues the search
// to the event. Filters an index serves are not bounded.
func TestEventListBoundsFiltersNoIndexServes(t *testing.T) {
	f := newFixture(t, fixtureOpts{operator: true})
	op := f.token("dave", "events:read", "roles", []string{"gatehouse:operator"})
	ctx := context.Background()
	// The rare event 2 hours ago; ScanBudget + 5 common ones after it; a
	// rare one 3 days ago (outside the default window).
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := f.pool.Exec(ctx, sql, args...); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	exec(`INSERT INTO inbox (provider, event_id, event_type, payload, received_at, verified, secret_id)
VALUES ('acme', 'rare_new', 'charge.dispute.created', '{}', now() - interval '2 hours', true, 's'),
       ('acme', 'rare_old', 'charge.dispute.created', '{}', now() - interval '3 days', true, 's')`)
	exec(`INSERT INTO inbox (provider, event_id, event_type, payload, received_at, verified, secret_id)
SELECT 'acme', 'c_' || i, 'charge.succeeded', '{}', now() - interval '1 hour' + i * interval '1 millisecond', true, 's'
FROM generate_series(1, $1::int) i`, api.ScanBudget+5)

	a := f.bearerGet("/api/v1/events?type=charge.dispute.created", op)
	win, _ := a.body["window"].(map[string]any)
	since, _ := time.Parse(time.RFC3339, asString(win["since"]))
	if a.status != 200 || win == nil || time.Since(since) < 23*time.Hour || time.Since(since) > 25*time.Hour {
		t.Fatalf("type filter without since: %d %s; want 200 with a window of the last 24 h", a.status, a.raw)
	}
	// Within the window, ScanBudget newer rows hide the rare event from the
	// first page: partial, and the cursor finds it.
	var found []string
	pages := 0
	next := "/api/v1/events?type=charge.dispute.created&limit=10"
	for next != "" && pages < 10 {
		a := f.bearerGet(next, op)
		pages++
		if a.status != 200 {
			t.Fatalf("page %d: %d %s", pages, a.status, a.raw)
		}
		if pages == 1 && (a.body["partial"] != true || len(eventIDs(a)) != 0 || a.body["next_cursor"] == nil) {
			t.Fatalf("first page: %s; want partial, empty, with a next_cursor", a.raw)
		}
		found = append(found, eventIDs(a)...)
		next = ""
		if c, ok := a.body["next_cursor"].(string); ok {
			next = "/api/v1/events?type=charge.dispute.created&limit=10&cursor=" + c
		}
	}
	if strings.Join(found, " ") != "rare_new" {
		t.Fatalf("paged through the window: %v in %d pages; want rare_new only (rare_old is outside the window)", found, pages)
	}
	// An explicit since reaches the old one, still a budget at a time.
	found = nil
	next = "/api/v1/events?type=charge.dispute.created&since=2000-01-01T00:00:00Z"
	for next != "" {
		a := f.bearerGet(next, op)
		if a.status != 200 || a.body["window"] != nil {
			t.Fatalf("with since: %d %s; want 200 without a server window", a.status, a.raw)
		}
		found = append(found, eventIDs(a)...)
		next = ""
		if c, ok := a.body["next_cursor"].(string); ok {
			next = "/api/v1/events?type=charge.dispute.created&since=2000-01-01T00:00:00Z&cursor=" + c
		}
	}
	if strings.Join(found, " ") != "rare_new rare_old" {
		t.Fatalf("with since: %v", found)
	}
	// Indexed filters: neither windowed nor partial.
	for _, q := range []string{"?limit=3", "?processing_state=pending&limit=3", "?provider=acme&event_id=rare_old"} {
		a := f.bearerGet("/api/v1/events"+q, op)
		if a.status != 200 || a.body["window"] != nil || a.body["partial"] != nil || len(eventIDs(a)) == 0 {
			t.Errorf("events%s: %d %s", q, a.status, a.raw)
		}
	}
}

func asString(v any) string { s, _ := v.(string); return s }
