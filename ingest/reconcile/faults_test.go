package reconcile_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/ingest/inbox/inboxtest"
	"github.com/gatehouse/gatehouse/ingest/reconcile"
	"github.com/gatehouse/gatehouse/internal/settings"
	"github.com/gatehouse/gatehouse/schemas/providers"
)

// event is a Stripe event of the list, as its webhook would carry it.
func event(id string, created time.Time) string {
	return fmt.Sprintf(`{"id":%q,"object":"event","type":"customer.created","created":%d,"data":{"object":{"id":"cus_%s","object":"customer"}}}`,
		id, created.Unix(), id)
}

func page(hasMore bool, evs ...string) string {
	return `{"object":"list","url":"/v1/events","has_more":` + strconv.FormatBool(hasMore) + `,"data":[` + strings.Join(evs, ",") + `]}`
}

// eventList serves pages[i] for the i-th call; past the pages, 500.
func eventList(t *testing.T, pages ...func(w http.ResponseWriter, r *http.Request)) (*httptest.Server, *atomic.Int64) {
	var n atomic.Int64
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := int(n.Add(1)) - 1
		if i >= len(pages) {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		pages[i](w, r)
	}))
	t.Cleanup(s.Close)
	return s, &n
}

func answer(status int, body string, hdr ...string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, _ *http.Request) {
		for i := 0; i+1 < len(hdr); i += 2 {
			w.Header().Set(hdr[i], hdr[i+1])
		}
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}
}

// A provider answering 429 or 500, a malformed page, or a cursor that goes
// backwards fails the pass with an error that says so; the events stored
// from the pages before stay stored, and the cursor does not move.
func TestBackfillFailsClearlyAndKeepsWhatItStored(t *testing.T) {
	now := time.Now().Truncate(time.Second)
	first := answer(200, page(true, event("evt_a", now.Add(-time.Minute))))
	for _, tc := range []struct {
		name string
		next func(http.ResponseWriter, *http.Request)
		want string
	}{
		{"429", answer(429, `{"error":{}}`, "Retry-After", "7"), "answered 429 (Retry-After 7)"},
		{"500", answer(500, `{}`), "answered 500"},
		{"malformed", answer(200, `{"object":"list","data":[{"id":`), "malformed page"},
		{"no id", answer(200, page(false, `{"object":"event","created":1}`)), "without id or created"},
		{"backwards", answer(200, page(false, event("evt_a", now.Add(-time.Minute)))), "cursor went backwards at evt_a"},
		{"later", answer(200, page(false, event("evt_b", now))), "cursor went backwards at evt_b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pool, w := inboxtest.NewWriter(t, 0)
			api, _ := eventList(t, first, tc.next)
			r := stripeReconciler(t, "stripe", api.URL, pool, w, now)
			res, err := r.Pass(context.Background(), reconcile.Options{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to say %q", err, tc.want)
			}
			if tc.name != "429" && tc.name != "500" && !errors.Is(err, reconcile.ErrMalformedPage) {
				t.Errorf("err = %v, want ErrMalformedPage", err)
			}
			if res.Closed != 1 || inboxtest.Count(t, pool, `SELECT count(*) FROM inbox WHERE event_id = 'evt_a' AND via = 'reconcile'`) != 1 {
				t.Fatalf("pass %+v: the event of the first page must stay stored", res)
			}
			var result, msg string
			var covered *time.Time
			if err := pool.QueryRow(context.Background(), `SELECT result, error, covered_until FROM reconcile_passes WHERE provider = 'stripe'`).
				Scan(&result, &msg, &covered); err != nil {
				t.Fatal(err)
			}
			if result != "failed" || !strings.Contains(msg, tc.want) || covered != nil {
				t.Fatalf("recorded %s %q until %v, want failed with the error and no cursor", result, msg, covered)
			}
		})
	}
}

// A pass never reaches further back than the dedupe window (less a
// margin): it asks for nothing older, and an older event the provider
// lists anyway is not stored (its key may be gone: it would be stored
// twice).
func TestBackfillStaysInsideTheDedupeWindow(t *testing.T) {
	now := time.Now().Truncate(time.Second)
	var gte atomic.Int64
	api, _ := eventList(t, func(w http.ResponseWriter, r *http.Request) {
		v, _ := strconv.ParseInt(r.URL.Query().Get("created[gte]"), 10, 64)
		gte.Store(v)
		answer(200, page(false, event("evt_new", now.Add(-time.Hour)), event("evt_old", now.Add(-80*time.Hour))))(w, r)
	})
	pool, w := inboxtest.NewWriter(t, 0)
	r := stripeReconciler(t, "stripe", api.URL, pool, w, now)
	res, err := r.Pass(context.Background(), reconcile.Options{Since: 30 * 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if floor := now.Add(-72 * time.Hour).Unix(); gte.Load() < floor {
		t.Errorf("created[gte] = %d, before the dedupe window's start %d", gte.Load(), floor)
	}
	if res.Closed != 1 || len(res.Missing) != 1 || res.Missing[0] != "evt_new" {
		t.Fatalf("pass %+v: want only evt_new stored", res)
	}
	if n := inboxtest.Count(t, pool, `SELECT count(*) FROM inbox WHERE event_id = 'evt_old'`); n != 0 {
		t.Fatal("an event older than the dedupe window was backfilled")
	}
}

// A pass stops at max_events and the next one resumes where it stopped:
// the durable cursor holds the part left, then moves to the end of the
// first pass's window.
func TestBackfillIsBoundedAndResumes(t *testing.T) {
	now := time.Now().Truncate(time.Second)
	evs := []string{event("evt_5", now.Add(-1*time.Minute)), event("evt_4", now.Add(-2*time.Minute)),
		event("evt_3", now.Add(-3*time.Minute)), event("evt_2", now.Add(-4*time.Minute)), event("evt_1", now.Add(-5*time.Minute))}
	var calls atomic.Int64
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		lte, _ := strconv.ParseInt(r.URL.Query().Get("created[lte]"), 10, 64)
		var in []string
		for i, e := range evs { // created ≤ lte, as Stripe filters
			if now.Add(-time.Duration(i+1)*time.Minute).Unix() <= lte {
				in = append(in, e)
			}
		}
		answer(200, page(false, in...))(w, r)
	}))
	t.Cleanup(api.Close)
	pool, w := inboxtest.NewWriter(t, 0)
	kind, _ := providers.Lookup("stripe")
	clock := now
	r, err := reconcile.New(reconcile.Config{Provider: "stripe", Kind: kind, Settings: settings.Reconcile{Enabled: true, MaxEvents: 2},
		APIURL: api.URL, DedupeWindow: 72 * time.Hour, Topic: "t", Pool: pool, Writer: w, Now: func() time.Time { return clock }})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var all []string
	for i := range 4 {
		res, err := r.Pass(ctx, reconcile.Options{})
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, res.Missing...)
		if i == 0 && (!res.Truncated || res.Listed != 2) {
			t.Fatalf("first pass %+v: want 2 listed and truncated", res)
		}
		clock = clock.Add(time.Second)
	}
	if got := strings.Join(all, ","); got != "evt_5,evt_4,evt_3,evt_2,evt_1" {
		t.Fatalf("stored over the passes: %s, want every event once", got)
	}
	if n := inboxtest.Count(t, pool, `SELECT count(*) FROM inbox`); n != 5 {
		t.Fatalf("%d inbox rows, want 5", n)
	}
	var covered time.Time
	var partial *time.Time
	if err := pool.QueryRow(ctx, `SELECT covered_until, partial_before FROM reconcile_passes`).Scan(&covered, &partial); err != nil {
		t.Fatal(err)
	}
	if partial != nil || covered.Before(now) {
		t.Fatalf("cursor %s (partial %v), want past %s with nothing left", covered, partial, now)
	}
}

// More events in one second than max_events: resuming there would list
// them again for ever, so the pass fails saying to raise max_events (what
// it stored stays).
func TestBoundedPassWithoutProgressFails(t *testing.T) {
	now := time.Now().Truncate(time.Second)
	at := now.Add(-time.Minute)
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		answer(200, page(false, event("evt_2", at), event("evt_1", at)))(w, r)
	}))
	t.Cleanup(api.Close)
	pool, w := inboxtest.NewWriter(t, 0)
	kind, _ := providers.Lookup("stripe")
	r, err := reconcile.New(reconcile.Config{Provider: "stripe", Kind: kind, Settings: settings.Reconcile{Enabled: true, MaxEvents: 1},
		APIURL: api.URL, DedupeWindow: 72 * time.Hour, Topic: "t", Pool: pool, Writer: w, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := r.Pass(context.Background(), reconcile.Options{}); err != nil || !res.Truncated {
		t.Fatalf("first pass %+v, %v: want truncated at the first event", res, err)
	}
	_, err = r.Pass(context.Background(), reconcile.Options{}) // resumes at the same second
	if !errors.Is(err, reconcile.ErrNoProgress) || !strings.Contains(err.Error(), "raise max_events") {
		t.Fatalf("err = %v, want ErrNoProgress", err)
	}
	if n := inboxtest.Count(t, pool, `SELECT count(*) FROM inbox`); n != 1 {
		t.Fatalf("%d stored, want the one event listed kept", n)
	}
}
