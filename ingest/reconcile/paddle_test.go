package reconcile_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/ingest/inbox"
	"github.com/gatehouse/gatehouse/ingest/inbox/inboxtest"
	"github.com/gatehouse/gatehouse/ingest/reconcile"
	"github.com/gatehouse/gatehouse/internal/settings"
	"github.com/gatehouse/gatehouse/internal/testenv"
	"github.com/gatehouse/gatehouse/schemas/providers"
)

// paddleAccount lists its events as Paddle's GET /events does: by event
// id (time-ordered) in the order order_by asks, per_page of them, after
// the id given, with meta.pagination.has_more.
type paddleAccount struct {
	mu     sync.Mutex
	events []map[string]any // oldest first
	calls  []string         // the query of each call that reached it
}

func (a *paddleAccount) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	a.mu.Lock()
	defer a.mu.Unlock()
	a.calls = append(a.calls, r.URL.RawQuery)
	if r.URL.Path != "/events" || r.Header.Get("Authorization") != "Bearer pdl_test_key" {
		w.WriteHeader(http.StatusForbidden)
		return
	}
	list := make([]map[string]any, len(a.events))
	for i, ev := range a.events {
		if q.Get("order_by") == "id[DESC]" {
			i = len(a.events) - 1 - i
		}
		list[i] = ev
	}
	per, _ := strconv.Atoi(q.Get("per_page"))
	if per == 0 {
		per = 50
	}
	if after := q.Get("after"); after != "" {
		for i, ev := range list {
			if ev["event_id"] == after {
				list = list[i+1:]
				break
			}
		}
	}
	more := len(list) > per
	if more {
		list = list[:per]
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"data": list, "meta": map[string]any{"request_id": "req_1",
		"pagination": map[string]any{"per_page": per, "next": "https://api.paddle.com/events?after=x", "has_more": more,
			"estimated_total": len(a.events)}}})
}

// Paddle is reconciled by backfill from GET /events, read newest first
// (order_by=id[DESC], the catalogue's query) with per_page and the after
// cursor, through Prism checking each request against the transcribed
// description of Paddle's list (testdata/paddle-events.openapi.yaml): of
// 150 events over two pages, the 3 the receiver stored are not missing;
// the others are stored once via reconcile, as their webhooks would be
// (the event id is event_id, the key data.data.id), and their webhooks
// arriving afterwards are duplicates. The events before the window are
// never read past.
func TestPaddleBackfillAgainstPrism(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	acct := &paddleAccount{}
	for i := range 150 {
		at := now.Add(-time.Duration(150-i) * time.Minute)
		acct.events = append(acct.events, map[string]any{"event_id": fmt.Sprintf("evt_01hv%022d", i),
			"event_type": "transaction.completed", "occurred_at": at.Format(time.RFC3339Nano),
			"data": map[string]any{"id": fmt.Sprintf("txn_01hv%022d", i), "status": "completed"}})
	}
	// the window reaches back 2h: the 30 oldest events are before it
	up := httptest.NewServer(acct)
	t.Cleanup(up.Close)
	prism, err := testenv.StartPrismProxy(context.Background(), filepath.Join("testdata", "paddle-events.openapi.yaml"), up.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(prism.Stop)

	pool, w := inboxtest.NewWriter(t, 0)
	for _, i := range []int{149, 120, 31} { // three webhooks did arrive
		rec := inboxtest.Record(acct.events[i]["event_id"].(string), 72*time.Hour)
		rec.Provider = "paddle"
		inboxtest.WriteOne(t, w, rec)
	}
	kind, _ := providers.Lookup("paddle")
	r, err := reconcile.New(reconcile.Config{Provider: "paddle", Kind: kind,
		Settings: settings.Reconcile{Enabled: true, Overlap: time.Hour}, APIURL: prism.URL, APIKey: []byte("pdl_test_key"),
		DedupeWindow: 2*time.Hour + 10*time.Minute, Topic: "gatehouse.webhooks.paddle", AggregateIDPath: kind.AggregateIDPath,
		Pool: pool, Writer: w, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	res, err := r.Pass(ctx, reconcile.Options{})
	if err != nil {
		t.Fatalf("%v (calls: %v)", err, acct.calls)
	}
	// window [now-2h, now]: events 30..149 (120), of which 3 stored
	if res.Listed != 120 || len(res.Missing) != 117 || res.Closed != 117 || res.Calls != 2 {
		t.Fatalf("pass = listed %d, missing %d, closed %d, calls %d: want 120 listed, 117 stored, 2 calls (calls: %v)",
			res.Listed, len(res.Missing), res.Closed, res.Calls, acct.calls)
	}
	if res.Missing[0] != acct.events[148]["event_id"] {
		t.Fatalf("first missing %s: want the newest not stored (the list read newest first)", res.Missing[0])
	}
	if n := inboxtest.Count(t, pool, `SELECT count(*) FROM inbox WHERE provider = 'paddle' AND via = 'reconcile'`); n != 117 {
		t.Fatalf("%d events stored via reconcile, want 117", n)
	}
	var typ, agg string
	if err := pool.QueryRow(ctx, `SELECT i.event_type, o.aggregateid FROM inbox i JOIN outbox o ON o.aggregatetype = i.provider AND o.event_id = i.event_id
WHERE i.provider = 'paddle' AND i.event_id = $1`, acct.events[100]["event_id"]).Scan(&typ, &agg); err != nil {
		t.Fatal(err)
	}
	if typ != "transaction.completed" || agg != fmt.Sprintf("txn_01hv%022d", 100) {
		t.Fatalf("stored type %q key %q, want the webhook's", typ, agg)
	}
	for _, c := range acct.calls {
		if c == "" {
			t.Fatal("a call reached the account without its query")
		}
	}
	res, err = r.Pass(ctx, reconcile.Options{})
	if err != nil || len(res.Missing) != 0 {
		t.Fatalf("second pass = %+v, %v: want nothing missing", res, err)
	}
	hook := inboxtest.Record(acct.events[100]["event_id"].(string), 72*time.Hour)
	hook.Provider = "paddle"
	if out := inboxtest.WriteOne(t, w, hook); out.New {
		t.Fatal("the webhook after its backfill was stored as new")
	}
	if n := inboxtest.Count(t, pool, `SELECT count(*) FROM inbox WHERE provider = 'paddle' AND via = $1`, inbox.ViaWebhook); n != 3 {
		t.Fatalf("%d events via webhook, want the 3 that arrived", n)
	}
}
