package consumers

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gatehouse/gatehouse/api"
	"github.com/gatehouse/gatehouse/internal/config"
	"github.com/gatehouse/gatehouse/internal/testkit"
	"github.com/gatehouse/gatehouse/schemas"
)

// orderService is a team's service recording the order in which it
// accepted deliveries (by event id, from webhook-id), failing the events
// the test names with 500.
type orderService struct {
	srv   *httptest.Server
	down  atomic.Bool // answer 500 to everything
	mu    sync.Mutex
	fails map[string]int // event id → 500s still to answer (<0: always)
	got   []string       // accepted event ids, in order
	hdrs  []http.Header  // their requests' headers, in order
	at    map[string]time.Time
}

func newOrderService(t *testing.T) *orderService {
	s := &orderService{fails: map[string]int{}, at: map[string]time.Time{}}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := strings.TrimPrefix(r.Header.Get("webhook-id"), "ref:")
		if s.down.Load() {
			http.Error(w, "down", http.StatusInternalServerError)
			return
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if n := s.fails[id]; n != 0 {
			if n > 0 {
				s.fails[id] = n - 1
			}
			http.Error(w, "not yet", http.StatusInternalServerError)
			return
		}
		s.got = append(s.got, id)
		s.hdrs = append(s.hdrs, r.Header.Clone())
		s.at[id] = time.Now()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *orderService) fail(id string, n int) {
	s.mu.Lock()
	s.fails[id] = n
	s.mu.Unlock()
}

// accepted is a copy of the accepted event ids, in order.
func (s *orderService) accepted() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.got)
}

// orderedConfig is f's runner configuration with provider ref forwarding
// to svc with order: per_object and the extra YAML of the entry.
func orderedConfig(t *testing.T, f *fixture, svc *orderService, extra string) Config {
	t.Helper()
	cfg, err := config.Parse([]byte(fmt.Sprintf(`providers:
  ref:
    scheme: reference
    timestamp_header: X-Ts
    signature_header: X-Sig
    secrets: [{id: s1, value: ref-secret}]
    aggregate_id_path: [data.payment_id]
    forward:
      - url: %s/hooks
        secret: env:FWD_SECRET
        order: per_object
%s`, svc.srv.URL, extra)), func(k string) string { return map[string]string{"FWD_SECRET": forwardSecret}[k] })
	if err != nil {
		t.Fatal(err)
	}
	cfg.Providers["ref"].Topic = f.topic
	reg := prometheus.NewRegistry()
	rc := f.config(reg)
	if rc.Handlers, err = handlersFromConfig(cfg.Providers, 5*time.Second, time.Now, rc.Logger, reg); err != nil {
		t.Fatal(err)
	}
	return rc
}

// sendKey ingests events of one key and relays them.
func (f *fixture) sendKey(key string, evs ...string) {
	for _, id := range evs {
		f.ingest(id, "payment.succeeded", key)
	}
	f.relay()
}

// wantInOrder checks that want were accepted in this order, each once.
func wantInOrder(t *testing.T, got, want []string) {
	t.Helper()
	var seen []string
	for _, id := range got {
		if slices.Contains(want, id) {
			seen = append(seen, id)
		}
	}
	if !slices.Equal(seen, want) {
		t.Errorf("accepted %v, want %v in this order, each once", seen, want)
	}
}

// parked counts the parked events and keys.
func (f *fixture) parked() (keys, events int) {
	err := f.pool.QueryRow(context.Background(), `SELECT (SELECT count(*) FROM parked_keys), (SELECT count(*) FROM parked_events)`).Scan(&keys, &events)
	if err != nil {
		f.t.Fatal(err)
	}
	return keys, events
}

// The 2nd of 5 events of key A fails three times while 100 other keys
// flow: A's events arrive 1…5 in order, each once; every other key is
// delivered once, without waiting for A.
func TestOrderedDestinationParksAFailingKeyAlone(t *testing.T) {
	f := newFixture(t)
	svc := newOrderService(t)
	a := ids("ord_a_", 5)
	svc.fail(a[1], 3)
	f.start(orderedConfig(t, f, svc, "        breaker_failures: 1000\n"))
	f.sendKey("pay_A", a[0], a[1])
	others := ids("ord_o_", 100)
	sent := map[string]time.Time{}
	for i, id := range others {
		sent[id] = time.Now()
		f.sendKey(fmt.Sprintf("pay_o_%d", i), id)
	}
	f.sendKey("pay_A", a[2:]...)
	f.waitState(schemas.StateSucceeded, 60*time.Second, append(slices.Clone(a), others...)...)
	waitFor(t, 30*time.Second, "A's parked events to be delivered", func() bool {
		return slices.Contains(svc.accepted(), a[4])
	})
	got := svc.accepted()
	wantInOrder(t, got, a)
	svc.mu.Lock()
	defer svc.mu.Unlock()
	for _, id := range others {
		if n := countOf(got, id); n != 1 {
			t.Errorf("%s accepted %d times, want once", id, n)
		}
		if lag := svc.at[id].Sub(sent[id]); lag > 5*time.Second {
			t.Errorf("%s delivered %v after it was sent: held behind A", id, lag)
		}
	}
	if f.inbox(a[1]).Attempts != 4 {
		t.Errorf("A2 took %d attempts, want 4 (three failures)", f.inbox(a[1]).Attempts)
	}
	waitFor(t, 10*time.Second, "the parking to empty", func() bool { k, e := f.parked(); return k == 0 && e == 0 })
}

func countOf(s []string, v string) int {
	n := 0
	for _, x := range s {
		if x == v {
			n++
		}
	}
	return n
}

// The same with a consumer restart while A is parked: the parking is in
// PostgreSQL, and the new consumer delivers A's events in order, each once.
func TestOrderedDestinationParkingSurvivesARestart(t *testing.T) {
	f := newFixture(t)
	f.delays = []time.Duration{time.Second, 2 * time.Second, 2 * time.Second}
	svc := newOrderService(t)
	a := ids("ord_r_", 5)
	svc.fail(a[1], 3)
	cfg := orderedConfig(t, f, svc, "        breaker_failures: 1000\n")
	_, stop := f.start(cfg)
	f.sendKey("pay_R", a...)
	waitFor(t, 30*time.Second, "A3…A5 to be parked", func() bool { _, e := f.parked(); return e == 3 })
	stop()
	if got := svc.accepted(); !slices.Equal(got, a[:1]) {
		t.Fatalf("before the restart accepted %v, want only %s", got, a[0])
	}
	f.start(orderedConfig(t, f, svc, "        breaker_failures: 1000\n"))
	f.waitState(schemas.StateSucceeded, 60*time.Second, a...)
	waitFor(t, 30*time.Second, "A's parked events to be delivered", func() bool {
		return slices.Contains(svc.accepted(), a[4])
	})
	wantInOrder(t, svc.accepted(), a)
}

// on_dead: skip: A2 fails until it is dead-lettered; A's other events are
// delivered in order, each once, and A2 is dead in the inbox.
func TestOrderedDestinationOnDeadSkip(t *testing.T) {
	f := newFixture(t)
	svc := newOrderService(t)
	a := ids("ord_s_", 5)
	svc.fail(a[1], -1)
	f.start(orderedConfig(t, f, svc, "        breaker_failures: 1000\n        on_dead: skip\n"))
	f.sendKey("pay_S", a...)
	f.waitState(schemas.StateDead, 60*time.Second, a[1])
	waitFor(t, 30*time.Second, "A's parked events to be delivered", func() bool {
		return slices.Contains(svc.accepted(), a[4])
	})
	wantInOrder(t, svc.accepted(), []string{a[0], a[2], a[3], a[4]})
	waitFor(t, 10*time.Second, "the parking to empty", func() bool { k, e := f.parked(); return k == 0 && e == 0 })
}

// on_dead: hold: A's events stay parked after A2 is dead-lettered until
// the key is released; then they go out in order, each once.
func TestOrderedDestinationOnDeadHoldUntilReleased(t *testing.T) {
	f := newFixture(t)
	svc := newOrderService(t)
	a := ids("ord_h_", 5)
	svc.fail(a[1], -1)
	cfg := orderedConfig(t, f, svc, "        breaker_failures: 1000\n        on_dead: hold\n")
	f.start(cfg)
	f.sendKey("pay_H", a...)
	f.waitState(schemas.StateDead, 60*time.Second, a[1])
	waitFor(t, 10*time.Second, "the key to be held", func() bool {
		var st string
		_ = f.pool.QueryRow(context.Background(), `SELECT state FROM parked_keys WHERE kafka_key = 'pay_H'`).Scan(&st)
		return st == "held"
	})
	reg := cfg.Registerer.(*prometheus.Registry)
	waitFor(t, 15*time.Second, "the parking gauges", func() bool {
		return testkit.Counter(t, reg, "gatehouse_consumer_forward_parked_keys", nil) == 1 &&
			testkit.Counter(t, reg, "gatehouse_consumer_forward_parked_events", nil) == 3 &&
			testkit.Counter(t, reg, "gatehouse_consumer_forward_parked_oldest_age_seconds", nil) > 0
	})
	if got := svc.accepted(); !slices.Equal(got, a[:1]) {
		t.Fatalf("held key: accepted %v, want only %s", got, a[0])
	}
	var dest string
	if err := f.pool.QueryRow(context.Background(), `SELECT destination FROM parked_keys WHERE kafka_key = 'pay_H'`).Scan(&dest); err != nil {
		t.Fatal(err)
	}
	// erasing a parked event removes it from the parking (never delivered)
	if _, err := f.pool.Exec(context.Background(), `SELECT consumers_erase_events('ref', ARRAY[$1])`, a[2]); err != nil {
		t.Fatal(err)
	}
	if _, e := f.parked(); e != 2 {
		t.Fatalf("after erasing %s, %d events parked, want 2", a[2], e)
	}
	// the release of POST /api/v1/parked/release (api/parked.go; its HTTP side is api's test)
	if _, err := (api.Inbox{Pool: f.pool}).ReleaseParked(context.Background(), dest, "ref", "pay_H"); err != nil {
		t.Fatalf("release: %v", err)
	}
	waitFor(t, 30*time.Second, "A's parked events to be delivered", func() bool {
		return slices.Contains(svc.accepted(), a[4])
	})
	wantInOrder(t, svc.accepted(), []string{a[0], a[3], a[4]})
	if slices.Contains(svc.accepted(), a[2]) {
		t.Errorf("the erased %s was delivered", a[2])
	}
}

// The same with a partition rebalance while A is parked: a second member
// joins, the first leaves, and A's events still arrive in order, each
// once.
func TestOrderedDestinationParkingSurvivesARebalance(t *testing.T) {
	f := newFixture(t)
	f.delays = []time.Duration{time.Second, 2 * time.Second, 2 * time.Second}
	svc := newOrderService(t)
	a := ids("ord_rb_", 5)
	svc.fail(a[1], 3)
	cfgA := orderedConfig(t, f, svc, "        breaker_failures: 1000\n")
	_, stopA := f.start(cfgA)
	f.sendKey("pay_RB", a...)
	waitFor(t, 30*time.Second, "A3…A5 to be parked", func() bool { _, e := f.parked(); return e == 3 })
	regB := prometheus.NewRegistry()
	cfgB := orderedConfig(t, f, svc, "        breaker_failures: 1000\n")
	cfgB.Registerer = regB
	f.start(cfgB)
	waitFor(t, 30*time.Second, "the second member to be assigned partitions", func() bool {
		return testkit.Counter(t, regB, "gatehouse_consumer_rebalances_total", map[string]string{"kind": "assigned"}) > 0
	})
	stopA()
	f.waitState(schemas.StateSucceeded, 60*time.Second, a...)
	waitFor(t, 30*time.Second, "A's parked events to be delivered", func() bool {
		return slices.Contains(svc.accepted(), a[4])
	})
	wantInOrder(t, svc.accepted(), a)
}

// The bound on parked events is reached: the oldest parked key (A) is
// dead-lettered with the reason, its parked events dead in the inbox
// (replayable, nothing dropped); B's events still arrive in order.
func TestOrderedDestinationBoundDeadLettersTheOldestKey(t *testing.T) {
	f := newFixture(t)
	f.delays = []time.Duration{3 * time.Second, 3 * time.Second, 3 * time.Second} // A's head is still failing when B parks
	svc := newOrderService(t)
	a, b := ids("ord_ba_", 5), ids("ord_bb_", 5)
	svc.fail(a[1], 3)
	svc.fail(b[1], 3)
	f.start(orderedConfig(t, f, svc, "        breaker_failures: 1000\n        max_parked_events: 3\n"))
	f.sendKey("pay_BA", a...)
	waitFor(t, 30*time.Second, "A3…A5 to be parked", func() bool { _, e := f.parked(); return e == 3 }) // A is the oldest key
	f.sendKey("pay_BB", b...)
	f.waitState(schemas.StateDead, 30*time.Second, a[2:]...)
	for _, id := range a[2:] {
		if e := f.inbox(id).LastError; !strings.Contains(e, "parked bound reached") {
			t.Errorf("%s: last_error %q, want the bound named", id, e)
		}
	}
	var dead []string // written to the dead-letter topic, with the reason
	for _, d := range f.readTopic(schemas.DeadLetterTopic(f.topic), 3, 10*time.Second) {
		dead = append(dead, header(d, schemas.HeaderID))
		if !strings.Contains(header(d, schemas.HeaderErrorMessage), "parked bound reached") || header(d, schemas.HeaderOriginTopic) != f.topic {
			t.Errorf("dead letter %s: headers %v, want the bound named and the main topic as origin", header(d, schemas.HeaderID), d.Headers)
		}
	}
	if slices.Sort(dead); !slices.Equal(dead, a[2:]) {
		t.Errorf("dead letters %v, want %v", dead, a[2:])
	}
	f.waitState(schemas.StateSucceeded, 60*time.Second, a[0], a[1], b[0], b[1])
	waitFor(t, 30*time.Second, "B's parked events to be delivered", func() bool {
		return slices.Contains(svc.accepted(), b[4])
	})
	wantInOrder(t, svc.accepted(), b)
	wantInOrder(t, svc.accepted(), a[:2])
}
