package reconcile_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/ingest/inbox/inboxtest"
	"github.com/gatehouse/gatehouse/ingest/reconcile"
	"github.com/gatehouse/gatehouse/internal/settings"
	"github.com/gatehouse/gatehouse/schemas/providers"
)

// squareEvent is a Square event of the search, as its webhook carries it.
func squareEvent(id string, at time.Time) string {
	return fmt.Sprintf(`{"merchant_id":"M1","type":"payment.updated","event_id":%q,"created_at":%q,"data":{"type":"payment","id":"p_%s"}}`,
		id, at.UTC().Format(time.RFC3339), id)
}

// A list whose next cursor comes from the answer (Square's) fails the
// pass clearly when the cursor does not move (the same page would be
// read for ever) or is not a string, and when an answer has no events
// array; the events of the page before stay stored.
func TestNextCursorFailsClearlyAndKeepsWhatItStored(t *testing.T) {
	now := time.Now().Truncate(time.Second)
	first := answer(200, `{"events":[`+squareEvent("ev_a", now.Add(-time.Minute))+`],"cursor":"c1"}`)
	for _, tc := range []struct {
		name string
		next string
		want string
	}{
		{"still", `{"events":[` + squareEvent("ev_b", now.Add(-2*time.Minute)) + `],"cursor":"c1"}`, "the cursor did not move"},
		{"number", `{"events":[],"cursor":7}`, "cursor is not a string"},
		{"no events", `{"cursor":"c2"}`, "no events array"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pool, w := inboxtest.NewWriter(t, 0)
			api, _ := eventList(t, first, answer(200, tc.next))
			kind, _ := providers.Lookup("square")
			r, err := reconcile.New(reconcile.Config{Provider: "square", Kind: kind, Settings: settings.Reconcile{Enabled: true},
				APIURL: api.URL, DedupeWindow: 72 * time.Hour, Topic: "t", Pool: pool, Writer: w, Now: func() time.Time { return now }})
			if err != nil {
				t.Fatal(err)
			}
			res, err := r.Pass(context.Background(), reconcile.Options{})
			if !errors.Is(err, reconcile.ErrMalformedPage) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want a malformed page saying %q", err, tc.want)
			}
			if res.Closed != 1 || inboxtest.Count(t, pool, `SELECT count(*) FROM inbox WHERE event_id = 'ev_a' AND via = 'reconcile'`) != 1 {
				t.Fatalf("pass %+v: the event of the first page must stay stored", res)
			}
		})
	}
}

// An event list declares a known method and time format.
func TestEventListValidatesMethodAndTimeFormat(t *testing.T) {
	base := providers.EventList{Path: "/events", Items: "data", ID: "id", Time: "t", Cursor: "c", More: "m"}
	for _, tc := range []struct {
		mod  func(*providers.EventList)
		want string
	}{
		{func(l *providers.EventList) { l.Method = "PUT" }, "x.method"},
		{func(l *providers.EventList) { l.TimeFormat = "iso" }, "x.time_format"},
		{func(l *providers.EventList) { l.More = "" }, "x.more: required"},
		{func(l *providers.EventList) { l.More, l.Next = "", "cursor" }, ""},
		{func(l *providers.EventList) { l.Method, l.TimeFormat = "POST", "rfc3339" }, ""},
	} {
		l := base
		tc.mod(&l)
		err := l.Validate("x")
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%+v: err = %v, want %q", l, err, tc.want)
		}
	}
}

// A paging URL on another host than api_url is not followed: the
// credential would go there. The pass fails; the page before stays stored.
func TestPagingURLOnAnotherHostIsNotFollowed(t *testing.T) {
	now := time.Now().Truncate(time.Second)
	item := fmt.Sprintf(`{"id":"mg_a","event":"delivered","timestamp":%d.5}`, now.Add(-time.Minute).Unix())
	var hits atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		_, _ = w.Write([]byte(`{"items":[],"paging":{}}`))
	}))
	t.Cleanup(other.Close)
	api, _ := eventList(t, answer(200, `{"items":[`+item+`],"paging":{"next":"`+other.URL+`/v3/d/events/x"}}`))
	pool, w := inboxtest.NewWriter(t, 0)
	kind, _ := providers.Lookup("mailgun")
	r, err := reconcile.New(reconcile.Config{Provider: "mailgun", Kind: kind, Settings: settings.Reconcile{Enabled: true},
		APIURL: api.URL + "/v3/d", APIKey: []byte("api:key-test"), DedupeWindow: 72 * time.Hour, Topic: "t", Pool: pool, Writer: w,
		Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Pass(context.Background(), reconcile.Options{})
	if !errors.Is(err, reconcile.ErrMalformedPage) || !strings.Contains(err.Error(), "not on the API's host") {
		t.Fatalf("err = %v, want the paging URL refused", err)
	}
	if hits.Load() != 0 {
		t.Fatal("the other host was called")
	}
	if res.Closed != 1 {
		t.Fatalf("pass %+v: the first page's event must stay stored", res)
	}
}
