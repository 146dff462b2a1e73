package consumers

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/gatehouse/gatehouse/schemas"
)

// teamService is a team's own receiving service: it verifies every
// delivery with the official Standard Webhooks Go library and answers as
// the test scripts it.
type teamService struct {
	t        *testing.T
	addr     string
	srv      *httptest.Server
	wh       *standardwebhooks.Webhook
	answer   atomic.Int64 // status to answer; 0: 200
	fails    atomic.Int64 // answer 500 to this many more deliveries first
	mu       sync.Mutex
	accepted map[string]int             // webhook-id → deliveries answered 2xx
	bodies   map[string]json.RawMessage // webhook-id → last body
	invalid  int                        // deliveries that failed verification
	seen     atomic.Int64
}

func newTeamService(t *testing.T) *teamService {
	wh, err := standardwebhooks.NewWebhook(forwardSecret)
	if err != nil {
		t.Fatal(err)
	}
	s := &teamService{t: t, wh: wh, accepted: map[string]int{}, bodies: map[string]json.RawMessage{}}
	s.start("127.0.0.1:0")
	t.Cleanup(s.stop)
	return s
}

func (s *teamService) start(addr string) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		s.t.Fatal(err)
	}
	s.addr = l.Addr().String()
	s.srv = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	s.srv.Listener = l
	s.srv.Start()
}

func (s *teamService) stop() { s.srv.Close() }

func (s *teamService) url() string { return "http://" + s.addr + "/hooks" }

func (s *teamService) serve(w http.ResponseWriter, r *http.Request) {
	s.seen.Add(1)
	body, _ := io.ReadAll(r.Body)
	if err := s.wh.Verify(body, r.Header); err != nil {
		s.mu.Lock()
		s.invalid++
		s.mu.Unlock()
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	if s.fails.Add(-1) >= 0 {
		http.Error(w, "not yet", http.StatusInternalServerError)
		return
	}
	if st := int(s.answer.Load()); st != 0 {
		http.Error(w, "refused by the team", st)
		return
	}
	s.mu.Lock()
	s.accepted[r.Header.Get("webhook-id")]++
	s.bodies[r.Header.Get("webhook-id")] = body
	s.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func (s *teamService) counts() (map[string]int, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int{}
	for k, v := range s.accepted {
		out[k] = v
	}
	return out, s.invalid
}

// forwardPipeline configures provider "ref" (reference scheme) with a
// forward to svc, and optionally the fetch from the reference API.
func forwardPipeline(t *testing.T, svc *teamService, extra string) *pipeline {
	return newPipeline(t, "ref", fmt.Sprintf(`    scheme: reference
    timestamp_header: X-Ts
    signature_header: X-Sig
    secrets: [{id: s1, value: ref-secret}]
    aggregate_id_path: [data.payment_id]
    forward:
      - url: %s
        secret: env:FWD_SECRET
        breaker_failures: 3
        breaker_probe: 300ms
%s`, svc.url(), extra))
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
	svc.fails.Store(8)
	pl := forwardPipeline(t, svc, "")
	evs := ids("fw_", 6)
	for _, id := range evs {
		pl.sendRef(id, "pay_"+id)
	}
	pl.waitState(schemas.StateSucceeded, 60*time.Second, evs...)
	got, invalid := svc.counts()
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
	svc.mu.Lock()
	_ = json.Unmarshal(svc.bodies["ref:fw_0"], &body)
	svc.mu.Unlock()
	if body.Type != "payment.succeeded" || body.Data.Provider != "ref" || !strings.Contains(string(body.Data.Event), `"payment_id":"pay_fw_0"`) {
		t.Errorf("delivery body = %+v", body)
	}
	if n := counter(t, pl.reg, "gatehouse_consumer_forwards_total", map[string]string{"result": "delivered"}); n != 6 {
		t.Errorf("delivered = %v, want 6", n)
	}
}

// The team's service is down: the circuit opens, nothing is dead-lettered
// while it stays down (far longer than the whole retry ladder), and every
// event is delivered once it is back.
func TestForwardCircuitPausesWhileDown(t *testing.T) {
	svc := newTeamService(t)
	addr := svc.addr
	svc.stop()
	pl := forwardPipeline(t, svc, "")
	evs := ids("down_", 8)
	for _, id := range evs {
		pl.sendRef(id, "pay_"+id)
	}
	deadline := time.Now().Add(30 * time.Second)
	for counter(t, pl.reg, "gatehouse_consumer_forward_circuit_open", nil) != 1 {
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
	svc.start(addr)
	pl.waitState(schemas.StateSucceeded, 60*time.Second, evs...)
	got, _ := svc.counts()
	for _, id := range evs {
		if got["ref:"+id] != 1 {
			t.Errorf("%s delivered %d times, want once", id, got["ref:"+id])
		}
	}
	if n := counter(t, pl.reg, "gatehouse_consumer_forward_circuit_open", nil); n != 0 {
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
`, api.srv.URL, svc.url()))
	pl.sendRef("ok_1", "pay_ok")
	pl.waitState(schemas.StateSucceeded, 30*time.Second, "ok_1")
	svc.mu.Lock()
	body := string(svc.bodies["ref:ok_1"])
	svc.mu.Unlock()
	mustContain(t, "delivery", body, `"object":{"id":"pay_ok","object":"payment","status":"succeeded","version":7}`)
	if _, v, _ := pl.object("pay_ok"); v != 7 {
		t.Errorf("projection version %d, want 7", v)
	}

	svc.answer.Store(http.StatusBadRequest)
	pl.sendRef("bad_1", "pay_bad")
	pl.waitState(schemas.StateDead, 30*time.Second, "bad_1")
	r := pl.inbox("bad_1")
	if r.Attempts != 1 || r.LastErrorClass != ClassPermanent || !strings.Contains(r.LastError, "status 400") {
		t.Errorf("inbox = %+v, want one attempt, permanent, 400", r)
	}
	dlq := pl.readTopic(schemas.DeadLetterTopic(pl.topic), 1, 10*time.Second)[0]
	if header(dlq, schemas.HeaderID) != "bad_1" || header(dlq, schemas.HeaderOriginTopic) != pl.topic ||
		header(dlq, schemas.HeaderErrorClass) != ClassPermanent || !strings.Contains(header(dlq, schemas.HeaderErrorMessage), "status 400") {
		t.Errorf("dlq headers = %v", dlq.Headers)
	}
	if strings.Contains(header(dlq, schemas.HeaderErrorMessage), forwardSecret) {
		t.Error("the forward secret reached the dead-letter record")
	}
}
