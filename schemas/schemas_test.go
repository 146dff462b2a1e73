package schemas_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/twmb/franz-go/pkg/kgo"
	"gopkg.in/yaml.v3"

	"github.com/gatehouse/gatehouse/ingest"
	"github.com/gatehouse/gatehouse/ingest/admin"
	"github.com/gatehouse/gatehouse/ingest/inbox"
	"github.com/gatehouse/gatehouse/ingest/relay"
	"github.com/gatehouse/gatehouse/ingest/signature"
	"github.com/gatehouse/gatehouse/internal/config"
	"github.com/gatehouse/gatehouse/internal/testenv"
	"github.com/gatehouse/gatehouse/schemas"
	"github.com/gatehouse/gatehouse/wiring"
)

func TestMain(m *testing.M) { testenv.Main(m) }

type compiled struct{ envelope, value, headers, notice *jsonschema.Schema }

func compile(t *testing.T) compiled {
	t.Helper()
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	for _, f := range []string{"envelope.schema.json", "record-value.schema.json", "record-headers.schema.json", "erasure-notice.schema.json"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if err := c.AddResource(f, doc); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
	}
	var out compiled
	for f, dst := range map[string]**jsonschema.Schema{"envelope.schema.json": &out.envelope,
		"record-value.schema.json": &out.value, "record-headers.schema.json": &out.headers, "erasure-notice.schema.json": &out.notice} {
		s, err := c.Compile(f)
		if err != nil {
			t.Fatalf("compile %s: %v", f, err)
		}
		*dst = s
	}
	return out
}

func asJSON(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// TestAsyncAPIDocument checks the AsyncAPI document: it parses, references
// schema files that exist, names every relay header of topics.go, and its
// examples validate against the JSON Schemas.
func TestAsyncAPIDocument(t *testing.T) {
	s := compile(t)
	raw, err := os.ReadFile("asyncapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		AsyncAPI string         `yaml:"asyncapi"`
		Channels map[string]any `yaml:"channels"`
		Comp     struct {
			Messages map[string]struct {
				Examples []struct {
					Headers map[string]any `yaml:"headers"`
					Payload map[string]any `yaml:"payload"`
				} `yaml:"examples"`
			} `yaml:"messages"`
		} `yaml:"components"`
	}
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("asyncapi.yaml: %v", err)
	}
	if !strings.HasPrefix(doc.AsyncAPI, "3.") {
		t.Fatalf("asyncapi version %q, want 3.x", doc.AsyncAPI)
	}
	for _, ref := range regexp.MustCompile(`\$ref: '\./([^']+)'`).FindAllStringSubmatch(string(raw), -1) {
		if _, err := os.Stat(ref[1]); err != nil {
			t.Errorf("asyncapi.yaml references %s: %v", ref[1], err)
		}
	}
	addr := fmt.Sprint(doc.Channels["webhooks"])
	if !strings.Contains(addr, schemas.DefaultTopic("{provider}")) {
		t.Errorf("webhooks channel address does not match schemas.DefaultTopic: %s", addr)
	}
	hdrSchema, _ := os.ReadFile("record-headers.schema.json")
	for _, h := range []string{schemas.HeaderID, schemas.HeaderSource, schemas.HeaderType, schemas.HeaderTime,
		schemas.HeaderSpecVersion, schemas.HeaderContentType, schemas.HeaderOutboxID, schemas.HeaderProvider} {
		if !bytes.Contains(hdrSchema, []byte(`"`+h+`"`)) {
			t.Errorf("record-headers.schema.json does not describe header %s", h)
		}
	}
	n := 0
	for name, m := range doc.Comp.Messages {
		for _, ex := range m.Examples {
			n++
			if err := s.headers.Validate(asJSON(t, ex.Headers)); err != nil {
				t.Errorf("message %s example headers: %v", name, err)
			}
			if name == "erasureNotice" {
				if err := s.notice.Validate(asJSON(t, ex.Payload)); err != nil {
					t.Errorf("message %s example payload: %v", name, err)
				}
				if ex.Headers[schemas.HeaderType] != schemas.ErasureNoticeType || ex.Headers[schemas.HeaderID] != ex.Payload["id"] {
					t.Errorf("message %s example: ce_type %v, ce_id %v, value id %v", name, ex.Headers[schemas.HeaderType], ex.Headers[schemas.HeaderID], ex.Payload["id"])
				}
				continue
			}
			if err := s.value.Validate(asJSON(t, ex.Payload)); err != nil {
				t.Errorf("message %s example payload: %v", name, err)
			}
			if err := s.envelope.Validate(asJSON(t, ex.Payload)); err != nil {
				t.Errorf("message %s example payload as envelope: %v", name, err)
			}
		}
	}
	if n == 0 {
		t.Fatal("asyncapi.yaml has no message examples")
	}
	// A value without the required fields is rejected: the schemas do check.
	if err := s.value.Validate(asJSON(t, map[string]any{"id": "x"})); err == nil {
		t.Fatal("record-value schema accepted a value without type")
	}
	// The erasure marker (an event erased before publication) is a valid
	// value; anything else without a type is not.
	if err := s.value.Validate(asJSON(t, map[string]any{"erased": true, "erasure_id": 3})); err != nil {
		t.Errorf("record-value schema refuses the erasure marker: %v", err)
	}
	if err := s.value.Validate(asJSON(t, map[string]any{"erased": true, "erasure_id": 3, "data": map[string]any{}})); err == nil {
		t.Error("record-value schema accepted a marker with more members and no type")
	}
	if err := s.headers.Validate(asJSON(t, map[string]any{"ce_id": "x"})); err == nil {
		t.Fatal("record-headers schema accepted headers without ce_source")
	}
}

const providersYAML = `
providers:
  demo:
    scheme: reference
    timestamp_header: X-Gatehouse-Timestamp
    signature_header: X-Gatehouse-Signature
    secrets: [{id: s1, value: "whsec_test_schema_demo_0123456789"}]
    aggregate_id_path: [data.payment_id]
  stripe:
    scheme: stripe
    secrets: [{id: s1, value: "whsec_test_schema_stripe_abcdef"}]
    aggregate_id_path: [data.object.id]
  github:
    scheme: github
    secrets: [{id: s1, value: "gh-test-schema-secret"}]
    aggregate_id_path: [data.issue.number]
`

// TestRelayedRecordsMatchSchemas sends signed webhooks of several providers
// through the real receiver, relays them with the real relay to the real
// broker, and validates every record's value and headers against the schemas
// (and wrapped envelopes against the envelope schema).
func TestRelayedRecordsMatchSchemas(t *testing.T) {
	s := compile(t)
	ctx := context.Background()
	suffix := fmt.Sprintf("%d", time.Now().UnixNano())
	cfg, err := config.Parse([]byte(providersYAML), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	for name, p := range cfg.Providers {
		p.Topic = "schema-test." + suffix + "." + name
	}
	dbURL := testenv.Postgres(t)
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	w, err := inbox.NewWriter(pool, 1, 16)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ic := wiring.Receiver(cfg)
	ic.Writer, ic.Logger, ic.Registerer = w, slog.New(slog.DiscardHandler), prometheus.NewRegistry()
	rcv, err := ingest.New(ic)
	if err != nil {
		t.Fatal(err)
	}
	router := chi.NewRouter()
	rcv.Routes(router)
	srv := httptest.NewServer(router)
	defer srv.Close()

	brokers := testenv.KafkaForTest(t)
	cfg.Kafka.Brokers = brokers
	cfg.Kafka.Partitions = 2
	cfg.Relay.Slot = "schema_" + suffix[len(suffix)-8:]
	cfg.Relay.StatusInterval = 100 * time.Millisecond
	var topics []string
	for _, p := range cfg.Providers {
		topics = append(topics, p.Topic)
	}
	rl, err := relay.New(relay.Config{Pool: pool, DatabaseURL: dbURL, Relay: cfg.Relay, Kafka: cfg.Kafka, Topics: topics,
		RetryInterval: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- rl.Run(rctx) }()
	defer func() {
		cancel()
		<-done
		rl.Close()
		_, _ = pool.Exec(context.Background(), `SELECT pg_drop_replication_slot($1)`, cfg.Relay.Slot)
	}()
	select {
	case <-rl.Ready():
	case <-time.After(30 * time.Second):
		t.Fatal("relay not ready")
	}

	now := time.Now()
	send := func(provider, eventID string, body []byte, extra http.Header) {
		t.Helper()
		h, err := signature.Sign(wiring.Provider(cfg.Providers[provider]).Signature, cfg.Providers[provider].Secrets[0].Resolved(), body, now, eventID)
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/webhooks/"+provider, bytes.NewReader(body))
		req.Header = h
		req.Header.Set("Content-Type", "application/json")
		for k, v := range extra {
			req.Header[k] = v
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent {
			t.Fatalf("POST /webhooks/%s: %d", provider, resp.StatusCode)
		}
	}
	send("demo", "", []byte(`{"id":"evt_s1","type":"payment.succeeded","created_at":"2026-01-01T00:00:00Z","data":{"payment_id":"pay_1","amount":100}}`), nil)
	send("demo", "", []byte(`{"id":"evt_s2","type":"invoice.paid","created_at":"2026-01-01T00:00:01Z","data":{"invoice_id":"in_1"}}`), nil)
	send("stripe", "", []byte(fmt.Sprintf(`{"id":"evt_st1","object":"event","type":"payment_intent.succeeded","created":%d,"data":{"object":{"id":"pi_1","object":"payment_intent"}}}`, now.Unix())), nil)
	send("github", "1:0f7a1b9e-5c3d-4e2f-8a6b-9c0d1e2f3a4b", []byte(`{"action":"opened","issue":{"number":7,"title":"t"}}`),
		http.Header{"X-Github-Event": {"issues"}})

	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topics...), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var recs []*kgo.Record
	deadline := time.Now().Add(60 * time.Second)
	for len(recs) < 4 && time.Now().Before(deadline) {
		pctx, pcancel := context.WithTimeout(ctx, time.Second)
		cl.PollFetches(pctx).EachRecord(func(r *kgo.Record) { recs = append(recs, r) })
		pcancel()
	}
	if len(recs) < 4 {
		t.Fatalf("read %d records, want 4", len(recs))
	}
	wrapped := 0
	for _, r := range recs {
		value, err := jsonschema.UnmarshalJSON(bytes.NewReader(r.Value))
		if err != nil {
			t.Fatalf("%s: value is not JSON: %v", r.Topic, err)
		}
		if err := s.value.Validate(value); err != nil {
			t.Errorf("%s value %s: %v", r.Topic, r.Value, err)
		}
		hdrs := map[string]any{}
		for _, h := range r.Headers {
			hdrs[h.Key] = string(h.Value)
		}
		if err := s.headers.Validate(hdrs); err != nil {
			t.Errorf("%s headers %v: %v", r.Topic, hdrs, err)
		}
		if strings.HasSuffix(r.Topic, ".github") || strings.HasSuffix(r.Topic, ".demo") {
			wrapped++
			if err := s.envelope.Validate(value); err != nil {
				t.Errorf("%s value is not a SPEC envelope: %s: %v", r.Topic, r.Value, err)
			}
		}
		if len(r.Key) == 0 {
			t.Errorf("%s record without key", r.Topic)
		}
		// gatehouse_received_at is the stored row's received_at, exactly:
		// the consumers find the row's partition with it.
		var stored time.Time
		if err := pool.QueryRow(ctx, `SELECT received_at FROM inbox WHERE provider = $1 AND event_id = $2`,
			hdrs[schemas.HeaderProvider], hdrs[schemas.HeaderID]).Scan(&stored); err != nil {
			t.Fatalf("%s: inbox row of %v: %v", r.Topic, hdrs[schemas.HeaderID], err)
		}
		v, _ := hdrs[schemas.HeaderReceivedAt].(string)
		if got, err := time.Parse(time.RFC3339Nano, v); err != nil || !got.Equal(stored) {
			t.Errorf("%s: %s = %v, want the inbox row's received_at %s", r.Topic, schemas.HeaderReceivedAt, hdrs[schemas.HeaderReceivedAt], stored)
		}
	}
	if wrapped != 3 {
		t.Errorf("%d envelope records checked, want 3", wrapped)
	}

	// An erasure publishes a notice through the outbox: the relay's record
	// of it matches the headers schema and erasure-notice.schema.json, is
	// keyed like the erased event, and holds the audit's selector, not the
	// erased value (the schema allows no other member).
	res, err := admin.Erase(ctx, pool, admin.Erasure{Provider: "demo", Path: "data.amount", Value: "100",
		ObjectPaths: cfg.Providers["demo"].AggregateIDPath, Topic: cfg.Providers["demo"].Topic, RequestedBy: "schema test"})
	if err != nil || res.Notices != 1 {
		t.Fatalf("erase: %+v %v", res, err)
	}
	var notice *kgo.Record
	for notice == nil && time.Now().Before(deadline.Add(30*time.Second)) {
		pctx, pcancel := context.WithTimeout(ctx, time.Second)
		cl.PollFetches(pctx).EachRecord(func(r *kgo.Record) { notice = r })
		pcancel()
	}
	if notice == nil {
		t.Fatal("no erasure notice on the topic")
	}
	hdrs := map[string]any{}
	for _, h := range notice.Headers {
		hdrs[h.Key] = string(h.Value)
	}
	value, err := jsonschema.UnmarshalJSON(bytes.NewReader(notice.Value))
	if err != nil {
		t.Fatalf("notice value is not JSON: %v", err)
	}
	if err := s.notice.Validate(value); err != nil {
		t.Errorf("notice value %s: %v", notice.Value, err)
	}
	if err := s.headers.Validate(hdrs); err != nil {
		t.Errorf("notice headers %v: %v", hdrs, err)
	}
	var n schemas.ErasureNotice
	_ = json.Unmarshal(notice.Value, &n)
	if hdrs[schemas.HeaderType] != schemas.ErasureNoticeType || hdrs[schemas.HeaderID] != schemas.ErasureNoticeID(res.ID, "evt_s1") ||
		string(notice.Key) != "pay_1" || n.Selector != "path data.amount = <withheld: no audit key>" || n.ErasureID != res.ID {
		t.Errorf("notice: key %q headers %v value %s", notice.Key, hdrs, notice.Value)
	}
}
