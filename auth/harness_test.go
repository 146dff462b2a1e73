package auth

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/internal/testkit"

	"github.com/go-chi/chi/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
)

// rp is gatehouse's auth Service behind a TLS test server, against a hostile OP.
type rp struct {
	t     *testing.T
	op    *hostileOP
	svc   *Service
	store *Store
	pool  *pgxpool.Pool
	srv   *httptest.Server
	logs  *testkit.SyncBuffer
	clk   *clock
	base  string
}

func newRP(t *testing.T, pool *pgxpool.Pool, op *hostileOP, edit func(*Settings)) *rp {
	t.Helper()
	h := &rp{t: t, op: op, pool: pool, logs: &testkit.SyncBuffer{}, clk: &clock{t: time.Now()}}
	var handler http.Handler = http.NotFoundHandler()
	h.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler.ServeHTTP(w, r) }))
	h.srv.StartTLS()
	t.Cleanup(h.srv.Close)
	h.base = h.srv.URL
	a := testAuthConfig(t)
	a.Issuer = op.issuer()
	a.ClientID = hostileClientID
	a.ClientSecret, a.OperatorToken = []byte(hostileSecret), []byte("operator-token-abc")
	a.RedirectURL = h.base + "/callback"
	a.Scopes = []string{"profile", "email"}
	a.RefreshBefore = time.Minute
	a.IDTokenAlgs = []string{"RS256"}
	a.LoginTimeout = 10 * time.Minute
	a.OPRevokeInterval = 50 * time.Millisecond
	if edit != nil {
		edit(&a)
	}
	log := slog.New(slog.NewJSONHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	var err error
	h.store, err = NewStore(StoreConfig{Pool: pool, Auth: a, Logger: log, Now: h.clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	h.svc, err = New(context.Background(), Config{Auth: a, Store: h.store, Logger: log, Registerer: prometheus.NewRegistry(),
		Now: h.clk.Now, HTTPClient: h.op.srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	r := chi.NewRouter()
	h.svc.Routes(r)
	handler = r
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = h.svc.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return h
}

// browser is a fresh cookie jar that trusts the test server and follows redirects.
func (h *rp) browser() *http.Client {
	jar, _ := cookiejar.New(nil)
	c := *h.srv.Client() // a copy: the server's client is shared
	c.Jar = jar
	return &c
}

// noFollow is a client that stops at the first redirect (same jar).
func noFollow(c *http.Client) *http.Client {
	cc := *c
	cc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &cc
}

type page struct {
	status int
	url    string
	body   string
}

var kindRE = regexp.MustCompile(`data-kind="([a-z_]+)"`)

// kind is the error page kind, "" when the page is not an error page.
func (p page) kind() string {
	m := kindRE.FindStringSubmatch(p.body)
	if m == nil {
		return ""
	}
	return m[1]
}

func (h *rp) get(c *http.Client, u string) page {
	h.t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		h.t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return page{status: resp.StatusCode, url: resp.Request.URL.String(), body: string(b)}
}

func (h *rp) post(c *http.Client, path string, hdr map[string]string) page {
	h.t.Helper()
	req, _ := http.NewRequest("POST", h.base+path, strings.NewReader(""))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		h.t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return page{status: resp.StatusCode, url: resp.Request.URL.String(), body: string(b)}
}

// login runs the whole flow in browser c and returns the final page.
func (h *rp) login(c *http.Client) page { return h.get(c, h.base+"/login?next=/account") }

// mustLogin logs in and fails unless /account shows the user.
func (h *rp) mustLogin(c *http.Client) page {
	h.t.Helper()
	p := h.login(c)
	if p.status != 200 || !strings.Contains(p.body, `id="subject">`+hostileSubject) {
		h.t.Fatalf("login failed: status %d at %s kind %q\nlogs:\n%s", p.status, p.url, p.kind(), h.logs.String())
	}
	return p
}

func (h *rp) sessionCookie(c *http.Client) *http.Cookie {
	for _, ck := range c.Jar.Cookies(mustURL(h.base)) {
		if ck.Name == h.store.CookieName() {
			return ck
		}
	}
	return nil
}

func (h *rp) sessionID(c *http.Client) string {
	h.t.Helper()
	ck := h.sessionCookie(c)
	if ck == nil {
		h.t.Fatal("no session cookie")
	}
	s, err := h.store.Lookup(context.Background(), ck.Value)
	if err != nil {
		h.t.Fatalf("session of cookie: %v", err)
	}
	return s.ID
}

func ioNopCloser(s string) io.ReadCloser { return io.NopCloser(strings.NewReader(s)) }

// startLoginServer serves the login stage (its routes and its background
// work) for a as the end-to-end tests run it: on ln, against the real OP a
// names, logging JSON at debug level into the returned buffer.
func startLoginServer(t *testing.T, ctx context.Context, ln net.Listener, pool *pgxpool.Pool, a Settings) (*testkit.SyncBuffer, *Store, *Service) {
	t.Helper()
	logs := &testkit.SyncBuffer{}
	log := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	store, err := NewStore(StoreConfig{Pool: pool, Auth: a, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := New(ctx, Config{Auth: a, Store: store, Logger: log, Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	r := chi.NewRouter()
	svc.Routes(r)
	srv := &http.Server{Handler: r}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	runCtx, stop := context.WithCancel(ctx)
	runDone := make(chan struct{})
	go func() { defer close(runDone); _ = svc.Run(runCtx) }()
	t.Cleanup(func() { stop(); <-runDone })
	return logs, store, svc
}
