// Package ingest is gatehouse's webhook edge: one POST route per provider
// that reads the raw body, verifies its signature, parses the envelope and
// has ingest/inbox write the inbox row and its outbox job in one atomic
// statement before answering 204. The tables' maintenance is
// ingest/upkeep's; replay and erasure are ingest/admin's.
package ingest

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sort"
	"sync/atomic"
	"time"

	"github.com/gatehouse/gatehouse/ingest/admission"
	"github.com/gatehouse/gatehouse/schemas/providers"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/gatehouse/gatehouse/ingest/inbox"
	"github.com/gatehouse/gatehouse/ingest/signature"
	"github.com/gatehouse/gatehouse/ingest/upkeep"
	"github.com/gatehouse/gatehouse/internal/settings"
	"github.com/gatehouse/gatehouse/internal/tracing"
	"go.opentelemetry.io/otel/trace"
)

// VerificationFailed is the body of every signature rejection (SPEC.md).
const VerificationFailed = "Webhook signature verification failed"

// StatusVerificationFailed is 400, as Stripe's reference receivers answer:
// 401 would promise a WWW-Authenticate challenge the provider cannot answer,
// and a 4xx tells the provider the delivery failed so it retries later.
const StatusVerificationFailed = http.StatusBadRequest

// EventWriter is the atomic inbox+outbox write of a delivery's events:
// *inbox.Writer in production.
type EventWriter interface {
	Write(ctx context.Context, rec inbox.Record) (inbox.Outcome, error)
}

// Config holds a Receiver's dependencies.
type Config struct {
	Providers map[string]*Provider
	Writer    EventWriter
	// Logger nil: slog.Default(). Registerer nil: metrics are not registered
	// (the rule of every stage's Config).
	Logger     *slog.Logger
	Registerer prometheus.Registerer
	Now        func() time.Time // default time.Now
	// Ingest is the ingest section of the configuration (admission,
	// unverified bytes, slow bodies, the write's timeout, Retry-After),
	// declared with its defaults and validation in internal/settings; New
	// applies the defaults of the settings left zero. ReservedUnverifiedBytes
	// 0: no provider has bytes of its own.
	settings.Ingest
	// MaxHeldRefusals bounds the over-share refusals held at once
	// (Ingest.RefusalHold; default 1024).
	MaxHeldRefusals int
	// Tracer records a span per delivery (internal/tracing); nil: none.
	Tracer trace.TracerProvider
	// Rollup receives every answer for the console's charts (ingest/upkeep);
	// nil: none.
	Rollup *upkeep.Rollup
	// KeyLifetime is how long a provider's event ids are remembered as
	// duplicates (the longer of its dedupe window and retention). Nil or
	// 0: inbox.DefaultKeyLifetime.
	KeyLifetime func(provider string) time.Duration
}

// Receiver serves POST /webhooks/{provider}.
type Receiver struct {
	cfg       Config
	endpoints map[string]*endpoint
	m         *metrics
	adm       admission.Slots
	refusals  refusalLog
	bodies    admission.Bytes
	held      atomic.Int64 // over-share refusals being held
	tracer    trace.Tracer
	tracing   bool
}

type endpoint struct {
	name     string
	p        *Provider
	kind     providers.Kind // p.Kind
	verifier signature.Verifier
	share    *admission.Share     // guarded by the Receiver's admission
	bytes    *admission.ByteShare // its part of the unverified-bytes budget
	guard    string               // providers.GuardContent, GuardToken or ""
	guardTTL time.Duration
	signsURL bool // the scheme signs the URL, query string included
	keyLife  time.Duration
	span     spanOf // its delivery spans' name and provider attributes
}

// secret returns the value of the provider's secret id.
func (ep *endpoint) secret(id string) []byte { return ep.p.secret(id) }

// New builds a Receiver, with each provider's verifier built once; it
// fails, naming providers.<name>.secrets, when a secret or key cannot be
// used by the provider's scheme (a Discord public key that is not hex, a
// SendGrid key that is not base64 DER or PEM).
func New(cfg Config) (*Receiver, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	cfg.Ingest.ApplyDefaults()
	if err := cfg.Ingest.Validate(); err != nil {
		return nil, fmt.Errorf("ingest: %w", err)
	}
	if cfg.ReservedUnverifiedBytes < 0 || cfg.ReservedUnverifiedBytes*int64(len(cfg.Providers)) > cfg.MaxUnverifiedBytes {
		return nil, fmt.Errorf("ingest.reserved_unverified_bytes: must not be negative, and %d providers' reserves of %d bytes are more than ingest.max_unverified_bytes (%d)",
			len(cfg.Providers), cfg.ReservedUnverifiedBytes, cfg.MaxUnverifiedBytes)
	}
	if cfg.MaxHeldRefusals <= 0 {
		cfg.MaxHeldRefusals = 1024
	}
	r := &Receiver{cfg: cfg, endpoints: map[string]*endpoint{}, m: newMetrics(cfg.Registerer),
		tracer: tracing.Tracer(cfg.Tracer, "ingest"), tracing: tracing.Recording(cfg.Tracer)}
	for name, p := range cfg.Providers {
		v, err := signature.New(p.Signature)
		if err != nil {
			return nil, fmt.Errorf("providers.%s.secrets: %w", name, err)
		}
		ep := &endpoint{name: name, p: p, kind: p.Kind, verifier: v, share: newShare(p, cfg.MaxInFlight),
			bytes: admission.NewByteShare(cfg.ReservedUnverifiedBytes), span: newSpanOf(name)}
		ep.guard, ep.guardTTL = guardOf(p, ep.kind)
		ep.signsURL = signature.NeedsPublicURL(ep.kind.Scheme, p.Signature.HMAC)
		if cfg.KeyLifetime != nil {
			ep.keyLife = cfg.KeyLifetime(name)
		}
		r.endpoints[name] = ep
	}
	shares := make([]*admission.Share, 0, len(r.endpoints))
	byteShares := make([]*admission.ByteShare, 0, len(r.endpoints))
	for _, ep := range r.endpoints {
		shares = append(shares, ep.share)
		byteShares = append(byteShares, ep.bytes)
	}
	r.adm.SetLimits(cfg.MaxInFlight, shares)
	r.bodies.SetLimits(cfg.MaxUnverifiedBytes, cfg.MaxUnverifiedBytesPerClient, byteShares)
	if cfg.Registerer != nil {
		cfg.Registerer.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "gatehouse_webhook_unverified_bytes", Help: "Bytes held by request bodies being read before their signature is checked (bounded by ingest.max_unverified_bytes).",
		}, func() float64 { return float64(r.bodies.Used()) }))
		for name, ep := range r.endpoints {
			cfg.Registerer.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Name: "gatehouse_webhook_in_flight", Help: "Deliveries being served (admitted, not yet answered), by provider.",
				ConstLabels: prometheus.Labels{"provider": name},
			}, func() float64 { return float64(r.adm.InFlight(ep.share)) }))
		}
	}
	return r, nil
}

// Routes registers one POST route per configured provider on mux, and GET
// for a provider whose handshake is a GET (meta, dropbox). Other methods
// on those paths answer 405 with Allow; unknown providers 404.
func (r *Receiver) Routes(mux chi.Router) {
	names := make([]string, 0, len(r.endpoints))
	for name := range r.endpoints {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		ep := r.endpoints[name]
		path := "/webhooks/" + name
		allow := http.MethodPost
		if ep.kind.GetHandshake != "" {
			allow = "GET, POST"
		}
		mux.HandleFunc(path, func(w http.ResponseWriter, req *http.Request) {
			switch {
			case req.Method == http.MethodPost:
				r.serve(w, req, ep)
			case req.Method == http.MethodGet && ep.kind.GetHandshake != "":
				status := serveGetHandshake(w, req, ep)
				r.cfg.Logger.LogAttrs(req.Context(), slog.LevelInfo, "webhook handshake",
					slog.String("provider", ep.name), slog.Int("response_status", status), slog.String("request_id", requestID(req)))
			default:
				w.Header().Set("Allow", allow)
				http.Error(w, "method not allowed: use POST", http.StatusMethodNotAllowed)
			}
		})
	}
}
