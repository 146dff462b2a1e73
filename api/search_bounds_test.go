package api_test

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gatehouse/gatehouse/api"
)

// A path=value search whose value holds control characters finds the
// payload holding them (the value is quoted as JSON, not as a Go string
// literal, which PostgreSQL refused: a 500), on the scan and the indexed
// path; a NUL, which no jsonb holds, is a 400 naming the parameter.
func TestSearchValueControlCharacters(t *testing.T) {
	pool := searchFixture(t)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `INSERT INTO inbox (provider, event_id, event_type, payload, received_at, verified, secret_id) VALUES
('shop', 'ctl', 'note.created', '{"data":{"note":"a\u0001b\u001fc\td\u007fe\"f\\g"}}', now() - interval '1 hour', true, 's')`); err != nil {
		t.Fatal(err)
	}
	value := "a\x01b\x1fc\td\x7fe\"f\\g"
	for _, indexed := range []bool{false, true} {
		ib := api.Inbox{Pool: pool}
		if indexed {
			ib.SearchIndexed = func(p string) bool { return p == "shop" }
		}
		page, err := ib.ListEvents(ctx, api.EventFilter{Provider: "shop", Paths: []api.PathValue{{Path: "data.note", Value: value}}}, nil, 10)
		if err != nil || len(page.Events) != 1 || page.Events[0].EventID != "ctl" {
			t.Errorf("indexed=%v: %v %v, want the event ctl", indexed, page.Events, err)
		}
	}

	f := newFixture(t, fixtureOpts{operator: true})
	op := f.token("dave", "events:read", "roles", []string{"gatehouse:operator"})
	for q, want := range map[string]int{
		"path=" + url.QueryEscape("data.note=a\x01b\x1f\x7f"):      200,
		"provider=acme&path=" + url.QueryEscape("data.note=a\x01"): 200,
		"path=" + url.QueryEscape("data.note=a\x00b"):              400,
		"path=" + url.QueryEscape("data.note=a\xffb"):              400,
		"match=" + url.QueryEscape(`{"note":"a\u0000b"}`):          400,
		"match=" + url.QueryEscape(`{"note":"a\u0001b"}`):          200,
	} {
		a := f.bearerGet("/api/v1/events?"+q, op)
		if a.status != want {
			t.Errorf("%s: %d %s, want %d", q, a.status, a.raw, want)
		}
		if desc, _ := a.body["error_description"].(string); want == 400 && !strings.Contains(desc, "without") {
			t.Errorf("%s: %q does not say why", q, desc)
		}
	}
}

// An indexed search over a long window reads at most SearchSpan of it a
// page, newest first: a page not full is partial with a next_cursor to
// the next older span, and the search ends (no cursor) once the span
// reaches past the oldest row kept. The scan path's answers are the same.
func TestIndexedSearchSpan(t *testing.T) {
	pool := searchFixture(t)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `INSERT INTO inbox (provider, event_id, event_type, payload, received_at, verified, secret_id) VALUES
('shop', 'd10', 'order.created', '{"data":{"object":{"customer":"cus_123"}}}', now() - interval '10 days', true, 's'),
('shop', 'd20', 'order.created', '{"data":{"object":{"customer":"cus_123"}}}', now() - interval '20 days', true, 's')`); err != nil {
		t.Fatal(err)
	}
	since := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	f := api.EventFilter{Provider: "shop", Match: `{"data":{"object":{"customer":"cus_123"}}}`, Since: &since}
	ib := api.Inbox{Pool: pool, SearchIndexed: func(p string) bool { return p == "shop" }, SearchSpan: 7 * 24 * time.Hour}
	var got [][]string
	var after *api.EventCursor
	for range 10 {
		page, err := ib.ListEvents(ctx, f, after, 10)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, e := range page.Events {
			ids = append(ids, e.EventID)
		}
		got = append(got, ids)
		if page.Next == nil {
			if page.Partial {
				t.Error("a partial page without a cursor")
			}
			break
		}
		if !page.Partial {
			t.Errorf("page %d of %d events has a cursor but is not partial", len(got), len(ids))
		}
		// Through the API's encoding, as a client pages.
		if after, err = api.ParseEventCursor(page.Next.String()); err != nil {
			t.Fatal(err)
		}
	}
	// [now-7d, now): o2, o1 and the 3 days old; [now-14d-3h…): d10; [now-21d…): d20, and
	// nothing is older: the search ends.
	want := [][]string{{"o2", "o1", "old"}, {"d10"}, {"d20"}}
	if !slices.EqualFunc(got, want, slices.Equal[[]string]) {
		t.Errorf("pages %v, want %v", got, want)
	}
	page, err := api.Inbox{Pool: pool}.ListEvents(ctx, f, nil, 10)
	if err != nil || len(page.Events) != 5 || page.Partial {
		t.Errorf("the scan path: %d events (partial %v), %v", len(page.Events), page.Partial, err)
	}
	// A window within the span is one page, as before.
	recent := time.Now().Add(-48 * time.Hour)
	f.Since = &recent
	if page, err := ib.ListEvents(ctx, f, nil, 10); err != nil || len(page.Events) != 2 || page.Partial || page.Next != nil {
		t.Errorf("a 2-day window: %d events, partial %v, next %v, %v", len(page.Events), page.Partial, page.Next, err)
	}
}

// A read that runs past api.read_timeout (here a query waiting on a lock)
// is answered 503 with Retry-After and a message naming the setting, and
// its query is cancelled on the server, not left waiting; the next read
// once the lock is gone is answered.
func TestReadTimeout(t *testing.T) {
	f := newFixture(t, fixtureOpts{operator: true, api: func(c *api.Config) { c.ReadTimeout = 300 * time.Millisecond }})
	op := f.token("dave", "events:read", "roles", []string{"gatehouse:operator"})
	ctx := context.Background()
	lockPool, err := pgxpool.New(ctx, f.pool.Config().ConnString())
	if err != nil {
		t.Fatal(err)
	}
	defer lockPool.Close()
	tx, err := lockPool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `LOCK TABLE inbox IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	req, _ := http.NewRequest("GET", f.srv.URL+"/api/v1/events?processing_state=dead", nil)
	req.Header.Set("Authorization", "Bearer "+op)
	resp, err := (&http.Client{Timeout: 15 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("no answer while the read waits: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 503 || !strings.Contains(string(body), `"temporarily_unavailable"`) || !strings.Contains(string(body), "api.read_timeout") {
		t.Fatalf("a read past its timeout: %d %s", resp.StatusCode, body)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("answered after %s", took)
	}
	if resp.Header.Get("Retry-After") != "1" {
		t.Errorf("Retry-After %q, want 1", resp.Header.Get("Retry-After"))
	}
	// The server holds no query of the API waiting for the lock.
	deadline := time.Now().Add(5 * time.Second)
	for {
		var waiting int
		if err := lockPool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
WHERE wait_event_type = 'Lock' AND query LIKE '%FROM inbox%' AND pid <> pg_backend_pid()`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d queries still wait on the server after their read timed out", waiting)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if a := f.bearerGet("/api/v1/events?processing_state=dead", op); a.status != 200 {
		t.Errorf("after the lock: %d %s", a.status, a.raw)
	}
	if !strings.Contains(f.logs.String(), "api read timed out") {
		t.Error("the timeout is not logged")
	}
}
