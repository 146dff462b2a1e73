package reconcile_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/ingest/inbox/inboxtest"
	"github.com/gatehouse/gatehouse/ingest/reconcile"
	"github.com/gatehouse/gatehouse/internal/settings"
	"github.com/gatehouse/gatehouse/internal/testenv"
	"github.com/gatehouse/gatehouse/schemas/providers"
)

// squareAccount answers Square's SearchEvents (POST /v2/events): the
// events of the body's created_at range, newest first when the sort asks
// DESC, limit of them, from the opaque cursor of the previous answer.
type squareAccount struct {
	mu     sync.Mutex
	events []map[string]any // oldest first
	bodies []string         // each request's body that reached it
}

func (a *squareAccount) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Cursor string `json:"cursor"`
		Limit  int    `json:"limit"`
		Query  struct {
			Filter struct {
				CreatedAt struct {
					StartAt time.Time `json:"start_at"`
					EndAt   time.Time `json:"end_at"`
				} `json:"created_at"`
			} `json:"filter"`
			Sort struct {
				Order string `json:"order"`
			} `json:"sort"`
		} `json:"query"`
	}
	var raw json.RawMessage
	_ = json.NewDecoder(r.Body).Decode(&raw)
	_ = json.Unmarshal(raw, &req)
	a.mu.Lock()
	defer a.mu.Unlock()
	a.bodies = append(a.bodies, string(raw))
	var list []map[string]any
	for i := range a.events {
		ev := a.events[i]
		if req.Query.Sort.Order == "DESC" {
			ev = a.events[len(a.events)-1-i]
		}
		at, _ := time.Parse(time.RFC3339, ev["created_at"].(string))
		if at.Before(req.Query.Filter.CreatedAt.StartAt) || at.After(req.Query.Filter.CreatedAt.EndAt) {
			continue
		}
		list = append(list, ev)
	}
	off, _ := strconv.Atoi(strings.TrimPrefix(req.Cursor, "cur_"))
	list = list[min(off, len(list)):]
	ans := map[string]any{}
	if len(list) > req.Limit {
		list, ans["cursor"] = list[:req.Limit], "cur_"+strconv.Itoa(off+req.Limit)
	}
	ans["events"] = list
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(ans)
}

// Square is reconciled by backfill from its event search, POST /v2/events
// with the window, the sort (newest first), the page size and the cursor
// in a JSON body (EventList.Method POST), the next cursor read from the
// answer (EventList.Next), through Prism checking each request body
// against the transcribed description of SearchEvents
// (testdata/square-events.openapi.yaml): of 130 events over two pages the
// 2 the receiver stored are not missing, the others are stored once via
// reconcile, and a second pass finds nothing missing.
func TestSquareBackfillAgainstPrism(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	acct := &squareAccount{}
	for i := range 130 {
		acct.events = append(acct.events, map[string]any{"merchant_id": "6SSW7HV8K2ST5", "type": "payment.updated",
			"event_id":   fmt.Sprintf("6a8f5f28-54a1-4eb0-a98a-%012d", i),
			"created_at": now.Add(-time.Duration(131-i) * time.Minute).Format(time.RFC3339),
			"data": map[string]any{"type": "payment", "id": fmt.Sprintf("KkAkhdMsgzn59SM8A89WgKwekxLZY%d", i),
				"object": map[string]any{"payment": map[string]any{"id": fmt.Sprintf("pay_%d", i), "status": "COMPLETED"}}}})
	}
	up := httptest.NewServer(acct)
	t.Cleanup(up.Close)
	prism, err := testenv.StartPrismProxy(context.Background(), filepath.Join("testdata", "square-events.openapi.yaml"), up.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(prism.Stop)

	pool, w := inboxtest.NewWriter(t, 0)
	for _, i := range []int{129, 7} {
		rec := inboxtest.Record(acct.events[i]["event_id"].(string), 72*time.Hour)
		rec.Provider = "square"
		inboxtest.WriteOne(t, w, rec)
	}
	kind, _ := providers.Lookup("square")
	r, err := reconcile.New(reconcile.Config{Provider: "square", Kind: kind, Settings: settings.Reconcile{Enabled: true},
		APIURL: prism.URL, APIKey: []byte("EAAA_test"), DedupeWindow: 72 * time.Hour, Topic: "gatehouse.webhooks.square",
		AggregateIDPath: kind.AggregateIDPath, Pool: pool, Writer: w, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	dry, err := r.Pass(ctx, reconcile.Options{DryRun: true})
	if err != nil {
		t.Fatalf("%v (bodies: %v)", err, acct.bodies)
	}
	res, err := r.Pass(ctx, reconcile.Options{})
	if err != nil {
		t.Fatalf("%v (bodies: %v)", err, acct.bodies)
	}
	if res.Listed != 130 || len(res.Missing) != 128 || res.Closed != 128 || res.Calls != 2 || len(dry.Missing) != 128 {
		t.Fatalf("pass = listed %d, missing %d, closed %d, calls %d (dry run missing %d): want 130, 128 stored, 2 calls",
			res.Listed, len(res.Missing), res.Closed, res.Calls, len(dry.Missing))
	}
	acct.mu.Lock()
	second := acct.bodies[len(acct.bodies)-1]
	acct.mu.Unlock()
	if !strings.Contains(second, `"cursor":"cur_100"`) || !strings.Contains(second, `"order":"DESC"`) || !strings.Contains(second, `"limit":100`) {
		t.Fatalf("second page asked with %s: want the answer's cursor, the sort and the page size", second)
	}
	if n := inboxtest.Count(t, pool, `SELECT count(*) FROM inbox WHERE provider = 'square' AND via = 'reconcile'`); n != 128 {
		t.Fatalf("%d events stored via reconcile, want 128", n)
	}
	var typ, agg string
	if err := pool.QueryRow(ctx, `SELECT i.event_type, o.aggregateid FROM inbox i JOIN outbox o ON o.aggregatetype = i.provider AND o.event_id = i.event_id
WHERE i.provider = 'square' AND i.event_id = $1`, acct.events[50]["event_id"]).Scan(&typ, &agg); err != nil {
		t.Fatal(err)
	}
	if typ != "payment.updated" || agg != "KkAkhdMsgzn59SM8A89WgKwekxLZY50" {
		t.Fatalf("stored type %q key %q, want the webhook's", typ, agg)
	}
	res, err = r.Pass(ctx, reconcile.Options{})
	if err != nil || len(res.Missing) != 0 {
		t.Fatalf("second pass = %+v, %v: want nothing missing", res, err)
	}
}
