package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

const (
	tsHeader  = "X-Ts"
	sigHeader = "X-Sig"
	secret    = "whsec_overload_bench_secret"
)

// request is a signed delivery of a new event to provider.
func request(ctx context.Context, base, provider, id string) *http.Request {
	body := []byte(`{"id":"` + id + `","type":"payment.succeeded","created_at":"2026-11-01T10:00:00Z","data":{"payment_id":"pay_` + id + `"}}`)
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(ts + "."))
	m.Write(body)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/webhooks/"+provider, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(tsHeader, ts)
	req.Header.Set(sigHeader, hex.EncodeToString(m.Sum(nil)))
	return req
}

func transport(conns int) *http.Transport {
	return &http.Transport{MaxIdleConns: conns, MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns,
		DisableCompression: true, IdleConnTimeout: time.Minute,
		DialContext: (&net.Dialer{Timeout: 5 * time.Second}).DialContext}
}

// outcome is what one client saw.
type outcome struct {
	mu       sync.Mutex
	codes    map[int]int
	errors   int
	lat      []time.Duration // every answered request
	refusals []time.Duration // 503 and 429 answers
	noRetry  int             // refusals without Retry-After
	acked    []string        // ids answered 2xx
	nextID   atomic.Int64
	prefix   string
	longest  time.Duration
}

func newOutcome(prefix string) *outcome { return &outcome{codes: map[int]int{}, prefix: prefix} }

func (o *outcome) id() string { return o.prefix + strconv.FormatInt(o.nextID.Add(1), 10) }

func (o *outcome) do(c *http.Client, req *http.Request, id string, start time.Time) {
	resp, err := c.Do(req)
	if err != nil {
		o.mu.Lock()
		o.errors++
		o.mu.Unlock()
		return
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	d := time.Since(start)
	o.mu.Lock()
	defer o.mu.Unlock()
	o.codes[resp.StatusCode]++
	o.lat = append(o.lat, d)
	o.longest = max(o.longest, d)
	switch {
	case resp.StatusCode/100 == 2:
		o.acked = append(o.acked, id)
	case resp.StatusCode == http.StatusServiceUnavailable || resp.StatusCode == http.StatusTooManyRequests:
		o.refusals = append(o.refusals, d)
		if resp.Header.Get("Retry-After") == "" {
			o.noRetry++
		}
	}
}

// openLoop sends rate new events a second to provider for d, each on its
// schedule whatever the answers (latency from the scheduled time).
func openLoop(ctx context.Context, base, provider string, rate int, d time.Duration, o *outcome) {
	c := &http.Client{Transport: transport(256), Timeout: 30 * time.Second}
	defer c.CloseIdleConnections()
	interval := time.Second / time.Duration(rate)
	start := time.Now()
	var wg sync.WaitGroup
	for i := 0; ; i++ {
		at := start.Add(time.Duration(i) * interval)
		if at.Sub(start) >= d || ctx.Err() != nil {
			break
		}
		time.Sleep(time.Until(at))
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := o.id()
			o.do(c, request(ctx, base, provider, id), id, at)
		}()
	}
	wg.Wait()
}

// closedLoop keeps conns requests of provider in flight for d: each
// connection sends its next event as soon as the previous one is answered.
func closedLoop(ctx context.Context, base, provider string, conns int, d time.Duration, o *outcome) {
	c := &http.Client{Transport: transport(conns), Timeout: 30 * time.Second}
	defer c.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var wg sync.WaitGroup
	for range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				id := o.id()
				start := time.Now()
				o.do(c, request(context.WithoutCancel(ctx), base, provider, id), id, start)
			}
		}()
	}
	wg.Wait()
}

// slow counts the slow clients' connections and how they ended.
type slow struct {
	conns, cut408, closed atomic.Int64
}

// slowClients keeps n connections open for d, each sending a byte a
// second: of a body (after complete headers declaring 1000 bytes) when
// body, else of its header block. A connection the server ends is opened
// again.
func slowClients(ctx context.Context, addr, provider string, n int, body bool, d time.Duration, s *slow) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				slowConn(ctx, addr, provider, body, s)
			}
		}()
	}
	wg.Wait()
}

func slowConn(ctx context.Context, addr, provider string, body bool, s *slow) {
	c, err := (&net.Dialer{Timeout: 5 * time.Second}).DialContext(ctx, "tcp", addr)
	if err != nil {
		time.Sleep(100 * time.Millisecond)
		return
	}
	defer c.Close()
	s.conns.Add(1)
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	head := "POST /webhooks/" + provider + " HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\n"
	var trickle string
	if body {
		if _, err := io.WriteString(c, head+"Content-Length: 1000\r\n\r\n"); err != nil {
			return
		}
		trickle = strings.Repeat("x", 1000)
	} else {
		trickle = head + "X-Slow: " + strings.Repeat("a", 4000)
	}
	answered := make(chan string, 1)
	go func() {
		b := make([]byte, 64)
		n, _ := c.Read(b)
		answered <- string(b[:n])
	}()
	for i := 0; i < len(trickle); i++ {
		select {
		case got := <-answered:
			if strings.HasPrefix(got, "HTTP/1.1 408") {
				s.cut408.Add(1)
			} else {
				s.closed.Add(1)
			}
			return
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
		if _, err := c.Write([]byte{trickle[i]}); err != nil {
			s.closed.Add(1)
			return
		}
	}
}

// rssSampler records the peak resident set of pid while it runs.
type rssSampler struct{ peakKB atomic.Int64 }

func (r *rssSampler) run(ctx context.Context, pid int) {
	for ctx.Err() == nil {
		if kb := rssKB(pid, "VmRSS:"); kb > r.peakKB.Load() {
			r.peakKB.Store(kb)
		}
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// rssKB reads one kB field (VmRSS:, VmHWM:) of /proc/<pid>/status.
func rssKB(pid int, field string) int64 {
	raw, err := readFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(raw, "\n") {
		if strings.HasPrefix(line, field) {
			f := strings.Fields(line)
			if len(f) >= 2 {
				v, _ := strconv.ParseInt(f[1], 10, 64)
				return v
			}
		}
	}
	return 0
}
