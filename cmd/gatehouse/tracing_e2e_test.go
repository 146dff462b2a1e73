package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/internal/testenv"
)

// TestTracingEndToEnd runs the real serve, relay (logical replication) and
// consume processes and a replay against a real Kafka broker and a real
// Jaeger, with tracing configured by OTEL_EXPORTER_OTLP_ENDPOINT only, and
// checks through Jaeger's query API that: each event's trace holds the
// receiver's, the relay's and the consumer's spans in causal order; the
// event whose API answered 503 twice shows both retry hops; the
// dead-lettered event's replay is a new trace linked to the original
// delivery; log lines carry the same trace ids; a provider's traceparent is
// only a link; and no exported attribute holds a secret.
func TestTracingEndToEnd(t *testing.T) {
	j := testenv.PrivateJaeger(t)
	dbURL := testenv.PostgresUnmigrated(t)
	brokers := testenv.KafkaForTest(t)
	var mu sync.Mutex
	objects := map[string]string{
		"/v1/payments/pay_ok":    `{"id":"pay_ok","version":1,"status":"succeeded"}`,
		"/v1/payments/pay_flaky": `{"id":"pay_flaky","version":1,"status":"succeeded"}`,
	}
	calls := map[string]int{}
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		calls[r.URL.Path]++
		if r.URL.Path == "/v1/payments/pay_flaky" && calls[r.URL.Path] <= 2 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		body, ok := objects[r.URL.Path]
		if !ok {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		_, _ = io.WriteString(w, body)
	}))
	defer api.Close()
	suffix := fmt.Sprint(time.Now().UnixNano())
	topic := "e2e.trace." + suffix
	cfgPath := writeConfigYAML(t, fmt.Sprintf(`log_level: debug
kafka:
  partitions: 1
consumers:
  group: trace-%[1]s
  retry_delays: [200ms, 200ms, 200ms]
`+demoProvider+`    topic: %[3]s
    api_url: %[2]s
    api_key: env:E2E_API_KEY
`, suffix, api.URL, topic))
	const apiKey = "api_key_trace_e2e_77f1"
	t.Setenv("GATEHOUSE_KAFKA_BROKERS", strings.Join(brokers, ","))
	t.Setenv("E2E_API_KEY", apiKey)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", j.OTLPBase)
	if out, err := gatehouse(t, dbURL, "migrate", "--config", cfgPath).CombinedOutput(); err != nil {
		t.Fatalf("migrate: %v %s", err, out)
	}
	srv := startServe(t, dbURL, cfgPath)
	rel, _ := startLong(t, dbURL, "relay", "--config", cfgPath)
	cons, consAdmin := startLong(t, dbURL, "consume", "--config", cfgPath)

	// A provider's own traceparent, an Authorization header and a cookie
	// come with the first delivery: none may become a parent or an attribute.
	const providerTrace = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	const bearer, cookie = "Bearer hostile_token_5e2a", "session=hostile_cookie_9d41"
	deliver := func(id, object string, extra map[string]string) {
		t.Helper()
		body := fmt.Sprintf(`{"id":%q,"type":"payment.succeeded","created_at":"2026-01-01T00:00:00Z","data":{"payment_id":%q}}`, id, object)
		req := signedRequest(t.Context(), srv.public, body)
		for k, v := range extra {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent {
			t.Fatalf("%s answered %d", id, resp.StatusCode)
		}
	}
	deliver("evt_t_ok", "pay_ok", map[string]string{"Traceparent": providerTrace, "Authorization": bearer, "Cookie": cookie})
	deliver("evt_t_flaky", "pay_flaky", nil)
	deliver("evt_t_gone", "pay_gone", nil)
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(90 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s\nrelay:\n%s\nconsume:\n%s", what, rel.stderr, cons.stderr)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	for id, want := range map[string]string{"evt_t_ok": "succeeded", "evt_t_flaky": "succeeded", "evt_t_gone": "dead"} {
		waitFor(id+" "+want, func() bool { return inboxState(t, dbURL, id) == want })
	}
	mu.Lock()
	objects["/v1/payments/pay_gone"] = `{"id":"pay_gone","version":2,"status":"succeeded"}`
	mu.Unlock()
	out, err := gatehouse(t, dbURL, "replay", "--config", cfgPath, "--provider", "demo", "--event-id", "evt_t_gone").CombinedOutput()
	m := regexp.MustCompile(`trace_id=([0-9a-f]{32})`).FindSubmatch(out)
	if err != nil || m == nil {
		t.Fatalf("replay: %v %s (want a trace_id)", err, out)
	}
	replayTrace := string(m[1])
	waitFor("evt_t_gone succeeded after the replay", func() bool { return inboxState(t, dbURL, "evt_t_gone") == "succeeded" })
	// The latency histograms carry trace ids as exemplars (OpenMetrics).
	for admin, metric := range map[string]string{srv.admin: "gatehouse_webhook_ack_seconds_bucket", consAdmin: "gatehouse_consumer_processing_duration_seconds_bucket"} {
		req, _ := http.NewRequest(http.MethodGet, admin+"/metrics", nil)
		req.Header.Set("Accept", "application/openmetrics-text; version=1.0.0")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !regexp.MustCompile(metric + `\{[^}]*\} \d+ # \{trace_id="[0-9a-f]{32}"\}`).Match(body) {
			t.Errorf("%s: no exemplar with a trace id on %s", admin, metric)
		}
	}
	// SIGTERM: each process exports its buffered spans before it exits.
	for _, p := range []*process{srv, rel, cons} {
		stopGracefully(t, p, 30*time.Second)
	}

	tr := newTraceView(t, j)
	tr.settle()
	ok := tr.pipeline("evt_t_ok")
	flaky := tr.pipeline("evt_t_flaky")
	gone := tr.pipeline("evt_t_gone")

	// The provider's traceparent is a link of the delivery, not its parent.
	if ok.receiver.TraceID == "0af7651916cd43dd8448eb211c80319c" || !hasRef(ok.receiver, "FOLLOWS_FROM", "0af7651916cd43dd8448eb211c80319c") {
		t.Errorf("the provider's traceparent must be a link of a new trace: %+v", ok.receiver.References)
	}
	// The delivery links to the statement that wrote it.
	if !tr.linksTo(ok.receiver, "INSERT inbox outbox") {
		t.Errorf("the delivery span has no link to its write span: %+v", ok.receiver.References)
	}

	// The retried event: process(main) → publish(retry.1) → process(retry.1)
	// → publish(retry.2) → process(retry.2), the last one succeeded.
	chain := []string{topic + " process", topic + ".retry.1 publish", topic + ".retry.1 process", topic + ".retry.2 publish", topic + ".retry.2 process"}
	prev := flaky.consumer
	for _, op := range chain[1:] {
		next := tr.childNamed(flaky.spans, prev, op)
		if next == nil {
			t.Fatalf("evt_t_flaky: no %q child of %q; trace:\n%s", op, prev.OperationName, describe(flaky.spans))
		}
		prev = *next
	}
	if prev.Tag("gatehouse.outcome") != "ok" {
		t.Errorf("evt_t_flaky's last attempt: outcome %q", prev.Tag("gatehouse.outcome"))
	}
	if n := countOps(flaky.spans, "GET"); n != 3 {
		t.Errorf("evt_t_flaky: %d provider API spans, want 3 (503, 503, 200):\n%s", n, describe(flaky.spans))
	}

	// The dead-lettered event: its trace ends in the dead-letter topic; the
	// replay is a new trace linked to the original delivery, and it runs
	// through the relay and the consumer to success.
	if tr.childNamed(gone.spans, gone.consumer, topic+".dlq publish") == nil {
		t.Errorf("evt_t_gone: no dead-letter publish span:\n%s", describe(gone.spans))
	}
	if replayTrace == gone.receiver.TraceID {
		t.Fatal("the replay continued the original trace; want a new one")
	}
	rspans, err := j.Trace(replayTrace)
	if err != nil {
		t.Fatal(err)
	}
	var replayRoot *testenv.JaegerSpan
	for i := range rspans {
		if rspans[i].OperationName == "replay demo" {
			replayRoot = &rspans[i]
		}
	}
	if replayRoot == nil || replayRoot.Service != "gatehouse-replay" || !hasRef(*replayRoot, "FOLLOWS_FROM", gone.receiver.TraceID) {
		t.Fatalf("the replay's trace has no replay span linked to the original delivery:\n%s", describe(rspans))
	}
	pub := tr.childNamed(rspans, *replayRoot, topic+" publish")
	if pub == nil || tr.childNamed(rspans, *pub, topic+" process") == nil {
		all, _ := j.Traces("gatehouse-relay", 100)
		var dump strings.Builder
		for id, spans := range all {
			fmt.Fprintf(&dump, "trace %s:\n%s", id, describe(spans))
		}
		t.Fatalf("the replay's trace does not go through relay and consumer:\n%s\nrelay traces:\n%s", describe(rspans), dump.String())
	}

	// Log lines carry the same trace ids.
	for _, c := range []struct {
		logs, id, trace string
	}{{srv.stderr.String(), "evt_t_ok", ok.receiver.TraceID}, {cons.stderr.String(), "evt_t_ok", ok.receiver.TraceID},
		{cons.stderr.String(), "evt_t_flaky", flaky.receiver.TraceID}, {cons.stderr.String(), "evt_t_gone", replayTrace}} {
		if !logHasTrace(c.logs, c.id, c.trace) {
			t.Errorf("no log line of %s with trace_id %s", c.id, c.trace)
		}
	}

	// No exported attribute holds a secret, a token or an Authorization
	// header: every span of every service.
	forbidden := []string{e2eSecret, apiKey, "hostile_token_5e2a", "hostile_cookie_9d41", "Bearer"}
	n := 0
	for _, svc := range []string{"gatehouse-serve", "gatehouse-relay", "gatehouse-consume", "gatehouse-replay"} {
		traces, err := j.Traces(svc, 1000)
		if err != nil {
			t.Fatal(err)
		}
		for _, spans := range traces {
			for _, s := range spans {
				n++
				for _, tag := range s.Tags {
					v, k := fmt.Sprint(tag.Value), strings.ToLower(tag.Key)
					if strings.Contains(k, "authorization") || strings.Contains(k, "cookie") || strings.Contains(k, "signature") {
						t.Errorf("%s span %q records header %s", svc, s.OperationName, tag.Key)
					}
					for _, f := range forbidden {
						if strings.Contains(v, f) {
							t.Errorf("%s span %q attribute %s holds a secret", svc, s.OperationName, tag.Key)
						}
					}
				}
			}
		}
	}
	if n < 15 {
		t.Errorf("only %d spans exported; the secret check saw too little", n)
	}
}
