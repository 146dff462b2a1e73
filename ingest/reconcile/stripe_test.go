package reconcile_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gatehouse/gatehouse/ingest/inbox"
	"github.com/gatehouse/gatehouse/ingest/inbox/inboxtest"
	"github.com/gatehouse/gatehouse/ingest/reconcile"
	"github.com/gatehouse/gatehouse/internal/settings"
	"github.com/gatehouse/gatehouse/internal/testenv"
	"github.com/gatehouse/gatehouse/schemas/providers"
)

// stripeEvent is the event stripe-mock lists at GET /v1/events: its id and
// creation time (stripe-mock answers its fixture whatever the filters).
func stripeEvent(t *testing.T, url string) (string, time.Time) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url+"/v1/events", nil)
	req.Header.Set("Authorization", "Bearer sk_test_123")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var page struct {
		Data []struct {
			ID      string `json:"id"`
			Created int64  `json:"created"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&page); err != nil || len(page.Data) != 1 {
		t.Fatalf("stripe-mock's event list: %v, %d events", err, len(page.Data))
	}
	return page.Data[0].ID, time.Unix(page.Data[0].Created, 0)
}

// stripeReconciler reconciles provider name (scheme stripe) against url,
// at the clock now.
func stripeReconciler(t *testing.T, name, url string, pool *pgxpool.Pool, w reconcile.Writer, now time.Time) *reconcile.Reconciler {
	t.Helper()
	kind, _ := providers.Lookup("stripe")
	r, err := reconcile.New(reconcile.Config{Provider: name, Kind: kind,
		Settings: settings.Reconcile{Enabled: true}, APIURL: url, APIKey: []byte("sk_test_123"),
		APIVersion: "2024-06-20", VersionHeader: "Stripe-Version", DedupeWindow: 72 * time.Hour,
		Topic: "gatehouse.webhooks." + name, AggregateIDPath: kind.AggregateIDPath, Pool: pool, Writer: w,
		Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// Stripe is reconciled by backfill against stripe-mock, Stripe's official
// API mock: a dry run lists the missing event and changes nothing; a pass
// stores it as its webhook would be stored (same provider, event id, type,
// key), marked via reconcile in the inbox and the outbox, and moves the
// cursor; the next pass finds nothing missing, and the webhook arriving
// after it is a duplicate.
func TestStripeBackfillAgainstStripeMock(t *testing.T) {
	sm, err := testenv.StartStripeMock(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sm.Stop)
	id, created := stripeEvent(t, sm.URL)
	pool, w := inboxtest.NewWriter(t, 0)
	now := created.Add(time.Hour) // the fixture's event is an hour old
	r := stripeReconciler(t, "stripe", sm.URL, pool, w, now)
	ctx := context.Background()

	res, err := r.Pass(ctx, reconcile.Options{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Missing) != 1 || res.Missing[0] != id || res.Closed != 0 || res.Listed != 1 {
		t.Fatalf("dry run = %+v, want %s missing and nothing closed", res, id)
	}
	if n := inboxtest.Count(t, pool, `SELECT count(*) FROM inbox`) + inboxtest.Count(t, pool, `SELECT count(*) FROM reconcile_passes`); n != 0 {
		t.Fatalf("a dry run wrote %d rows", n)
	}

	var progress int
	res, err = r.Pass(ctx, reconcile.Options{Progress: func(reconcile.Result) { progress++ }})
	if err != nil {
		t.Fatal(err)
	}
	if res.Closed != 1 || len(res.Missing) != 1 || res.Calls != 1 || progress == 0 {
		t.Fatalf("pass = %+v (progress %d), want the event stored with one call", res, progress)
	}
	var typ, via, obVia, agg string
	if err := pool.QueryRow(ctx, `SELECT i.event_type, i.via, o.via, o.aggregateid FROM inbox i JOIN outbox o ON o.aggregatetype = i.provider AND o.event_id = i.event_id
WHERE i.provider = 'stripe' AND i.event_id = $1`, id).Scan(&typ, &via, &obVia, &agg); err != nil {
		t.Fatal(err)
	}
	if via != inbox.ViaReconcile || obVia != inbox.ViaReconcile || typ == "" || agg == "" || agg == id {
		t.Fatalf("stored type %q via %q/%q key %q, want the event's type and object, via reconcile", typ, via, obVia, agg)
	}
	var result string
	var covered time.Time
	if err := pool.QueryRow(ctx, `SELECT result, covered_until FROM reconcile_passes WHERE provider = 'stripe'`).Scan(&result, &covered); err != nil {
		t.Fatal(err)
	}
	if result != "ok" || !covered.Equal(now) {
		t.Fatalf("cursor: %s until %s, want ok until %s", result, covered, now)
	}

	res, err = r.Pass(ctx, reconcile.Options{})
	if err != nil || len(res.Missing) != 0 || res.Listed != 1 {
		t.Fatalf("second pass = %+v, %v: want nothing missing", res, err)
	}
	hook := inboxtest.Record(id, 72*time.Hour)
	hook.Provider = "stripe"
	if out := inboxtest.WriteOne(t, w, hook); out.New {
		t.Fatal("the webhook after its backfill was stored as new")
	}
	if n := inboxtest.Count(t, pool, `SELECT count(*) FROM outbox WHERE event_id = $1`, id); n != 1 {
		t.Fatalf("%d outbox rows, want 1", n)
	}
}

// A webhook and the backfill of the same event racing: exactly one is new,
// whatever the order, and one inbox and one outbox row exist.
func TestBackfillAndWebhookRaceExactlyOnce(t *testing.T) {
	sm, err := testenv.StartStripeMock(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sm.Stop)
	id, created := stripeEvent(t, sm.URL)
	pool, w := inboxtest.NewWriter(t, 0)
	ctx := context.Background()
	for i := range 12 {
		name := "stripe" + strings.Repeat("x", i)
		r := stripeReconciler(t, name, sm.URL, pool, w, created.Add(time.Hour))
		hook := inboxtest.Record(id, 72*time.Hour)
		hook.Provider = name
		var wg sync.WaitGroup
		var res reconcile.Result
		var out inbox.Outcome
		var perr, werr error
		wg.Add(2)
		go func() { defer wg.Done(); res, perr = r.Pass(ctx, reconcile.Options{}) }()
		go func() { defer wg.Done(); out, werr = w.Write(ctx, hook) }()
		wg.Wait()
		if perr != nil || werr != nil {
			t.Fatal(perr, werr)
		}
		news := res.Closed
		if out.New {
			news++
		}
		if news != 1 {
			t.Fatalf("%s: pass %+v and webhook new=%v: %d new, want exactly 1", name, res, out.New, news)
		}
		if n := inboxtest.Count(t, pool, `SELECT count(*) FROM outbox WHERE aggregatetype = $1`, name); n != 1 {
			t.Fatalf("%s: %d outbox rows, want 1", name, n)
		}
	}
}

// An hmac definition opts in with the declarative form of an event list
// (reconcile.list): here Stripe's list on stripe-mock, declared as a
// provider gatehouse has no code for would declare it. The event is stored
// under the id its webhook would be (the definition's event_id, read from
// the body), wrapped as a fields envelope; a list whose id path names
// another value than the webhook's event id is refused, storing nothing.
func TestHMACDefinitionBackfillsFromADeclaredList(t *testing.T) {
	sm, err := testenv.StartStripeMock(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sm.Stop)
	id, created := stripeEvent(t, sm.URL)
	pool, w := inboxtest.NewWriter(t, 0)
	kind, _ := providers.Lookup("hmac")
	kind.EventID = providers.Fields{{Path: "id"}}
	kind.EventType = providers.Fields{{Path: "type"}}
	kind.CreatedAt = providers.Fields{{Path: "created"}}
	list := providers.EventList{Path: "/v1/events", Items: "data", ID: "id", Time: "created", Limit: "limit",
		Cursor: "starting_after", More: "has_more"}
	build := func(name string, l providers.EventList) *reconcile.Reconciler {
		r, err := reconcile.New(reconcile.Config{Provider: name, Kind: kind, Settings: settings.Reconcile{Enabled: true, List: &l},
			APIURL: sm.URL, APIKey: []byte("sk_test_123"), DedupeWindow: 72 * time.Hour, Topic: "t", Pool: pool, Writer: w,
			Now: func() time.Time { return created.Add(time.Hour) }})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	r := build("acme", list)
	if r.Way() != providers.ReconcileBackfill {
		t.Fatalf("way %q, want backfill", r.Way())
	}
	res, err := r.Pass(context.Background(), reconcile.Options{})
	if err != nil || res.Closed != 1 {
		t.Fatalf("pass %+v, %v", res, err)
	}
	var dataID string
	if err := pool.QueryRow(context.Background(), `SELECT payload->'data'->>'id' FROM inbox WHERE provider = 'acme' AND event_id = $1 AND via = 'reconcile'`, id).Scan(&dataID); err != nil || dataID != id {
		t.Fatalf("stored envelope data.id %q, %v: want the list's item wrapped", dataID, err)
	}
	bad := list
	bad.ID = "data.object.id"
	if _, err := build("acme2", bad).Pass(context.Background(), reconcile.Options{}); err == nil || !strings.Contains(err.Error(), "does not name the webhook's event id") {
		t.Fatalf("a list id that is not the event id: %v", err)
	}
	if n := inboxtest.Count(t, pool, `SELECT count(*) FROM inbox WHERE provider = 'acme2'`); n != 0 {
		t.Fatal("an event was stored under another id than its webhook's")
	}
	if _, err := reconcile.New(reconcile.Config{Provider: "x", Kind: kind, Settings: settings.Reconcile{Enabled: true}, APIURL: sm.URL,
		DedupeWindow: 72 * time.Hour, Pool: pool, Writer: w}); err == nil {
		t.Fatal("an hmac definition without a list was accepted")
	}
}
