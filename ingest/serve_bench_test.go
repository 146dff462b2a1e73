package ingest_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/gatehouse/gatehouse/ingest"
	"github.com/gatehouse/gatehouse/ingest/inbox"
	"github.com/gatehouse/gatehouse/ingest/signature"
	"github.com/gatehouse/gatehouse/internal/tracing"
	"github.com/gatehouse/gatehouse/wiring"
	"go.opentelemetry.io/otel/trace"
)

// acceptAll is a recorder that stores nothing and reports every event new.
type acceptAll struct{}

func (acceptAll) Write(context.Context, inbox.Record) (inbox.Outcome, error) {
	return inbox.Outcome{New: true, OutboxID: uuid.New(), State: "pending"}, nil
}

// BenchmarkReceiverServe measures the receiver's own work per delivery
// (routing, raw read, HMAC verification, envelope parsing, metrics, the log
// line) without the database or the network: go test -bench ReceiverServe
// -benchmem ./ingest/
//
// The sub-benchmark tracing=on adds a span per delivery, sampled at 100 %
// and exported by the OTLP/HTTP exporter in batches to a local endpoint
// that discards them (what tracing costs the receiver's CPU, without the
// collector's own work). cpu-ns/op is the whole process's CPU per
// delivery, the exporter's goroutines and the sink's included, the
// spans flushed before it is read.
func BenchmarkReceiverServe(b *testing.B) {
	b.Run("tracing=off", func(b *testing.B) { benchReceiverServe(b, nil) })
	b.Run("tracing=on", func(b *testing.B) {
		sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
		}))
		defer sink.Close()
		tp, err := tracing.Setup(context.Background(), tracing.Settings{Enabled: true, Endpoint: sink.URL + "/v1/traces"}, "bench",
			func(string) string { return "" })
		if err != nil {
			b.Fatal(err)
		}
		defer tp.Shutdown(context.Background()) //nolint:errcheck // bench teardown
		benchReceiverServe(b, tp)
	})
}

func benchReceiverServe(b *testing.B, tp trace.TracerProvider) {
	cfg := testProviders(b)
	ic := wiring.Receiver(cfg)
	ic.Writer, ic.Tracer, ic.Registerer = acceptAll{}, tp, prometheus.NewRegistry()
	ic.Logger = slog.New(tracing.LogHandler(slog.NewJSONHandler(io.Discard, nil)))
	rcv, err := ingest.New(ic)
	if err != nil {
		b.Fatal(err)
	}
	r := chi.NewRouter()
	rcv.Routes(r)
	now := time.Now()
	body := envelope("evt_bench", "payment.succeeded", map[string]any{"payment_id": "pay_1", "amount": 1999, "currency": "eur",
		"description": string(bytes.Repeat([]byte("x"), 350))})
	hdr, err := signature.Sign(wiring.Provider(cfg.Providers["demo"]).Signature, []byte(demoSecret), body, now, "")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	cpu0 := processCPU(b)
	for b.Loop() {
		req := httptest.NewRequest(http.MethodPost, "/webhooks/demo", bytes.NewReader(body))
		for k, v := range hdr {
			req.Header[k] = v
		}
		w := httptest.NewRecorder()
		r.ServeHTTP(w, req)
		if w.Code != http.StatusNoContent {
			b.Fatalf("status %d: %s", w.Code, w.Body)
		}
	}
	// The exporter encodes and sends spans on goroutines of its own: its
	// work is the process's CPU, counted once every span is sent.
	if p, ok := tp.(*tracing.Provider); ok {
		if err := p.ForceFlush(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(processCPU(b)-cpu0)/float64(b.N), "cpu-ns/op")
}

// processCPU is the CPU time (user and system) the process used so far.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
