package console

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gatehouse/gatehouse/api"
	"github.com/gatehouse/gatehouse/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

var (
	operator = api.User{Issuer: "https://op.test/", Subject: "alice"}
	visitor  = api.User{Issuer: "https://op.test/", Subject: "bob"}
)

// headerSessions stands in for the session store in these handler tests
// (the Chromium test signs in for real): X-Test-User names the subject.
type headerSessions struct{ api.SessionStore }

func (headerSessions) SessionFromRequest(r *http.Request) (string, api.User, error) {
	if s := r.Header.Get("X-Test-User"); s != "" {
		return "sid", api.User{Issuer: "https://op.test/", Subject: s}, nil
	}
	return "", api.User{}, api.ErrNoSession
}

// DisplayName is the X-Test-Name header (the OP's name or e-mail).
func (headerSessions) DisplayName(r *http.Request) string { return r.Header.Get("X-Test-Name") }

// The header names the operator as the OP did (name or e-mail), not by the
// opaque subject; the subject only when the OP gave neither (issue 36).
func TestHeaderNamesTheOperator(t *testing.T) {
	srv, _ := newServer(t)
	for name, want := range map[string]string{"Alice Example": "signed in as Alice Example", "": "signed in as alice"} {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/console/events", nil)
		req.Header.Set("X-Test-User", operator.Subject)
		req.Header.Set("X-Test-Name", name)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(b), want) {
			t.Errorf("name %q: the header does not say %q", name, want)
		}
	}
}

func newServer(t *testing.T) (*httptest.Server, *pgxpool.Pool) {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), testenv.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	c, err := New(Config{Pool: pool, Sessions: headerSessions{}, Operators: []api.User{operator}})
	if err != nil {
		t.Fatal(err)
	}
	r := chi.NewRouter()
	c.Routes(r)
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	return srv, pool
}

// post posts form (URL-encoded) to path as user.
func post(t *testing.T, srv *httptest.Server, path, form, user string) (int, http.Header, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, srv.URL+path, strings.NewReader(form))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if user != "" {
		req.Header.Set("X-Test-User", user)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

func get(t *testing.T, srv *httptest.Server, path, user string) (int, http.Header, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
	if user != "" {
		req.Header.Set("X-Test-User", user)
	}
	resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

func insertEvent(t *testing.T, pool *pgxpool.Pool, provider, id, state, payload string) {
	t.Helper()
	if _, err := pool.Exec(context.Background(), `INSERT INTO inbox (provider, event_id, event_type, payload, verified, secret_id, processing_state, attempts, last_error_class, last_error)
VALUES ($1, $2, 'payment.failed', $3::jsonb, true, 's1', $4, 3, 'permanent', 'api answered 404')`, provider, id, payload, state); err != nil {
		t.Fatal(err)
	}
}

func TestAccess(t *testing.T) {
	srv, _ := newServer(t)
	code, h, _ := get(t, srv, "/console/events?state=dead", "")
	if code != http.StatusSeeOther || h.Get("Location") != "/signin?next=%2Fconsole%2Fevents%3Fstate%3Ddead" {
		t.Errorf("no session: %d %q, want a redirect to the sign-in page", code, h.Get("Location"))
	}
	code, h, body := get(t, srv, "/console/", visitor.Subject)
	if code != http.StatusForbidden || !strings.Contains(body, "operator role is required") {
		t.Errorf("non-operator: %d", code)
	}
	if !strings.Contains(h.Get("Content-Security-Policy"), "script-src 'self'") || h.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("security headers: %v", h)
	}
	if code, _, body := get(t, srv, "/console/", operator.Subject); code != 200 || !strings.Contains(body, "Outbox and relay") {
		t.Errorf("operator overview: %d", code)
	}
	if code, h, _ := get(t, srv, "/console/static/app.js", ""); code != 200 || !strings.Contains(h.Get("Content-Type"), "javascript") {
		t.Errorf("static script: %d %s", code, h.Get("Content-Type"))
	}
}

func TestFiltersAndPaging(t *testing.T) {
	srv, pool := newServer(t)
	for i := range 60 {
		insertEvent(t, pool, "demo", fmt.Sprintf("evt_%02d", i), "dead", `{"id":"x"}`)
	}
	for path, want := range map[string]string{
		"/console/events?state=AAA":          "state: must be one of",
		"/console/events?since=yesterday":    "since: want a time",
		"/console/events?after=not-a-cursor": "after: not a page position",
	} {
		code, _, body := get(t, srv, path, operator.Subject)
		if code != http.StatusBadRequest || !strings.Contains(body, want) {
			t.Errorf("%s: %d, want 400 with %q", path, code, want)
		}
	}
	code, _, body := get(t, srv, "/console/events?provider=demo&state=dead", operator.Subject)
	if code != 200 || strings.Count(body, `href="/console/events/demo/evt_`) != 50 || !strings.Contains(body, `rel="next"`) {
		t.Fatalf("first page: %d, %d rows", code, strings.Count(body, `href="/console/events/demo/evt_`))
	}
	// A provider alone is not indexed: the page says it searched the last
	// 24 hours (api.ListEvents); a time range given, it does not.
	if !strings.Contains(body, `id="window"`) || !strings.Contains(body, "search the last 24 hours") {
		t.Errorf("provider filter without a time range: the page does not state its window")
	}
	if _, _, b := get(t, srv, "/console/events?provider=demo&since=2000-01-01T00:00", operator.Subject); strings.Contains(b, `id="window"`) {
		t.Errorf("provider filter with a time range: the page states a server window")
	}
	i := strings.Index(body, `href="/console/events?`)
	next := strings.ReplaceAll(body[i+len(`href="`):i+strings.Index(body[i:], `" rel`)], "&amp;", "&")
	code, _, body = get(t, srv, next, operator.Subject)
	if code != 200 || strings.Count(body, `href="/console/events/demo/evt_`) != 10 || strings.Contains(body, `rel="next"`) {
		t.Fatalf("second page %s: %d, %d rows", next, code, strings.Count(body, `href="/console/events/demo/evt_`))
	}
	if code, _, body := get(t, srv, "/console/dead", operator.Subject); code != 200 || !strings.Contains(body, "demo · payment.failed · permanent (60)") {
		t.Errorf("dead letters grouped: %d", code)
	}
}

// The events page searches payloads (match, path) like the API, posted
// by its form, never in a URL (a GET carrying them is a 400 naming the
// form); a search's next page is a form posting the search again; the
// page takes the API's processing_state= as its own state=.
func TestPayloadSearchPage(t *testing.T) {
	srv, pool := newServer(t)
	insertEvent(t, pool, "demo", "evt_cus_1", "dead", `{"id":"evt_cus_1","data":{"customer":"cus_1"}}`)
	insertEvent(t, pool, "demo", "evt_cus_2", "dead", `{"id":"evt_cus_2","data":{"customer":"cus_2"}}`)
	for form, want := range map[string][]string{
		"match=" + url.QueryEscape(`{"data":{"customer":"cus_2"}}`):               {"evt_cus_2"},
		"path=" + url.QueryEscape("data.customer=cus_1"):                          {"evt_cus_1"},
		"processing_state=dead&path=" + url.QueryEscape("id=evt_cus_2"):           {"evt_cus_2"},
		"state=dead&provider=demo&match=" + url.QueryEscape(`{"id":"evt_cus_1"}`): {"evt_cus_1"},
	} {
		code, _, body := post(t, srv, "/console/events", form, operator.Subject)
		if code != 200 {
			t.Fatalf("%s: %d", form, code)
		}
		for _, id := range []string{"evt_cus_1", "evt_cus_2"} {
			if shown := strings.Contains(body, `href="/console/events/demo/`+id+`"`); shown != slices.Contains(want, id) {
				t.Errorf("%s: %s shown %v", form, id, shown)
			}
		}
		if !strings.Contains(body, `<form method="post" action="/console/events" class="filters"`) {
			t.Errorf("the events page's form does not post")
		}
		if code, _, body := get(t, srv, "/console/events?"+form, operator.Subject); code != 400 || !strings.Contains(body, "not accepted in a URL") {
			t.Errorf("GET ?%s: %d, want 400 naming the form", form, code)
		}
	}
	for i := range 55 {
		insertEvent(t, pool, "demo", fmt.Sprintf("evt_many_%02d", i), "dead", `{"id":"x","data":{"customer":"cus_many"}}`)
	}
	search := "path=" + url.QueryEscape("data.customer=cus_many")
	code, _, body := post(t, srv, "/console/events", search, operator.Subject)
	if code != 200 || strings.Count(body, `href="/console/events/demo/evt_many_`) != 50 || !strings.Contains(body, `id="next-page"`) ||
		strings.Contains(body, `rel="next"`) || strings.Contains(body, "cus_many&") {
		t.Fatalf("a search's first page: %d, %d rows, a next-page form %v", code, strings.Count(body, `href="/console/events/demo/evt_many_`), strings.Contains(body, `id="next-page"`))
	}
	i := strings.Index(body, `name="after" value="`) + len(`name="after" value="`)
	after := html.UnescapeString(body[i : i+strings.IndexByte(body[i:], '"')])
	code, _, body = post(t, srv, "/console/events", search+"&after="+url.QueryEscape(after), operator.Subject)
	if code != 200 || strings.Count(body, `href="/console/events/demo/evt_many_`) != 5 || strings.Contains(body, `id="next-page"`) {
		t.Fatalf("a search's second page: %d, %d rows", code, strings.Count(body, `href="/console/events/demo/evt_many_`))
	}
	if code, _, body := post(t, srv, "/console/events", "match=%5B1%5D", operator.Subject); code != 400 || !strings.Contains(body, "match: must be a JSON object") {
		t.Errorf("a match that is not an object: %d", code)
	}
	if code, _, body := get(t, srv, "/console/events?processing_state=nonsense", operator.Subject); code != 400 || !strings.Contains(body, "state: must be one of") {
		t.Errorf("processing_state is the page's state: %d", code)
	}
}

// Payloads are attacker-controlled: every stored value is escaped.
func TestStoredValuesAreEscaped(t *testing.T) {
	srv, pool := newServer(t)
	insertEvent(t, pool, "demo", `evt_<b>x</b>`, "dead",
		`{"id":"<script>alert(1)</script>","<img src=x onerror=alert(2)>":"\"><svg onload=alert(3)>"}`)
	for _, path := range []string{"/console/events?provider=demo", "/console/events/demo/evt_%3Cb%3Ex%3C%2Fb%3E", "/console/dead"} {
		code, _, body := get(t, srv, path, operator.Subject)
		if code != 200 {
			t.Fatalf("%s: %d", path, code)
		}
		for _, raw := range []string{"<script>alert", "<img src=x", "<svg onload", "<b>x</b>"} {
			if strings.Contains(body, raw) {
				t.Errorf("%s: unescaped %q in the page", path, raw)
			}
		}
	}
	_, _, body := get(t, srv, "/console/events/demo/evt_%3Cb%3Ex%3C%2Fb%3E", operator.Subject)
	if !strings.Contains(body, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Errorf("the payload is not shown escaped")
	}
}

// TestOverviewFigures: the overview's per-provider figures, read from
// indexes (received in the last hour, events in open states, processed
// events of the last hour), not from a scan of the whole inbox.
func TestOverviewFigures(t *testing.T) {
	srv, pool := newServer(t)
	ctx := context.Background()
	for _, s := range []string{"pending", "pending", "processing", "retrying", "dead"} {
		insertEvent(t, pool, "demo", "evt_"+s+fmt.Sprint(time.Now().UnixNano()), s, `{}`)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO processed_events (provider, event_id, outcome, processed_at) VALUES
('demo', 'a', 'succeeded', now()), ('demo', 'b', 'succeeded', now()), ('demo', 'c', 'skipped', now()),
('demo', 'd', 'ignored_stale', now()), ('demo', 'old', 'succeeded', now() - interval '2 hours')`); err != nil {
		t.Fatal(err)
	}
	code, _, body := get(t, srv, "/console/overview.json", operator.Subject)
	var o Overview
	if err := json.Unmarshal([]byte(body), &o); code != 200 || err != nil || len(o.Providers) != 1 {
		t.Fatalf("overview: %d %v %s", code, err, body)
	}
	p := o.Providers[0]
	if p.Provider != "demo" || p.ReceivedHour != 5 || p.Pending != 3 || p.Retrying != 1 || p.Dead != 1 || p.OldestOpen == nil ||
		p.Succeeded != 2 || p.Skipped != 1 || p.Stale != 1 {
		t.Fatalf("overview figures: %+v", p)
	}
}

// The charts page draws, for the last hour and the last day, the answers
// per minute by class, the ack latency's p50 and p99 and the stages' queue
// ages from pipeline_minutes, as SVG without script; a malformed provider
// is a 400 that names it.
func TestChartsPage(t *testing.T) {
	srv, pool := newServer(t)
	if _, err := pool.Exec(context.Background(), `INSERT INTO pipeline_minutes (provider, minute, accepted, duplicate, rejected, refused, ack_buckets, relay_age_s, consume_age_s)
SELECT 'demo', date_trunc('minute', now()) - make_interval(mins => i), 60 + i, 2, 1, 0, ARRAY[0,0,0,50,10,0,0,0,0,0,0,0,0], NULL, NULL FROM generate_series(0, 30) i
UNION ALL SELECT '', date_trunc('minute', now()) - make_interval(mins => i), 0, 0, 0, 0, '{}', 0.5, 2 FROM generate_series(0, 30) i`); err != nil {
		t.Fatal(err)
	}
	code, h, body := get(t, srv, "/console/charts?provider=demo", operator.Subject)
	if code != 200 {
		t.Fatalf("charts: %d", code)
	}
	if n := strings.Count(body, "<svg "); n != 6 {
		t.Errorf("%d charts, want 6 (3 per range)", n)
	}
	// 31 minutes of 60 + i accepted (i = 0…30): 60·31 + 465.
	if !strings.Contains(body, `<span id="accepted-hour">2325</span>`) || !strings.Contains(body, `<span id="accepted-day">2325</span>`) {
		t.Errorf("the ranges' totals are not the rows' sums")
	}
	for _, class := range []string{"series-accepted", "series-p50", "series-p99", "series-relay", "series-consume"} {
		if !strings.Contains(body, `<polyline class="series `+class+`" points="`) {
			t.Errorf("no %s line", class)
		}
	}
	if strings.Contains(body, "<script>") || !strings.Contains(h.Get("Content-Security-Policy"), "default-src") {
		t.Errorf("the page holds a script or lost its CSP: %q", h.Get("Content-Security-Policy"))
	}
	if code, _, body := get(t, srv, "/console/charts?provider=%3Cx%3E", operator.Subject); code != 400 || !strings.Contains(body, "provider: must be") {
		t.Errorf("malformed provider: %d", code)
	}
	if code, _, _ := get(t, srv, "/console/charts", visitor.Subject); code != 403 {
		t.Errorf("a visitor: %d, want 403", code)
	}
}
