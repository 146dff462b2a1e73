package consumers

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/consumers/event"
	"github.com/gatehouse/gatehouse/internal/testkit"
	"github.com/gatehouse/gatehouse/schemas"
)

// newTeamService starts a team's receiving service verifying with
// forwardSecret.
func newTeamService(t *testing.T) *testkit.TeamService {
	return testkit.NewTeamService(t, forwardSecret)
}

// forwardPipeline configures provider "ref" (reference scheme) with a
// forward to svc, and optionally the fetch from the reference API.
func forwardPipeline(t *testing.T, svc *testkit.TeamService, extra string) *pipeline {
	return refForwardPipeline(t, fmt.Sprintf(`      - url: %s
        secret: env:FWD_SECRET
        breaker_failures: 3
        breaker_probe: 300ms
%s`, svc.URL(), extra))
}

// refForwardPipeline is a pipeline of provider "ref" (reference scheme,
// keyed by data.payment_id) whose forward list is entries (YAML list items
// indented six spaces; their secret env:FWD_SECRET).
func refForwardPipeline(t *testing.T, entries string) *pipeline {
	return newPipeline(t, "ref", `    scheme: reference
    timestamp_header: X-Ts
    signature_header: X-Sig
    secrets: [{id: s1, value: ref-secret}]
    aggregate_id_path: [data.payment_id]
    forward:
`+entries)
}

func (pl *pipeline) sendRef(id, paymentID string) {
	pl.send(id, []byte(fmt.Sprintf(`{"id":%q,"type":"payment.succeeded","created_at":%q,"data":{"payment_id":%q}}`,
		id, time.Now().UTC().Format(time.RFC3339), paymentID)), "", nil)
}

// The team's service answers 500 to the first deliveries, then 200: every
// event arrives after retries, exactly once by its webhook-id, verified by
// the official library, and succeeds.
func TestForwardRetriesUntilDelivered(t *testing.T) {
	svc := newTeamService(t)
	svc.Fails.Store(8)
	pl := forwardPipeline(t, svc, "")
	evs := ids("fw_", 6)
	for _, id := range evs {
		pl.sendRef(id, "pay_"+id)
	}
	pl.waitState(schemas.StateSucceeded, 60*time.Second, evs...)
	got, invalid := svc.Counts()
	for _, id := range evs {
		if got["ref:"+id] != 1 {
			t.Errorf("%s delivered %d times, want once", id, got["ref:"+id])
		}
	}
	if invalid != 0 {
		t.Errorf("%d deliveries failed Standard Webhooks verification", invalid)
	}
	retried := 0
	for _, id := range evs {
		if pl.inbox(id).Attempts > 1 {
			retried++
		}
	}
	if retried == 0 {
		t.Error("no event needed a retry: the 500s were not seen")
	}
	var body struct {
		Type string `json:"type"`
		Data struct {
			Provider string          `json:"provider"`
			Event    json.RawMessage `json:"event"`
		} `json:"data"`
	}
	svc.Mu.Lock()
	_ = json.Unmarshal(svc.Bodies["ref:fw_0"], &body)
	svc.Mu.Unlock()
	if body.Type != "payment.succeeded" || body.Data.Provider != "ref" || !strings.Contains(string(body.Data.Event), `"payment_id":"pay_fw_0"`) {
		t.Errorf("delivery body = %+v", body)
	}
	if n := testkit.Counter(t, pl.reg, "gatehouse_consumer_forwards_total", map[string]string{"result": "delivered"}); n != 6 {
		t.Errorf("delivered = %v, want 6", n)
	}
}

// The team's service is down: the circuit opens, nothing is dead-lettered
// while it stays down (far longer than the whole retry ladder), and every
// event is delivered once it is back.
func TestForwardCircuitPausesWhileDown(t *testing.T) {
	svc := newTeamService(t)
	addr := svc.Addr
	svc.Stop()
	pl := forwardPipeline(t, svc, "")
	evs := ids("down_", 8)
	for _, id := range evs {
		pl.sendRef(id, "pay_"+id)
	}
	deadline := time.Now().Add(30 * time.Second)
	for testkit.Counter(t, pl.reg, "gatehouse_consumer_forward_circuit_open", nil) != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the circuit did not open")
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(4 * time.Second) // the ladder (200+400+800ms) would have dead-lettered everything twice over
	var dead int
	_ = pl.pool.QueryRow(t.Context(), `SELECT count(*) FROM inbox WHERE provider = 'ref' AND processing_state = 'dead'`).Scan(&dead)
	if dead != 0 {
		t.Fatalf("%d events dead-lettered while the destination was down", dead)
	}
	svc.Start(addr)
	pl.waitState(schemas.StateSucceeded, 60*time.Second, evs...)
	got, _ := svc.Counts()
	for _, id := range evs {
		if got["ref:"+id] != 1 {
			t.Errorf("%s delivered %d times, want once", id, got["ref:"+id])
		}
	}
	if n := testkit.Counter(t, pl.reg, "gatehouse_consumer_forward_circuit_open", nil); n != 0 {
		t.Errorf("circuit still open after recovery: %v", n)
	}
}

// A 400 from the team's service is permanent: dead at once, with the
// status and the origin in the dead-letter record; the fetched object is
// sent with the event when include: object.
func TestForwardRefusedDeadLettersAndIncludesObject(t *testing.T) {
	svc := newTeamService(t)
	api := newRefAPI(t)
	api.setPayment("pay_ok", 7, "succeeded")
	api.setPayment("pay_bad", 1, "succeeded")
	pl := newPipeline(t, "ref", fmt.Sprintf(`    scheme: reference
    timestamp_header: X-Ts
    signature_header: X-Sig
    secrets: [{id: s1, value: ref-secret}]
    aggregate_id_path: [data.payment_id]
    api_url: %s
    api_key: ref_test_key
    api_version: "2026-01-01"
    forward:
      - url: %s
        secret: env:FWD_SECRET
        include: object
`, api.srv.URL, svc.URL()))
	pl.sendRef("ok_1", "pay_ok")
	pl.waitState(schemas.StateSucceeded, 30*time.Second, "ok_1")
	svc.Mu.Lock()
	body := string(svc.Bodies["ref:ok_1"])
	svc.Mu.Unlock()
	mustContain(t, "delivery", body, `"object":{"id":"pay_ok","object":"payment","status":"succeeded","version":7}`)
	if _, v, _ := pl.object("pay_ok"); v != 7 {
		t.Errorf("projection version %d, want 7", v)
	}

	svc.Answer.Store(http.StatusBadRequest)
	pl.sendRef("bad_1", "pay_bad")
	pl.waitState(schemas.StateDead, 30*time.Second, "bad_1")
	r := pl.inbox("bad_1")
	if r.Attempts != 1 || r.LastErrorClass != event.ClassPermanent || !strings.Contains(r.LastError, "status 400") {
		t.Errorf("inbox = %+v, want one attempt, permanent, 400", r)
	}
	dlq := pl.readTopic(schemas.DeadLetterTopic(pl.topic), 1, 10*time.Second)[0]
	if header(dlq, schemas.HeaderID) != "bad_1" || header(dlq, schemas.HeaderOriginTopic) != pl.topic ||
		header(dlq, schemas.HeaderErrorClass) != event.ClassPermanent || !strings.Contains(header(dlq, schemas.HeaderErrorMessage), "status 400") {
		t.Errorf("dlq headers = %v", dlq.Headers)
	}
	if strings.Contains(header(dlq, schemas.HeaderErrorMessage), forwardSecret) {
		t.Error("the forward secret reached the dead-letter record")
	}
}
