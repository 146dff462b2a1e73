package api_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/gatehouse/gatehouse/api"
	"github.com/gatehouse/gatehouse/auth"
	"github.com/gatehouse/gatehouse/auth/bearer"
	"github.com/gatehouse/gatehouse/auth/bearer/bearertest"
	"github.com/gatehouse/gatehouse/ingest/admin"
	"github.com/gatehouse/gatehouse/internal/config"
	"github.com/gatehouse/gatehouse/internal/testenv"
	"github.com/gatehouse/gatehouse/wiring"
)

func TestMain(m *testing.M) { testenv.Main(m) }

const audience = "https://gatehouse.test/api"

// fixture is a running API over a real, migrated PostgreSQL database, with
// the real session store of the login stage and an in-test token issuer.
type fixture struct {
	t     *testing.T
	is    *bearertest.Issuer
	pool  *pgxpool.Pool
	srv   *httptest.Server
	store *auth.Store
	now   time.Time // the verifier's clock
	logs  *bytes.Buffer
	cfg   *config.Config
}

type fixtureOpts struct {
	verifier func(*bearer.Config)
	operator bool // carol is a configured operator
	api      func(*api.Config)
}

func newFixture(t *testing.T, o fixtureOpts) *fixture {
	t.Helper()
	ctx := context.Background()
	f := &fixture{t: t, is: bearertest.NewIssuer(t), now: time.Now().Truncate(time.Second), logs: &bytes.Buffer{}}
	pool, err := pgxpool.New(ctx, testenv.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	f.pool = pool
	key := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32))
	yaml := fmt.Sprintf(`
database_url: postgres://unused
providers:
  acme:
    scheme: reference
    secrets: [{value: s1}]
    timestamp_header: X-Ts
    signature_header: X-Sig
    aggregate_id_path: [data.payment_id]
    owner_path: customer.metadata.owner
  beta:
    scheme: reference
    secrets: [{value: s2}]
    timestamp_header: X-Ts
    signature_header: X-Sig
    topic: beta-events
    owner_path: owner
    owner_issuer: %s
  noowner:
    scheme: reference
    secrets: [{value: s3}]
    timestamp_header: X-Ts
    signature_header: X-Sig
auth:
  issuer: https://op.test/
  client_id: web
  redirect_url: https://app.test/callback
  encryption_keys: [{id: k1, value: %q}]
`, f.is.URL, key)
	f.cfg, err = config.Parse([]byte(yaml), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(f.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	f.store, err = auth.NewStore(auth.StoreConfig{Pool: pool, Auth: auth.SettingsOf(&f.cfg.Auth), Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	bc := bearer.Config{
		Issuers:          []bearer.Issuer{{Issuer: f.is.URL}},
		Audience:         audience,
		IDTokenAudiences: []string{"web"},
		Now:              func() time.Time { return f.now },
		Logger:           log,
	}
	if o.verifier != nil {
		o.verifier(&bc)
	}
	v, err := bearer.New(bc)
	if err != nil {
		t.Fatal(err)
	}
	ac := api.Config{
		Verifier: v, Sessions: api.AuthSessions(f.store), Replayer: api.IngestReplayer(pool, wiring.ReplayTargets(f.cfg)),
		Eraser: api.IngestEraser(pool, wiring.ReplayTargets(f.cfg), admin.NewAuditKey(f.cfg.Auth.EncryptionKeys[0].ID, f.cfg.Auth.EncryptionKeys[0].Key())), Pool: pool, Providers: wiring.APIProviders(f.cfg),
		Logger: log, Registerer: prometheus.NewRegistry(),
	}
	if o.operator {
		ac.Operators = []api.User{{Issuer: f.is.URL, Subject: "carol"}}
	}
	if o.api != nil {
		o.api(&ac)
	}
	srv, err := api.New(ac)
	if err != nil {
		t.Fatal(err)
	}
	r := chi.NewRouter()
	srv.Routes(r)
	f.srv = httptest.NewServer(r)
	t.Cleanup(f.srv.Close)
	f.seed(ctx)
	return f
}

// seed writes inbox rows, projected objects and sessions.
func (f *fixture) seed(ctx context.Context) {
	t := f.t
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := f.pool.Exec(ctx, sql, args...); err != nil {
			t.Fatalf("seed: %v\n%s", err, sql)
		}
	}
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, ev := range []struct{ provider, id, typ, state string }{
		{"acme", "evt_1", "payment.succeeded", "dead"},
		{"acme", "evt_2", "payment.succeeded", "succeeded"},
		{"acme", "evt_3", "invoice.paid", "pending"},
		{"beta", "evt_4", "invoice.paid", "dead"},
		{"beta", "evt_5", "invoice.paid", "retrying"},
	} {
		payload := fmt.Sprintf(`{"id":%q,"type":%q,"created_at":"2026-01-01T00:00:00Z","data":{"payment_id":"pay_%d"}}`, ev.id, ev.typ, i+1)
		exec(`INSERT INTO inbox (provider, event_id, event_type, payload, received_at, verified, secret_id, processing_state, attempts, last_error)
VALUES ($1, $2, $3, $4, $5, true, 'secret1', $6, 3, 'boom')`, ev.provider, ev.id, ev.typ, payload, base.Add(time.Duration(i)*time.Minute), ev.state)
	}
	for _, o := range []struct{ provider, id, data string }{
		{"acme", "pay_1", fmt.Sprintf(`{"customer":{"metadata":{"owner":%q}}}`, f.is.URL+" alice")},
		{"acme", "pay_2", fmt.Sprintf(`{"customer":{"metadata":{"owner":%q}}}`, f.is.URL+" bob")},
		{"acme", "pay_3", `{"customer":{"metadata":{"owner":"https://other-issuer.test alice"}}}`},
		{"beta", "inv_1", `{"owner":"alice"}`},
		{"beta", "inv_2", `{"owner":"bob"}`},
		{"noowner", "x_1", `{"owner":"alice"}`},
	} {
		exec(`INSERT INTO provider_objects (provider, object_id, object_type, version, data, last_event_id) VALUES ($1, $2, 'thing', 1, $3, 'evt_0')`,
			o.provider, o.id, o.data)
	}
}

// newSession creates a live browser session for subject at the test
// issuer and returns its public id and cookie value.
func (f *fixture) newSession(subject string) (id, cookie string) {
	f.t.Helper()
	return f.newSessionAt(f.is.URL, subject)
}

// newSessionAt is newSession for any issuer.
func (f *fixture) newSessionAt(issuer, subject string) (id, cookie string) {
	f.t.Helper()
	ctx := context.Background()
	fam, sid := uuid.New(), uuid.New()
	cookie = "cookie-" + uuid.NewString()
	h := sha256.Sum256([]byte(cookie))
	now := time.Now()
	if _, err := f.pool.Exec(ctx, `INSERT INTO auth_refresh_families (id, issuer, subject, created_at) VALUES ($1, $2, $3, $4)`,
		fam, issuer, subject, now); err != nil {
		f.t.Fatal(err)
	}
	if _, err := f.pool.Exec(ctx, `INSERT INTO auth_sessions (id, token_hash, issuer, subject, device, family_id, created_at, last_seen_at, absolute_expires_at)
VALUES ($1, $2, $3, $4, 'test browser', $5, $6, $6, $7)`, sid, h[:], issuer, subject, fam, now, now.Add(time.Hour)); err != nil {
		f.t.Fatal(err)
	}
	return sid.String(), cookie
}

// token mints a valid access token for subject with scope (space-separated).
func (f *fixture) token(subject, scope string, extra ...any) string {
	c := f.is.Claims(f.now, subject, audience, scope)
	for i := 0; i+1 < len(extra); i += 2 {
		c[extra[i].(string)] = extra[i+1]
	}
	return f.is.Mint(c, bearertest.Options{})
}

type answer struct {
	status    int
	challenge string
	body      map[string]any
	raw       string
}

// do sends a request; hdr holds header pairs ("Authorization", "Bearer x", …).
func (f *fixture) do(method, path string, body io.Reader, hdr ...string) answer {
	f.t.Helper()
	req, err := http.NewRequest(method, f.srv.URL+path, body)
	if err != nil {
		f.t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Add(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	a := answer{status: resp.StatusCode, challenge: resp.Header.Get("WWW-Authenticate"), raw: string(b)}
	if len(b) > 0 && strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(b, &a.body); err != nil {
			f.t.Fatalf("%s %s: bad JSON %q", method, path, b)
		}
	}
	return a
}

func (f *fixture) bearerGet(path, token string) answer {
	return f.do(http.MethodGet, path, nil, "Authorization", "Bearer "+token)
}

func sessionCookie(name, v string) string { return name + "=" + v }
