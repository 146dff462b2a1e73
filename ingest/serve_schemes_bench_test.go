package ingest_test

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
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

const schemesBenchConfig = `
providers:
  reference:
    scheme: reference
    timestamp_header: X-Gatehouse-Timestamp
    signature_header: X-Gatehouse-Signature
    secrets: [{id: s1, value: "bench-secret-0123456789"}]
  github:
    scheme: github
    secrets: [{id: s1, value: "bench-secret-0123456789"}]
  shopify:
    scheme: shopify
    secrets: [{id: s1, value: "bench-secret-0123456789"}]
  twilio:
    scheme: twilio
    public_url: https://hooks.example.com/webhooks/twilio
    secrets: [{id: s1, value: "bench-secret-0123456789"}]
  mailgun:
    scheme: mailgun
    secrets: [{id: s1, value: "bench-secret-0123456789"}]
`

// BenchmarkReceiverServeSchemes is BenchmarkReceiverServe for the
// catalogue's schemes that cost the receiver most, beside the reference
// scheme, with bodies of about 512 bytes as the receiver benchmark's mix
// sends them: go test -bench ReceiverServeSchemes -benchmem ./ingest/
func BenchmarkReceiverServeSchemes(b *testing.B) {
	cfg, err := config.Parse([]byte(schemesBenchConfig), func(string) string { return "" })
	if err != nil {
		b.Fatal(err)
	}
	pad := strings.Repeat("x", 400)
	bodies := map[string]func(n int) (body, ctype string){
		"reference": func(n int) (string, string) {
			return `{"id":"evt_` + strconv.Itoa(n) + `","type":"payment.succeeded","data":{"payment_id":"pay_1","description":"` + pad + `"}}`, "application/json"
		},
		"github": func(n int) (string, string) {
			return `{"action":"opened","issue":{"id":` + strconv.Itoa(n) + `,"title":"` + pad + `"},"repository":{"full_name":"octo/repo"}}`, "application/json"
		},
		"shopify": func(n int) (string, string) {
			return `{"id":` + strconv.Itoa(n) + `,"email":"buyer@example.com","total_price":"19.99","note":"` + pad + `"}`, "application/json"
		},
		"twilio": func(n int) (string, string) {
			return "MessageSid=SM" + strconv.Itoa(n) + "&MessageStatus=delivered&AccountSid=AC1&To=%2B15558675310&Body=" + url.QueryEscape(pad),
				"application/x-www-form-urlencoded"
		},
		"mailgun": func(n int) (string, string) {
			return `{"event-data":{"id":"mg` + strconv.Itoa(n) + `","event":"delivered","timestamp":` + strconv.FormatInt(time.Now().Unix(), 10) +
				`,"message":{"headers":{"message-id":"m@example.com","subject":"` + pad + `"}}}}`, "application/json"
		},
	}
	for _, name := range []string{"reference", "github", "shopify", "twilio", "mailgun"} {
		b.Run(name, func(b *testing.B) {
			ic := wiring.Receiver(cfg)
			ic.Writer, ic.Registerer = acceptAll{}, prometheus.NewRegistry()
			ic.Logger = slog.New(slog.NewJSONHandler(io.Discard, nil))
			rcv, err := ingest.New(ic)
			if err != nil {
				b.Fatal(err)
			}
			r := chi.NewRouter()
			rcv.Routes(r)
			sigCfg := wiring.Provider(cfg.Providers[name]).Signature
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				n++
				body, ctype := bodies[name](n)
				sr := &signature.Request{Method: http.MethodPost, Header: http.Header{}, Body: []byte(body)}
				sr.Header.Set("Content-Type", ctype)
				if name == "github" {
					sr.Header.Set("X-GitHub-Event", "issues")
				}
				if name == "shopify" {
					sr.Header.Set("X-Shopify-Topic", "orders/create")
				}
				if name == "twilio" {
					sr.Header.Set("I-Twilio-Idempotency-Token", "idem-"+strconv.Itoa(n))
				}
				b.StopTimer()
				if err := signature.SignRequest(sigCfg, []byte("bench-secret-0123456789"), sr, time.Now(), "4242:guid-"+strconv.Itoa(n)); err != nil {
					b.Fatal(err)
				}
				target := "/webhooks/" + name
				if sr.RawQuery != "" {
					target += "?" + sr.RawQuery
				}
				req := httptest.NewRequest(http.MethodPost, target, bytes.NewReader(sr.Body))
				for k, v := range sr.Header {
					req.Header[k] = v
				}
				b.StartTimer()
				w := httptest.NewRecorder()
				r.ServeHTTP(w, req)
				if w.Code/100 != 2 {
					b.Fatalf("status %d: %s", w.Code, w.Body)
				}
			}
		})
	}
}
