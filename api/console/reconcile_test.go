package console

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// The overview shows, per reconciled provider, the last pass and what it
// found: a failed one with its error.
func TestOverviewShowsReconciliation(t *testing.T) {
	srv, pool := newServer(t)
	if _, err := pool.Exec(context.Background(), `INSERT INTO reconcile_passes (provider, way, started_at, finished_at, result, listed, missing, closed, last_success_at, error) VALUES
('stripe', 'backfill', now() - interval '3 minutes', now() - interval '2 minutes', 'ok', 120, 3, 3, now() - interval '2 minutes', NULL),
('github', 'redeliver', now() - interval '1 minute', now(), 'failed', 0, 0, 0, NULL, 'GET /app/hook/deliveries: the provider answered 401')`); err != nil {
		t.Fatal(err)
	}
	code, _, body := get(t, srv, "/console/overview.json", operator.Subject)
	var o Overview
	if err := json.Unmarshal([]byte(body), &o); code != 200 || err != nil || len(o.Reconcile) != 2 {
		t.Fatalf("overview: %d %v %s", code, err, body)
	}
	if r := o.Reconcile[1]; r.Provider != "stripe" || r.Way != "backfill" || r.Result != "ok" || r.Listed != 120 || r.Missing != 3 || r.Closed != 3 || r.LastSuccess == nil {
		t.Fatalf("stripe's pass: %+v", r)
	}
	code, _, page := get(t, srv, "/console/", operator.Subject)
	if code != 200 || !strings.Contains(page, `<tr data-reconcile="stripe">`) || !strings.Contains(page, "<strong>3</strong>") ||
		!strings.Contains(page, "<strong>failed</strong>: GET /app/hook/deliveries: the provider answered 401") {
		t.Fatalf("overview page: %d\n%s", code, page)
	}
}
