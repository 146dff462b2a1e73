package forward

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"
	"gopkg.in/yaml.v3"

	"github.com/gatehouse/gatehouse/consumers/event"
	"github.com/gatehouse/gatehouse/internal/testkit"
	"github.com/gatehouse/gatehouse/schemas"
)

func forwardTo(t *testing.T, svc *testkit.TeamService, cfg Config) *Forwarder {
	t.Helper()
	cfg.Provider, cfg.URL, cfg.Secret = "ref", svc.URL(), forwardSecret
	fw, err := NewForwarder(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fw.Close)
	return fw
}

func refEvent(id, typ, data string) *event.Event {
	return &event.Event{Provider: "ref", ID: id, Type: typ,
		Envelope: json.RawMessage(`{"id":"` + id + `","type":"` + typ + `","data":` + data + `}`)}
}

// A forward entry's when: selects events by their envelope in the fetch
// rules' language (issue 38): a value, equals, in, exists, prefix, all
// of them, combined with types.
func TestForwardWhenFiltersByTheEnvelope(t *testing.T) {
	svc := newTeamService(t)
	var when schemas.Conditions
	if err := yamlUnmarshal(`{data.status: {in: [paid, refunded]}, data.customer: {prefix: cus_}, data.test: {exists: false}}`, &when); err != nil {
		t.Fatal(err)
	}
	fw := forwardTo(t, svc, Config{Types: []string{"order.*"}, When: when})
	for _, c := range []struct {
		ev   *event.Event
		want bool
	}{
		{refEvent("a", "order.updated", `{"status":"paid","customer":"cus_1"}`), true},
		{refEvent("b", "order.updated", `{"status":"refunded","customer":"cus_2"}`), true},
		{refEvent("c", "order.updated", `{"status":"open","customer":"cus_1"}`), false},
		{refEvent("d", "order.updated", `{"status":"paid","customer":"acct_1"}`), false},
		{refEvent("e", "order.updated", `{"status":"paid","customer":"cus_1","test":true}`), false},
		{refEvent("f", "invoice.paid", `{"status":"paid","customer":"cus_1"}`), false},
	} {
		if got := fw.Accepts(c.ev); got != c.want {
			t.Errorf("%s: accepted %v, want %v", c.ev.ID, got, c.want)
		}
	}
}

// A transform per kind of change: the body, the headers, dropping the
// event; what the team receives is the transformed body, signed (the
// official library verifies it).
func TestForwardTransformShapesTheDelivery(t *testing.T) {
	svc := newTeamService(t)
	ctx := context.Background()
	body := func(id string) gjson.Result {
		svc.Mu.Lock()
		defer svc.Mu.Unlock()
		return gjson.ParseBytes(svc.Bodies["ref:"+id])
	}
	fw := forwardTo(t, svc, Config{Transform: `
function handler(webhook) {
  const p = webhook.payload;
  if (p.data.event.data.test) { webhook.cancel = true; return webhook; }
  webhook.payload = {kind: webhook.eventType, customer: p.data.event.data.customer, cents: p.data.event.data.amount * 100};
  webhook.headers["X-Team-Route"] = "billing";
  return webhook;
}`})
	if err := fw.Deliver(ctx, refEvent("t1", "order.paid", `{"customer":"cus_9","amount":12}`), nil); err != nil {
		t.Fatal(err)
	}
	if b := body("t1"); b.Get("kind").Str != "order.paid" || b.Get("customer").Str != "cus_9" || b.Get("cents").Int() != 1200 || b.Get("data").Exists() {
		t.Errorf("transformed body %s", b.Raw)
	}
	if got, invalid := svc.Counts(); got["ref:t1"] != 1 || invalid != 0 {
		t.Errorf("deliveries %v, %d failed verification", got, invalid)
	}
	// Dropped: nothing is sent, and the event counts as forwarded.
	if err := fw.Deliver(ctx, refEvent("t2", "order.paid", `{"customer":"cus_9","amount":1,"test":true}`), nil); err != nil {
		t.Fatal(err)
	}
	if got, _ := svc.Counts(); got["ref:t2"] != 0 {
		t.Errorf("a cancelled delivery was sent")
	}
}

// A transform that throws, runs forever, returns nothing or sets a
// signature header fails permanently (the event is dead-lettered with the
// error) and sends nothing; a runaway loop is stopped by the time limit
// (one that loops on every delivery is refused at start-up:
// forward_sandbox_test.go).
func TestForwardTransformFailuresDeadLetter(t *testing.T) {
	svc := newTeamService(t)
	for _, c := range []struct {
		name, src, want string
	}{
		{"throws", `function handler(w) { throw new Error("no customer id") }`, "no customer id"},
		{"runaway loop", `function handler(w) { if (w.eventType === "order.paid") for (;;) {} return w }`, "ran longer than 200ms"},
		{"deep recursion", `function f(n) { return f(n + 1) } function handler(w) { return f(0) }`, "transform"},
		{"returns nothing", `function handler(w) { }`, "must return the webhook"},
		{"reserved header", `function handler(w) { w.headers["webhook-signature"] = "v1,forged"; return w }`, "is set by gatehouse"},
	} {
		t.Run(c.name, func(t *testing.T) {
			fw := forwardTo(t, svc, Config{Transform: c.src, TransformTimeout: 200 * time.Millisecond})
			start := time.Now()
			err := fw.Deliver(context.Background(), refEvent("x_"+c.name, "order.paid", `{}`), nil)
			if err == nil || event.Classify(err) != event.ClassPermanent || !strings.Contains(err.Error(), c.want) || !errors.Is(err, errTransform) {
				t.Fatalf("err %v (class %v), want a permanent transform error naming %q", err, event.Classify(err), c.want)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("took %v", d)
			}
		})
	}
	if n := svc.Seen.Load(); n != 0 {
		t.Errorf("%d requests reached the team", n)
	}
	if _, err := NewForwarder(Config{Provider: "ref", URL: svc.URL(), Secret: forwardSecret, Transform: `function nope() {}`}); err == nil || !strings.Contains(err.Error(), "no function handler") {
		t.Errorf("a script without handler: %v", err)
	}
	if _, err := NewForwarder(Config{Provider: "ref", URL: svc.URL(), Secret: forwardSecret, Transform: `function handler( {`}); err == nil {
		t.Error("a script that does not compile was accepted")
	}
}

func yamlUnmarshal(s string, v any) error { return yaml.Unmarshal([]byte(s), v) }
