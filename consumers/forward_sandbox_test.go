package consumers

import (
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/gatehouse/gatehouse/ingest"
	"github.com/gatehouse/gatehouse/internal/config"
	"github.com/gatehouse/gatehouse/internal/kafka"
	"github.com/gatehouse/gatehouse/internal/testkit"
	"github.com/gatehouse/gatehouse/schemas"
	"github.com/gatehouse/gatehouse/wiring"
)

// hostileTransform escapes into native code on the events that ask it to
// (issue 45, finding 2): an 8 GiB string, a regular expression that
// backtracks for minutes, a loop, a nesting past the bounds; it passes
// the others through.
const hostileTransform = `
          function handler(w) {
            const id = w.payload.data.event.data.payment_id;
            if (id === "pay_repeat") w.payload = {s: 'x'.repeat(2**33)};
            if (id === "pay_regex") /^(a|aa)+(?=b)$/.test('a'.repeat(64));
            if (id === "pay_loop") for (;;) {}
            if (id === "pay_nest") { let o = {}; for (let i = 0; i < 1000; i++) o = {o}; w.payload = o }
            if (id === "pay_array") w.payload = Array(1e9).fill(0);
            return w;
          }`

// Through the real pipeline (receiver, relay, Kafka, one consumer group
// for two providers): a hostile transform of provider "evil" fails each
// of its attacks as its own event (dead, transform_failed, the bound in
// the error), the consumer keeps running, and provider "good"'s events,
// sent before, among and after the attacks, are delivered throughout, as
// are evil's benign ones.
func TestForwardHostileTransformSandboxedInThePipeline(t *testing.T) {
	evilSvc, goodSvc := newTeamService(t), newTeamService(t)
	f := newFixtureFor(t, "evil")
	f.publisher() // one relay for both providers' outbox
	good := *f
	good.provider, good.topic = "good", f.topic+".good"
	if _, err := kafka.EnsureTopics(context.Background(), kadm.NewClient(f.prod), nil, kafka.TopicSpec{Partitions: 3},
		newLayout(map[string]string{"good": good.topic}, f.delays).all()...); err != nil {
		t.Fatal(err)
	}
	provider := func(url, transform string) string {
		return fmt.Sprintf(`    scheme: reference
    timestamp_header: X-Ts
    signature_header: X-Sig
    secrets: [{id: s1, value: ref-secret}]
    aggregate_id_path: [data.payment_id]
    forward:
      - url: %s
        secret: env:FWD_SECRET
        transform_timeout: 300ms
        transform: |%s
`, url, transform)
	}
	benign := `
          function handler(w) { w.payload = {payment: w.payload.data.event.data.payment_id}; return w }`
	cfg, err := config.Parse([]byte("providers:\n  evil:\n"+provider(evilSvc.URL(), hostileTransform)+"  good:\n"+provider(goodSvc.URL(), benign)),
		func(k string) string { return map[string]string{"FWD_SECRET": forwardSecret}[k] })
	if err != nil {
		t.Fatal(err)
	}
	cfg.Providers["evil"].Topic, cfg.Providers["good"].Topic = f.topic, good.topic
	ic := wiring.Receiver(cfg)
	ic.Writer, ic.Logger, ic.Registerer = f.writer, slog.New(slog.DiscardHandler), prometheus.NewRegistry()
	rcv, err := ingest.New(ic)
	if err != nil {
		t.Fatal(err)
	}
	router := chi.NewRouter()
	rcv.Routes(router)
	srv := httptest.NewServer(router)
	t.Cleanup(srv.Close)
	reg := prometheus.NewRegistry()
	evil := &pipeline{fixture: f, p: cfg.Providers["evil"], srv: srv, reg: reg}
	goodPl := &pipeline{fixture: &good, p: cfg.Providers["good"], srv: srv, reg: reg}
	rc := f.config(reg)
	rc.Topics = map[string]string{"evil": f.topic, "good": good.topic}
	if rc.Handlers, err = handlersFromConfig(cfg.Providers, 5*time.Second, time.Now, testLogger(t), reg); err != nil {
		t.Fatal(err)
	}
	f.start(rc)

	attacks := []string{"repeat", "regex", "loop", "nest", "array"}
	var goods []string
	sendGood := func(n int) {
		for range n {
			id := fmt.Sprintf("good_%d", len(goods))
			goodPl.sendRef(id, "pay_"+id)
			goods = append(goods, id)
		}
	}
	sendGood(3)
	for _, a := range attacks {
		evil.sendRef("evil_"+a, "pay_"+a)
		evil.sendRef("evil_ok_"+a, "pay_ok_"+a)
		sendGood(2)
	}
	var evilIDs, evilOK []string
	for _, a := range attacks {
		evilIDs, evilOK = append(evilIDs, "evil_"+a), append(evilOK, "evil_ok_"+a)
	}
	goodPl.waitState(schemas.StateSucceeded, 90*time.Second, goods...)
	evil.waitState(schemas.StateSucceeded, 90*time.Second, evilOK...)
	evil.waitState(schemas.StateDead, 90*time.Second, evilIDs...)
	for a, want := range map[string]string{"repeat": "exhausted the sandbox's memory", "regex": "ran longer than 300ms",
		"loop": "ran longer than 300ms", "nest": "nested deeper than 128", "array": "transform: "} {
		if r := evil.inbox("evil_" + a); !strings.Contains(r.LastError, want) || r.Attempts != 1 {
			t.Errorf("evil_%s: %d attempts, error %q, want one naming %q", a, r.Attempts, r.LastError, want)
		}
	}
	sendGood(3) // the consumer is still running
	goodPl.waitState(schemas.StateSucceeded, 60*time.Second, goods...)
	got, invalid := goodSvc.Counts()
	for _, id := range goods {
		if got["good:"+id] != 1 {
			t.Errorf("%s delivered %d times", id, got["good:"+id])
		}
	}
	if evilGot, _ := evilSvc.Counts(); len(evilGot) != len(attacks) || invalid != 0 {
		t.Errorf("evil's team received %v (want its %d benign events only); %d invalid", evilGot, len(attacks), invalid)
	}
	if n := testkit.Counter(t, reg, "gatehouse_consumer_forwards_total", map[string]string{"provider": "evil", "result": "transform_failed"}); n != float64(len(attacks)) {
		t.Errorf("transform_failed = %v, want %d", n, len(attacks))
	}
}
