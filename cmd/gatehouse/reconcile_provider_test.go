package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gatehouse/gatehouse/ingest/signature"
	"github.com/gatehouse/gatehouse/internal/testenv"
)

// stripeAccount plays the Stripe account of the reconcile end-to-end
// tests: it records each event it creates, sends it as a signed webhook
// (Stripe-Signature) to whatever endpoint it is given, and lists its
// events as GET /v1/events does (created[gte]/created[lte] bounds, newest
// first, limit, starting_after, has_more). It sits behind Prism proxying
// with Stripe's published description (spec3.json of the pinned
// stripe-mock), so every call the pass makes is checked against it: a
// request the description does not allow is answered 422 and never
// reaches the account.
type stripeAccount struct {
	secret []byte
	mu     sync.Mutex
	events []json.RawMessage // in creation order
	ids    []string
	times  []int64
	lists  int // GET /v1/events calls that reached the account
}

// create records an event of the account created at at and returns its id.
func (a *stripeAccount) create(n int, at time.Time) string {
	id := fmt.Sprintf("evt_outage_%04d", n)
	body, _ := json.Marshal(map[string]any{"id": id, "object": "event", "api_version": "2024-06-20", "created": at.Unix(),
		// a balance: no fetch rule reads it, so the consumers process it
		// without calling the account
		"data": map[string]any{"object": map[string]any{"object": "balance", "livemode": false,
			"available": []any{map[string]any{"amount": 100 + n, "currency": "usd"}}, "pending": []any{}}},
		"livemode": false, "pending_webhooks": 1, "request": map[string]any{"id": nil, "idempotency_key": nil},
		"type": "balance.available"})
	a.mu.Lock()
	defer a.mu.Unlock()
	a.events, a.ids, a.times = append(a.events, body), append(a.ids, id), append(a.times, at.Unix())
	return id
}

// send delivers event i as Stripe's webhook to url and returns the
// answer's status (0: no answer, the endpoint refused the connection).
func (a *stripeAccount) send(t *testing.T, i int, url string) int {
	t.Helper()
	a.mu.Lock()
	body := a.events[i]
	a.mu.Unlock()
	h, err := signature.Sign(signature.Config{Scheme: "stripe"}, a.secret, body, time.Now(), "")
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	req.Header = h
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

func (a *stripeAccount) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet || r.URL.Path != "/v1/events" {
		http.Error(w, `{"error":{"type":"invalid_request_error"}}`, http.StatusNotFound)
		return
	}
	q := r.URL.Query()
	num := func(k string, def int64) int64 {
		if v := q.Get(k); v != "" {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
		return def
	}
	gte, lte, limit := num("created[gte]", 0), num("created[lte]", 1<<62), int(num("limit", 10))
	a.mu.Lock()
	defer a.mu.Unlock()
	a.lists++
	order := make([]int, len(a.events))
	for i := range order {
		order[i] = i
	}
	// newest first; of one second, the later created first (Stripe's order)
	sort.Slice(order, func(x, y int) bool {
		if a.times[order[x]] != a.times[order[y]] {
			return a.times[order[x]] > a.times[order[y]]
		}
		return order[x] > order[y]
	})
	var page []json.RawMessage
	after, more := q.Get("starting_after"), false
	skipping := after != ""
	for _, i := range order {
		if skipping {
			skipping = a.ids[i] != after
			continue
		}
		if a.times[i] < gte || a.times[i] > lte {
			continue
		}
		if len(page) == limit {
			more = true
			break
		}
		page = append(page, a.events[i])
	}
	if page == nil {
		page = []json.RawMessage{}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": page, "has_more": more, "url": "/v1/events"})
}

// startStripeAccount starts the account behind Prism's validating proxy
// and returns it with the URL the pass calls (Prism's).
func startStripeAccount(t *testing.T, secret string) (*stripeAccount, string) {
	t.Helper()
	a := &stripeAccount{secret: []byte(secret)}
	up := httptest.NewServer(a)
	t.Cleanup(up.Close)
	spec, err := testenv.StripeSpec(context.Background(), t.TempDir(), "/v1/events")
	if err != nil {
		t.Fatal(err)
	}
	prism, err := testenv.StartPrismProxy(context.Background(), spec, up.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(prism.Stop)
	return a, prism.URL
}

// refusingURL is a webhook URL on which nothing listens: a receiver that
// is down.
func refusingURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return "http://" + addr + "/webhooks/stripe"
}

// redelivered reads provider's inbox rows of the event ids of a
// reconciliation test: how many are stored, and how many of them verified
// with secret s1 and received as webhooks (a redelivery through the
// receiver, not a backfill).
type redelivered struct {
	t        *testing.T
	conn     *pgx.Conn
	provider string
	ids      []string
}

func (r redelivered) count() (rows, verified int) {
	r.t.Helper()
	if err := r.conn.QueryRow(context.Background(), `SELECT count(*), count(*) FILTER (WHERE verified AND secret_id = 's1' AND via = 'webhook')
FROM inbox WHERE provider = $1 AND event_id = ANY($2)`, r.provider, r.ids).Scan(&rows, &verified); err != nil {
		r.t.Fatal(err)
	}
	return rows, verified
}

// wait waits up to a minute for every id to be stored and verified, and
// fails with serve's stderr.
func (r redelivered) wait(stderr fmt.Stringer) {
	r.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		rows, verified := r.count()
		if rows == len(r.ids) && verified == len(r.ids) {
			return
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("%d of %d events stored (%d verified, via webhook); serve stderr:\n%s", rows, len(r.ids), verified, stderr)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
