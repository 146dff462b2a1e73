package consumers

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gatehouse/gatehouse/consumers/event"
	"github.com/gatehouse/gatehouse/consumers/fetch"
	"github.com/gatehouse/gatehouse/internal/testkit"
	"github.com/gatehouse/gatehouse/schemas"
)

// One poll holding a duplicate record, a stale version, a transient and a
// permanent failure and three events of one object: each ends in its
// documented state, with one effect at most per event.
func TestBatchMixedOutcomes(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.api.setPayment("pay_dup", 1, "succeeded")
	f.api.setPayment("pay_stale", 3, "succeeded")
	if _, err := f.pool.Exec(ctx, `INSERT INTO provider_objects (provider, object_id, object_type, version, data, last_event_id)
VALUES ($1, 'pay_stale', 'payment', 5, '{}', 'seed')`, f.provider); err != nil {
		t.Fatal(err)
	}
	f.api.setPayment("pay_tr", 1, "succeeded")
	f.api.fail("/v1/payments/pay_tr", http.StatusServiceUnavailable)
	f.api.setPayment("pay_ord", 1, "succeeded")
	f.ingest("evt_dup", "payment.succeeded", "pay_dup")
	f.ingest("evt_stale", "payment.succeeded", "pay_stale")
	f.ingest("evt_tr", "payment.succeeded", "pay_tr")
	f.ingest("evt_perm", "payment.succeeded", "pay_missing") // 404: permanent
	for i := range 3 {
		f.ingest("evt_ord_"+strconv.Itoa(i), "payment.updated", "pay_ord")
	}
	if f.relay() != 7 {
		t.Fatal("want seven outbox rows")
	}
	// The relay publishes at least once: a second copy of evt_dup.
	if f.republish("evt_dup") != 1 {
		t.Fatal("want one outbox row of evt_dup")
	}
	reg := prometheus.NewRegistry()
	f.start(f.config(reg))
	f.waitState(schemas.StateSucceeded, 30*time.Second, "evt_dup", "evt_ord_0", "evt_tr")
	f.waitState(schemas.StateIgnoredStale, 30*time.Second, "evt_stale", "evt_ord_1", "evt_ord_2")
	f.waitState(schemas.StateDead, 30*time.Second, "evt_perm")
	if r := f.inbox("evt_tr"); r.Attempts != 2 {
		t.Errorf("evt_tr attempts = %d, want 2 (a transient failure, then the retry topic)", r.Attempts)
	}
	if r := f.inbox("evt_perm"); r.LastErrorClass != event.ClassPermanent {
		t.Errorf("evt_perm error class %q", r.LastErrorClass)
	}
	eff := f.effects()
	for id, want := range map[string]int{"evt_dup": 1, "evt_stale": 0, "evt_tr": 1, "evt_perm": 0, "evt_ord_0": 1, "evt_ord_1": 0, "evt_ord_2": 0} {
		if eff[id] != want {
			t.Errorf("%s: %d effects, want %d", id, eff[id], want)
		}
	}
	waitFor(t, 10*time.Second, "the second copy of evt_dup counted as a duplicate", func() bool {
		return testkit.Counter(t, reg, "gatehouse_consumer_records_processed_total", map[string]string{"topic": f.topic, "outcome": OutcomeDuplicate}) == 1
	})
}

// Ten events for each of five objects, delivered together, with a 50 ms API:
// one fetch per object, every other call coalesced, one event per object
// applied and the others ignored_stale.
func TestCoalescingFetchesOncePerObject(t *testing.T) {
	f := newFixture(t)
	reg := prometheus.NewRegistry()
	api, err := fetch.NewAPIClient(fetch.APIClientConfig{BaseURL: f.api.srv.URL, Key: []byte(f.api.key), Version: "2026-01-01",
		Provider: f.provider, Metrics: fetch.NewMetrics(reg, nil)})
	if err != nil {
		t.Fatal(err)
	}
	f.api.mu.Lock()
	f.api.delay = 50 * time.Millisecond
	f.api.mu.Unlock()
	var evs []string
	for o := range 5 {
		pay := "pay_co_" + strconv.Itoa(o)
		f.api.setPayment(pay, 1, "succeeded")
		for i := range 10 {
			id := fmt.Sprintf("evt_co_%d_%d", o, i)
			f.ingest(id, "payment.updated", pay)
			evs = append(evs, id)
		}
	}
	f.relay()
	cfg := f.config(reg)
	cfg.Handlers = NewRegistry()
	registerCatalogue(cfg.Handlers, f.provider, "reference", api)
	f.start(cfg)
	waitFor(t, 30*time.Second, "every event final", func() bool {
		for _, id := range evs {
			if !schemas.Final(f.inbox(id).State) {
				return false
			}
		}
		return true
	})
	fetches := f.api.calls.Load()
	coalesced := testkit.Counter(t, reg, "gatehouse_consumer_api_coalesced_total", map[string]string{"provider": f.provider})
	requests := testkit.Counter(t, reg, "gatehouse_consumer_api_requests_total", map[string]string{"provider": f.provider})
	t.Logf("50 events of 5 objects: %d fetches, %v coalesced", fetches, coalesced)
	if fetches > 10 || float64(fetches) != requests || requests+coalesced != 50 {
		t.Fatalf("fetches %d (metric %v), coalesced %v: want at most 0.2 per event and every call counted once", fetches, requests, coalesced)
	}
	applied := 0
	for _, n := range f.effects() {
		applied += n
	}
	if applied != int(fetches) {
		t.Errorf("%d effects for %d fetches of unchanged objects", applied, fetches)
	}
}

// api_rate_limit caps the requests the provider sees: no two-second window
// holds more than 110% of twice the limit. The limiter grants at most the
// limit plus a burst of limit/20 per second; the provider's clock sees the
// grants shifted by the scheduling delay between grant and arrival, which on
// a loaded machine bunches a few hundred milliseconds' worth into one
// second (49 of 40 was seen at load average 20), so the window is two
// seconds wide and the delay counts for half as much. Without the limiter
// all 160 requests arrive within a fraction of a second. A 429 with
// Retry-After pauses every request for that long.
func TestRateLimitAndRetryAfter(t *testing.T) {
	f := newFixture(t)
	const limit, n = 40, 160
	api, err := fetch.NewAPIClient(fetch.APIClientConfig{BaseURL: f.api.srv.URL, Key: []byte(f.api.key), Version: "2026-01-01",
		Provider: f.provider, RateLimit: limit})
	if err != nil {
		t.Fatal(err)
	}
	var evs []string
	for i := range n {
		pay := "pay_rl_" + strconv.Itoa(i)
		f.api.setPayment(pay, 1, "succeeded")
		f.ingest("evt_rl_"+strconv.Itoa(i), "payment.succeeded", pay)
		evs = append(evs, "evt_rl_"+strconv.Itoa(i))
	}
	f.relay()
	cfg := f.config(nil)
	cfg.Handlers = NewRegistry()
	registerCatalogue(cfg.Handlers, f.provider, "reference", api)
	f.start(cfg)
	f.waitState(schemas.StateSucceeded, 60*time.Second, evs...)
	var times []time.Time
	for i := range n {
		times = append(times, f.api.requests("/v1/payments/pay_rl_"+strconv.Itoa(i))...)
	}
	if most := maxInWindow(times, 2*time.Second); most > 2*limit*110/100 {
		t.Fatalf("%d requests in two seconds with api_rate_limit %d", most, limit)
	}

	// Retry-After: the API answers one 429 asking for a 1 s pause.
	paused := newRefAPI(t)
	paused.setPayment("pay_ra_0", 1, "succeeded")
	paused.setPayment("pay_ra_1", 1, "succeeded")
	paused.retryAfter = "1"
	paused.fail("/v1/payments/pay_ra_0", http.StatusTooManyRequests)
	c, err := fetch.NewAPIClient(fetch.APIClientConfig{BaseURL: paused.srv.URL, Key: []byte(paused.key), Version: "2026-01-01"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(context.Background(), "/v1/payments/pay_ra_0"); event.Classify(err) != event.ClassTransient {
		t.Fatalf("429: %v, want a transient error", err)
	}
	first := paused.requests("/v1/payments/pay_ra_0")[0]
	if _, err := c.Get(context.Background(), "/v1/payments/pay_ra_1"); err != nil {
		t.Fatal(err)
	}
	if gap := paused.requests("/v1/payments/pay_ra_1")[0].Sub(first); gap < 900*time.Millisecond {
		t.Fatalf("next request %v after a 429 with Retry-After: 1", gap)
	}
}

func maxInWindow(times []time.Time, w time.Duration) int {
	most := 0
	for _, a := range times {
		n := 0
		for _, b := range times {
			if !b.Before(a) && b.Sub(a) < w {
				n++
			}
		}
		most = max(most, n)
	}
	return most
}

// Records with no inbox row (a shared topic, a restored database, forged
// records) interleaved with genuine events: the genuine ones succeed, the
// foreign ones go to the first retry topic after their re-reads (beside
// the batch: late.go),
// counted as no_inbox_row, and none is applied.
func TestForeignRecordsDoNotStall(t *testing.T) {
	f := newFixture(t)
	f.delays = []time.Duration{time.Minute, time.Minute} // foreign records stay on retry.1 during the test
	const genuine, foreign = 30, 300
	var evs []string
	for i := range genuine {
		pay := "pay_gen_" + strconv.Itoa(i)
		f.api.setPayment(pay, 1, "succeeded")
		f.ingest("evt_gen_"+strconv.Itoa(i), "payment.succeeded", pay)
		evs = append(evs, "evt_gen_"+strconv.Itoa(i))
	}
	for i := range foreign {
		id := "evt_foreign_" + strconv.Itoa(i)
		body := fmt.Appendf(nil, `{"id":%q,"type":"payment.succeeded","data":{"payment_id":"pay_f_%d"}}`, id, i)
		rec := contractRecord(f.topic, f.provider, id, "payment.succeeded", "pay_f_"+strconv.Itoa(i), "00000000-0000-0000-0000-000000000000", body)
		if err := f.prod.ProduceSync(context.Background(), rec).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if i%10 == 0 {
			f.relay() // genuine records between the foreign ones
		}
	}
	f.relay()
	reg := prometheus.NewRegistry()
	f.start(f.config(reg))
	f.waitState(schemas.StateSucceeded, 30*time.Second, evs...)
	recs := f.readTopic(schemas.RetryTopic(f.topic, 1), foreign, 30*time.Second)
	for _, r := range recs {
		if header(r, schemas.HeaderErrorClass) != event.ClassTransient || !contains(header(r, schemas.HeaderErrorMessage), "no verified inbox row") {
			t.Fatalf("retry.1 record %v", r.Headers)
		}
	}
	if got := testkit.Counter(t, reg, "gatehouse_consumer_records_rejected_total", map[string]string{"reason": "no_inbox_row"}); got != foreign {
		t.Fatalf("no_inbox_row rejections = %v, want %d", got, foreign)
	}
	var applied int
	if err := f.pool.QueryRow(context.Background(), `SELECT count(*) FROM provider_object_changes WHERE event_id LIKE 'evt_foreign_%'`).Scan(&applied); err != nil || applied != 0 {
		t.Fatalf("foreign events applied: %d (%v)", applied, err)
	}
}
