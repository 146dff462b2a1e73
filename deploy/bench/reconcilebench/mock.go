package main

import (
	"bytes"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// mock is the provider's side of the bench, a load generator and not a
// test fake: Stripe's GET /v1/events over a fixed list of events, newest
// first, with created[gte]/created[lte], limit and starting_after, each
// answer after the latency. Until set(true, …) it lists only the events
// the inbox is to hold (the seeding pass).
type mock struct {
	events  [][]byte // pre-rendered, newest first
	ids     []string
	created []int64
	index   map[string]int // id → position
	missing []bool         // the events the inbox lacks

	mu      sync.Mutex
	all     bool
	latency time.Duration
	n       atomic.Int64 // calls answered since set
}

// newMock builds n events created evenly over [from, to], of which pct %
// are missing (evenly spread).
func newMock(n int, pct float64, from, to time.Time) *mock {
	m := &mock{events: make([][]byte, n), ids: make([]string, n), created: make([]int64, n), index: make(map[string]int, n),
		missing: make([]bool, n)}
	span := to.Sub(from)
	every := 0
	if pct > 0 {
		every = int(100 / pct)
	}
	for i := range n { // i = 0 is the newest
		at := to.Add(-time.Duration(float64(span) * float64(i) / float64(max(1, n-1))))
		id := fmt.Sprintf("evt_bench%015d", n-i)
		m.ids[i], m.created[i], m.index[id] = id, at.Unix(), i
		m.events[i] = fmt.Appendf(nil, `{"id":%q,"object":"event","api_version":"2024-06-20","created":%d,`+
			`"data":{"object":{"object":"balance","livemode":false,"available":[{"amount":%d,"currency":"usd"}],"pending":[]}},`+
			`"livemode":false,"pending_webhooks":1,"request":{"id":null,"idempotency_key":null},"type":"balance.available"}`,
			id, at.Unix(), i)
		m.missing[i] = every > 0 && i%every == every/2
	}
	return m
}

func (m *mock) missingCount() int {
	c := 0
	for _, x := range m.missing {
		if x {
			c++
		}
	}
	return c
}

// set switches between the seeding list (all false: without the missing
// events) and the whole list, and resets the call count.
func (m *mock) set(all bool, latency time.Duration) {
	m.mu.Lock()
	m.all, m.latency = all, latency
	m.mu.Unlock()
	m.n.Store(0)
}

func (m *mock) calls() int { return int(m.n.Load()) }

func (m *mock) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m.mu.Lock()
	all, latency := m.all, m.latency
	m.mu.Unlock()
	start := time.Now()
	m.n.Add(1)
	if r.URL.Path != "/v1/events" {
		http.NotFound(w, r)
		return
	}
	q := r.URL.Query()
	num := func(k string, def int64) int64 {
		if v, err := strconv.ParseInt(q.Get(k), 10, 64); err == nil {
			return v
		}
		return def
	}
	gte, lte, limit := num("created[gte]", 0), num("created[lte]", 1<<62), int(num("limit", 10))
	i := 0
	if after := q.Get("starting_after"); after != "" {
		p, ok := m.index[after]
		if !ok {
			http.Error(w, `{"error":{"type":"invalid_request_error","message":"no such event"}}`, http.StatusBadRequest)
			return
		}
		i = p + 1
	}
	var b bytes.Buffer
	b.WriteString(`{"object":"list","url":"/v1/events","data":[`)
	count, more := 0, false
	for ; i < len(m.events); i++ {
		if m.created[i] > lte || (!all && m.missing[i]) {
			continue
		}
		if m.created[i] < gte {
			break
		}
		if count == limit {
			more = true
			break
		}
		if count > 0 {
			b.WriteByte(',')
		}
		b.Write(m.events[i])
		count++
	}
	fmt.Fprintf(&b, `],"has_more":%t}`, more)
	time.Sleep(latency - time.Since(start))
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b.Bytes())
}
