package consumers

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/gatehouse/gatehouse/ingest"
	"github.com/gatehouse/gatehouse/ingest/signature"
	"github.com/gatehouse/gatehouse/internal/config"
	"github.com/gatehouse/gatehouse/wiring"
)

// pipeline is the real path of an event: a signed webhook to the real
// receiver (ingest), the real relay (poll mode) to the real broker, the
// consumer built from the configuration (handlersFromConfig, as
// cmd/gatehouse wires it: the catalogue's fetch rules, the YAML's fetch
// and forward).
type pipeline struct {
	*fixture
	p   *config.Provider
	srv *httptest.Server
	reg *prometheus.Registry
	// signSecret signs deliveries instead of the configured secret
	// (Discord: the Ed25519 seed of the configured public key).
	signSecret []byte
}

// newPipeline configures provider f.provider from the YAML of its body
// (indented as under providers.<name>) and starts receiver and consumer.
func newPipeline(t *testing.T, name, providerYAML string) *pipeline {
	t.Helper()
	return newPipelineLogging(t, name, providerYAML, testLogger(t))
}

// newPipelineLogging is newPipeline with the consumer logging to log.
func newPipelineLogging(t *testing.T, name, providerYAML string, log *slog.Logger) *pipeline {
	t.Helper()
	f := newFixtureFor(t, name)
	cfg, err := config.Parse([]byte("providers:\n  "+name+":\n"+providerYAML), func(k string) string {
		return map[string]string{"FWD_SECRET": forwardSecret}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	p := cfg.Providers[name]
	p.Topic = f.topic
	ic := wiring.Receiver(cfg)
	ic.Writer, ic.Logger, ic.Registerer = f.writer, slog.New(slog.DiscardHandler), prometheus.NewRegistry()
	rcv, err := ingest.New(ic)
	if err != nil {
		t.Fatal(err)
	}
	router := chi.NewRouter()
	rcv.Routes(router)
	pl := &pipeline{fixture: f, p: p, srv: httptest.NewServer(router), reg: prometheus.NewRegistry()}
	t.Cleanup(pl.srv.Close)
	rc := f.config(pl.reg)
	rc.Logger = log
	if rc.Handlers, err = handlersFromConfig(cfg.Providers, 5*time.Second, time.Now, log, pl.reg); err != nil {
		t.Fatal(err)
	}
	f.start(rc)
	return pl
}

// forwardSecret is the Standard Webhooks secret of the forward tests.
const forwardSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// send posts a signed delivery of body (JSON, or a form when contentType
// says so) with the provider's own headers and relays the outbox.
func (pl *pipeline) send(eventID string, body []byte, contentType string, hdr http.Header) {
	pl.t.Helper()
	if contentType == "" {
		contentType = "application/json"
	}
	h := http.Header{"Content-Type": {contentType}}
	for k, v := range hdr {
		h[k] = v
	}
	req := &signature.Request{Header: h, Body: body}
	secret := pl.p.Secrets[0].Resolved()
	if pl.signSecret != nil {
		secret = pl.signSecret
	}
	if err := signature.SignRequest(wiring.Provider(pl.p).Signature, secret, req, time.Now(), eventID); err != nil {
		pl.t.Fatal(err)
	}
	u := pl.srv.URL + "/webhooks/" + pl.provider
	if req.RawQuery != "" {
		u += "?" + req.RawQuery
	}
	hr, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, u, bytes.NewReader(req.Body))
	hr.Header = req.Header
	resp, err := http.DefaultClient.Do(hr)
	if err != nil {
		pl.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		pl.t.Fatalf("POST /webhooks/%s (%s): %d", pl.provider, eventID, resp.StatusCode)
	}
	pl.relay()
}

// object reads a provider_objects row: type, version and data.
func (pl *pipeline) object(key string) (typ string, version int64, data string) {
	pl.t.Helper()
	err := pl.pool.QueryRow(context.Background(), `SELECT object_type, version, data::text FROM provider_objects
WHERE provider = $1 AND object_id = $2`, pl.provider, key).Scan(&typ, &version, &data)
	if err != nil {
		pl.t.Fatalf("provider_objects %s/%s: %v", pl.provider, key, err)
	}
	return typ, version, data
}

// eventIDs lists the inbox's event ids of the provider, for batch
// providers whose ids the receiver derives.
func (pl *pipeline) eventIDs() []string {
	pl.t.Helper()
	rows, err := pl.pool.Query(context.Background(), `SELECT event_id FROM inbox WHERE provider = $1 ORDER BY event_id`, pl.provider)
	if err != nil {
		pl.t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		_ = rows.Scan(&id)
		out = append(out, id)
	}
	return out
}

func mustContain(t *testing.T, what, s string, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(s, p) {
			t.Errorf("%s = %q, want it to contain %q", what, s, p)
		}
	}
}

var _ = fmt.Sprint
