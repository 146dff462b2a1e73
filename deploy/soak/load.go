package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// event is one webhook the provider emits.
type event struct {
	id      string
	obj     string
	version int
}

// generator sends every event once (some before their predecessor), re-sends
// a share of them later, and retries each send until a 2xx as a provider
// does.
type generator struct {
	o      *options
	s      *stack
	client *http.Client

	mu       sync.Mutex
	ackedAt  map[string]time.Time // first 2xx per event id
	attempts int
	dupsSent int
	firsts   int
	maxAck   time.Duration // first attempt → 2xx, the receiver stage's queue age
}

func newGenerator(o *options, s *stack) *generator {
	tr := &http.Transport{MaxIdleConnsPerHost: o.workers, IdleConnTimeout: 30 * time.Second}
	return &generator{o: o, s: s, client: &http.Client{Transport: tr, Timeout: 10 * time.Second},
		ackedAt: map[string]time.Time{}}
}

// plan lays out the first sends: objects take turns, each object's versions
// in order except that a swapRatio share trade places with their successor.
func (g *generator) plan() []event {
	var out []event
	for v := 1; v <= g.o.perObject; v++ {
		for o := range g.o.objects {
			out = append(out, event{id: fmt.Sprintf("evt_soak_%05d_%04d", o, v), obj: fmt.Sprintf("pay_%05d", o), version: v})
		}
	}
	n := g.o.objects
	for i := 0; i+n < len(out); i++ {
		if rand.Float64() < g.o.swapRatio {
			out[i], out[i+n] = out[i+n], out[i]
		}
	}
	return out
}

// run sends the plan at o.rate with o.workers senders; duplicates go out
// 0.2–3 s after their first send.
func (g *generator) run(ctx context.Context) error {
	plan := g.plan()
	lim := rate.NewLimiter(rate.Limit(g.o.rate), max(int(g.o.rate/20), 1))
	work := make(chan event)
	var wg sync.WaitGroup
	var dupWG sync.WaitGroup
	for range g.o.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ev := range work {
				g.s.api.advance(ev.obj, ev.version)
				g.send(ctx, ev, false)
				if rand.Float64() < g.o.dupRatio {
					dupWG.Add(1)
					time.AfterFunc(time.Duration(200+rand.IntN(2800))*time.Millisecond, func() {
						defer dupWG.Done()
						g.send(ctx, ev, true)
					})
				}
			}
		}()
	}
	for i, ev := range plan {
		if err := lim.Wait(ctx); err != nil {
			close(work)
			wg.Wait()
			return err
		}
		work <- ev
		if (i+1)%(len(plan)/10+1) == 0 {
			g.s.logf("sent %d of %d events", i+1, len(plan))
		}
	}
	close(work)
	wg.Wait()
	dupWG.Wait()
	return ctx.Err()
}

// send posts ev, signed, until a 2xx (or ctx ends).
func (g *generator) send(ctx context.Context, ev event, dup bool) {
	body := fmt.Sprintf(`{"id":%q,"type":"payment.updated","created_at":"2026-01-01T00:00:00Z","data":{"payment_id":%q,"version":%d}}`,
		ev.id, ev.obj, ev.version)
	first := time.Now()
	for backoff := 50 * time.Millisecond; ctx.Err() == nil; backoff = min(backoff*2, 2*time.Second) {
		ts := strconv.FormatInt(time.Now().Unix(), 10)
		mac := hmac.New(sha256.New, []byte(soakSecret))
		mac.Write([]byte(ts + "." + body))
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, g.s.public+"/webhooks/soak", bytes.NewReader([]byte(body)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Gatehouse-Timestamp", ts)
		req.Header.Set("X-Gatehouse-Signature", hex.EncodeToString(mac.Sum(nil)))
		resp, err := g.client.Do(req)
		ok := false
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			ok = resp.StatusCode/100 == 2
		}
		g.mu.Lock()
		g.attempts++
		if ok {
			if dup {
				g.dupsSent++
			} else {
				g.firsts++
			}
			if _, seen := g.ackedAt[ev.id]; !seen {
				g.ackedAt[ev.id] = time.Now()
			}
			g.maxAck = max(g.maxAck, time.Since(first))
		}
		g.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
	}
}

// acked returns the acknowledged event ids and when each was first acked.
func (g *generator) acked() map[string]time.Time {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make(map[string]time.Time, len(g.ackedAt))
	for k, v := range g.ackedAt {
		out[k] = v
	}
	return out
}

func (g *generator) sent() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.firsts + g.dupsSent
}
