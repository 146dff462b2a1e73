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

// mailgunDomain answers Mailgun's Events API for one domain: GET
// /v3/mg.example.com/events with begin later than end (descending), limit
// of them, and each page's paging.next a URL on base (…/events/<token>)
// that lists the rest; a page past the last is empty, its next URL given
// all the same.
type mailgunDomain struct {
	mu     sync.Mutex
	base   string           // the API's URL the pass calls (Prism's)
	events []map[string]any // oldest first
	auth   []string         // each call's Basic user
	paths  []string
}

func (d *mailgunDomain) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	user, pass, _ := r.BasicAuth()
	d.mu.Lock()
	defer d.mu.Unlock()
	d.auth, d.paths = append(d.auth, user+":"+pass), append(d.paths, r.URL.Path)
	off, begin, end, limit := 0, int64(1<<62), int64(0), 100
	if tok, ok := strings.CutPrefix(r.URL.Path, "/v3/mg.example.com/events/"); ok {
		parts := strings.Split(tok, "-") // offset-begin-end-limit
		off, _ = strconv.Atoi(parts[0])
		begin, _ = strconv.ParseInt(parts[1], 10, 64)
		end, _ = strconv.ParseInt(parts[2], 10, 64)
		limit, _ = strconv.Atoi(parts[3])
	} else {
		q := r.URL.Query()
		begin, _ = strconv.ParseInt(q.Get("begin"), 10, 64)
		end, _ = strconv.ParseInt(q.Get("end"), 10, 64)
		limit, _ = strconv.Atoi(q.Get("limit"))
	}
	var list []map[string]any
	for i := len(d.events) - 1; i >= 0; i-- { // begin > end: newest first
		ts := int64(d.events[i]["timestamp"].(float64))
		if ts <= begin && ts >= end {
			list = append(list, d.events[i])
		}
	}
	list = list[min(off, len(list)):]
	list = list[:min(limit, len(list))]
	if list == nil {
		list = []map[string]any{}
	}
	next := fmt.Sprintf("%s/v3/mg.example.com/events/%d-%d-%d-%d", d.base, off+len(list), begin, end, limit)
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"items": list, "paging": map[string]any{"next": next}})
}

// Mailgun is reconciled by backfill from its Events API, read newest
// first (begin after end, ascending=no) with HTTP Basic auth (api:<key>),
// following each page's paging.next URL until an empty page, each item
// stored as the webhook carries it, under event-data: through Prism
// checking each request against the transcribed description
// (testdata/mailgun-events.openapi.yaml), of 150 events the one the
// receiver stored is not missing and the others are stored once via
// reconcile; a second pass finds nothing missing.
func TestMailgunBackfillAgainstPrism(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	dom := &mailgunDomain{}
	for i := range 150 {
		dom.events = append(dom.events, map[string]any{"event": "delivered", "id": fmt.Sprintf("czsjqFATSlC3QtAK-%05d", i),
			"timestamp": float64(now.Add(-time.Duration(151-i)*time.Minute).Unix()) + 0.25,
			"recipient": "alice@example.com", "message": map[string]any{"headers": map[string]any{"message-id": fmt.Sprintf("m%d@mg.example.com", i)}}})
	}
	up := httptest.NewServer(dom)
	t.Cleanup(up.Close)
	prism, err := testenv.StartPrismProxy(context.Background(), filepath.Join("testdata", "mailgun-events.openapi.yaml"), up.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(prism.Stop)
	dom.mu.Lock()
	dom.base = prism.URL
	dom.mu.Unlock()

	pool, w := inboxtest.NewWriter(t, 0)
	stored := inboxtest.Record(dom.events[140]["id"].(string), 72*time.Hour)
	stored.Provider = "mailgun"
	inboxtest.WriteOne(t, w, stored)
	kind, _ := providers.Lookup("mailgun")
	r, err := reconcile.New(reconcile.Config{Provider: "mailgun", Kind: kind, Settings: settings.Reconcile{Enabled: true},
		APIURL: prism.URL + "/v3/mg.example.com", APIKey: []byte("api:key-test"), DedupeWindow: 72 * time.Hour,
		Topic: "gatehouse.webhooks.mailgun", AggregateIDPath: kind.AggregateIDPath, Pool: pool, Writer: w,
		Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	res, err := r.Pass(ctx, reconcile.Options{})
	if err != nil {
		t.Fatalf("%v (paths %v)", err, dom.paths)
	}
	// pages of 100, 50, then an empty one
	if res.Listed != 150 || len(res.Missing) != 149 || res.Closed != 149 || res.Calls != 3 {
		t.Fatalf("pass = listed %d, missing %d, closed %d, calls %d: want 150, 149 stored, 3 calls (paths %v)",
			res.Listed, len(res.Missing), res.Closed, res.Calls, dom.paths)
	}
	dom.mu.Lock()
	for _, a := range dom.auth {
		if a != "api:key-test" {
			t.Errorf("a call authenticated as %q, want Basic api:key-test", a)
		}
	}
	dom.mu.Unlock()
	if n := inboxtest.Count(t, pool, `SELECT count(*) FROM inbox WHERE provider = 'mailgun' AND via = 'reconcile'`); n != 149 {
		t.Fatalf("%d events stored via reconcile, want 149", n)
	}
	var typ string
	var payload []byte
	if err := pool.QueryRow(ctx, `SELECT event_type, payload FROM inbox WHERE provider = 'mailgun' AND event_id = $1`,
		dom.events[3]["id"]).Scan(&typ, &payload); err != nil {
		t.Fatal(err)
	}
	if typ != "delivered" || !strings.Contains(string(payload), `"event-data"`) {
		t.Fatalf("stored type %q payload %s: want the webhook's body, the event under event-data", typ, payload)
	}
	res, err = r.Pass(ctx, reconcile.Options{})
	if err != nil || len(res.Missing) != 0 {
		t.Fatalf("second pass = %+v, %v: want nothing missing", res, err)
	}
}
