package ingest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/internal/testkit"

	"github.com/go-chi/chi/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/gatehouse/gatehouse/ingest"
	"github.com/gatehouse/gatehouse/ingest/inbox"
	"github.com/gatehouse/gatehouse/ingest/signature"
	"github.com/gatehouse/gatehouse/internal/config"
	"github.com/gatehouse/gatehouse/internal/testenv"
	"github.com/gatehouse/gatehouse/wiring"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// Secrets used by the test providers; the log test searches for them.
const (
	demoSecret   = "whsec_test_demo_current_0123456789"
	oldSecret    = "whsec_test_demo_previous_987654321"
	stripeSecret = "whsec_test_stripe_abcdefabcdef"
	githubSecret = "gh-test-secret-5f3e2a"
	svixSecret   = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	shopSecret   = "shopify-test-secret-77aa"
	slackSecret  = "slack-test-secret-8e1c0d"
)

const testConfig = `
providers:
  demo:
    scheme: reference
    timestamp_header: X-Gatehouse-Timestamp
    signature_header: X-Gatehouse-Signature
    secrets:
      - {id: current, value: "env:DEMO_SECRET"}
      - {id: previous, value: "` + oldSecret + `"}
    aggregate_id_path: [data.payment_id, data.invoice_id]
  small:
    scheme: reference
    timestamp_header: X-Ts
    signature_header: X-Sig
    max_body_bytes: 1024
    secrets: [{id: s1, value: "` + demoSecret + `"}]
  stripe:
    scheme: stripe
    secrets: [{id: s1, value: "` + stripeSecret + `"}]
  github:
    scheme: github
    secrets: [{id: s1, value: "` + githubSecret + `"}]
  svix:
    scheme: standard-webhooks
    secrets: [{id: s1, value: "` + svixSecret + `"}]
    aggregate_id_path: [data.customer_id]
  shopify:
    scheme: shopify
    secrets: [{id: s1, value: "` + shopSecret + `"}]
    aggregate_id_path: [data.id]
  slack:
    scheme: slack
    secrets: [{id: s1, value: "` + slackSecret + `"}]
`

type harness struct {
	t     *testing.T
	url   string
	pool  *pgxpool.Pool
	reg   *prometheus.Registry
	cfg   *config.Config
	logs  *testkit.SyncBuffer
	now   time.Time
	dbURL string
	held  int // holdSlot's deliveries
}

type harnessOpt func(*ingest.Config)

func newHarness(t *testing.T, opts ...harnessOpt) *harness {
	t.Helper()
	return newHarnessDB(t, testenv.Postgres(t), opts...)
}

// testProviders parses testConfig, with demo's current secret from the
// environment reference it uses.
func testProviders(tb testing.TB) *config.Config {
	tb.Helper()
	cfg, err := config.Parse([]byte(testConfig), func(k string) string {
		if k == "DEMO_SECRET" {
			return demoSecret
		}
		return ""
	})
	if err != nil {
		tb.Fatal(err)
	}
	return cfg
}

func newHarnessDB(t *testing.T, dbURL string, opts ...harnessOpt) *harness {
	t.Helper()
	cfg := testProviders(t)
	pool, err := pgxpool.New(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	h := &harness{t: t, pool: pool, reg: prometheus.NewRegistry(), cfg: cfg, logs: &testkit.SyncBuffer{}, now: time.Now().Truncate(time.Second), dbURL: dbURL}
	w, err := inbox.NewWriter(pool, 4, 64)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	icfg := wiring.Receiver(cfg)
	icfg.Writer, icfg.Registerer, icfg.Now = w, h.reg, func() time.Time { return h.now }
	icfg.Logger = slog.New(slog.NewJSONHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	for _, o := range opts {
		o(&icfg)
	}
	rcv, err := ingest.New(icfg)
	if err != nil {
		t.Fatal(err)
	}
	r := chi.NewRouter()
	rcv.Routes(r)
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	h.url = srv.URL
	return h
}

func envelope(id, typ string, data map[string]any) []byte {
	b, _ := json.Marshal(map[string]any{"id": id, "type": typ, "created_at": "2026-11-01T10:00:00Z", "data": data})
	return b
}

// sign signs body as provider with secret at time at.
func (h *harness) sign(provider, secret string, body []byte, at time.Time, eventID string) http.Header {
	h.t.Helper()
	hdr, err := signature.Sign(wiring.Provider(h.cfg.Providers[provider]).Signature, []byte(secret), body, at, eventID)
	if err != nil {
		h.t.Fatal(err)
	}
	return hdr
}

type response struct {
	status int
	header http.Header
	body   string
}

func (h *harness) post(provider string, hdr http.Header, body []byte) response {
	h.t.Helper()
	return h.do(http.MethodPost, "/webhooks/"+provider, hdr, bytes.NewReader(body), int64(len(body)))
}

func (h *harness) do(method, path string, hdr http.Header, body io.Reader, length int64) response {
	h.t.Helper()
	req, err := http.NewRequest(method, h.url+path, body)
	if err != nil {
		h.t.Fatal(err)
	}
	req.ContentLength = length
	for k, v := range hdr {
		req.Header[k] = v
	}
	if req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return response{status: resp.StatusCode, header: resp.Header, body: string(b)}
}

// send signs an envelope as demo with the current secret and posts it.
func (h *harness) send(id string, data map[string]any) response {
	body := envelope(id, "payment.succeeded", data)
	return h.post("demo", h.sign("demo", demoSecret, body, h.now, id), body)
}

func (h *harness) count(table, where string, args ...any) int {
	h.t.Helper()
	var n int
	q := "SELECT count(*) FROM " + table
	if where != "" {
		q += " WHERE " + where
	}
	if err := h.pool.QueryRow(context.Background(), q, args...).Scan(&n); err != nil {
		h.t.Fatal(err)
	}
	return n
}

func (h *harness) metric(name string, labels ...string) float64 {
	h.t.Helper()
	families, err := h.reg.Gather()
	if err != nil {
		h.t.Fatal(err)
	}
	want := strings.Join(labels, ",")
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			var got []string
			for _, lp := range m.GetLabel() {
				got = append(got, lp.GetName()+"="+lp.GetValue())
			}
			if strings.Join(got, ",") == want {
				if m.GetCounter() != nil {
					return m.GetCounter().GetValue()
				}
				if m.GetGauge() != nil {
					return m.GetGauge().GetValue()
				}
				return float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return 0
}

func expectStatus(t *testing.T, r response, want int) {
	t.Helper()
	if r.status != want {
		t.Fatalf("status = %d, want %d (body %q)", r.status, want, r.body)
	}
}
