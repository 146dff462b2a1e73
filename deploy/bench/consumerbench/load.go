package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gatehouse/gatehouse/schemas"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gatehouse/gatehouse/ingest"
	"github.com/gatehouse/gatehouse/ingest/signature"
)

func body(id, object string, now time.Time) []byte {
	b, _ := json.Marshal(map[string]any{"id": id, "type": "payment.succeeded", "created_at": now.UTC().Format(time.RFC3339),
		"data": map[string]any{"payment_id": object, "amount": 1999, "currency": "eur"}})
	return b
}

// preload writes n events of prov through the Writer (inbox and outbox,
// as the receiver does) and waits until the relay has published them.
// object names the subject of event i.
func (b *bench) preload(ctx context.Context, prov string, n int, object func(i int) string) error {
	w, err := ingest.NewWriter(b.Pool, 4, 64)
	if err != nil {
		return err
	}
	defer w.Close()
	topic := b.cfg.Providers[prov].Topic
	var wg sync.WaitGroup
	var failed atomic.Value
	jobs := make(chan int)
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				id := prov + "_" + strconv.Itoa(i)
				now := time.Now()
				obj := object(i)
				if _, err := w.Write(ctx, ingest.Record{Provider: prov, EventID: id, Type: "payment.succeeded", CreatedAt: &now,
					Payload: body(id, obj, now), SecretID: "bench", AggregateID: obj, Topic: topic}); err != nil {
					failed.Store(err)
				}
			}
		}()
	}
	for i := range n {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		return err
	}
	return b.waitTopic(ctx, topic, n)
}

// waitTopic waits until topic holds at least n records.
func (b *bench) waitTopic(ctx context.Context, topic string, n int) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Kafka.Brokers...))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	for deadline := time.Now().Add(5 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
		ends, err := adm.ListEndOffsets(ctx, topic)
		if err == nil {
			total := int64(0)
			ends.Each(func(o kadm.ListedOffset) { total += o.Offset })
			if total >= int64(n) {
				return nil
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("relay did not publish %d records to %s within 5 minutes", n, topic)
		}
	}
}

// poster signs and posts deliveries to the real receiver.
type poster struct {
	addr   string
	prov   string
	client *http.Client
	sc     signature.Config
}

func (b *bench) poster(addr, prov string) *poster {
	return &poster{addr: addr, prov: prov, sc: signature.Config{Scheme: "reference", TimestampHeader: tsHeader, SignatureHeader: sgHeader},
		client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 512}, Timeout: 30 * time.Second}}
}

// post delivers event id about object and returns when the 2xx arrived.
func (p *poster) post(ctx context.Context, id, object string) (time.Time, error) {
	now := time.Now()
	bd := body(id, object, now)
	h, err := signature.Sign(p.sc, []byte(secret), bd, now, id)
	if err != nil {
		return time.Time{}, err
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, p.addr+"/webhooks/"+p.prov, bytes.NewReader(bd))
	req.Header = h
	req.Header.Set("Content-Type", "application/json")
	resp, err := p.client.Do(req)
	at := time.Now()
	if err != nil {
		return at, err
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return at, fmt.Errorf("status %d", resp.StatusCode)
	}
	return at, nil
}

// closedLoop posts as fast as conns connections allow for d and returns
// the acknowledged deliveries per second.
func (p *poster) closedLoop(ctx context.Context, conns int, d time.Duration) (int, float64, error) {
	var n, errs atomic.Int64
	start := time.Now()
	stop := start.Add(d)
	var wg sync.WaitGroup
	for c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; time.Now().Before(stop) && ctx.Err() == nil; i++ {
				id := fmt.Sprintf("%s_%d_%d", p.prov, c, i)
				if _, err := p.post(ctx, id, "pay_"+id); err != nil {
					errs.Add(1)
					continue
				}
				n.Add(1)
			}
		}()
	}
	wg.Wait()
	if errs.Load() > 0 {
		return 0, 0, fmt.Errorf("%d deliveries were not acknowledged", errs.Load())
	}
	return int(n.Load()), float64(n.Load()) / time.Since(start).Seconds(), nil
}

// steady posts total deliveries at rate per second (each from its own
// goroutine, at most 512 in flight) and returns the 2xx time of each id.
func (p *poster) steady(ctx context.Context, prefix string, rate float64, total int) (map[string]time.Time, float64, error) {
	var mu sync.Mutex
	acked := map[string]time.Time{}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 512)
	interval := time.Duration(float64(time.Second) / rate)
	start := time.Now()
	var errs atomic.Int64
	for i := range total {
		if d := time.Until(start.Add(time.Duration(i) * interval)); d > 0 {
			time.Sleep(d)
		}
		if ctx.Err() != nil {
			return nil, 0, ctx.Err()
		}
		sem <- struct{}{}
		wg.Add(1)
		go func(id string) {
			defer func() { <-sem; wg.Done() }()
			at, err := p.post(ctx, id, "pay_"+id)
			if err != nil {
				errs.Add(1)
				return
			}
			mu.Lock()
			acked[id] = at
			mu.Unlock()
		}(prefix + strconv.Itoa(i))
	}
	wg.Wait()
	achieved := float64(total) / time.Since(start).Seconds()
	if errs.Load() > 0 {
		return nil, 0, fmt.Errorf("%d deliveries were not acknowledged", errs.Load())
	}
	return acked, achieved, nil
}

// waitFinal waits until n events of prov are in a final state.
func (b *bench) waitFinal(ctx context.Context, prov string, n int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		var done int
		if err := b.Pool.QueryRow(ctx, `SELECT count(*) FROM inbox WHERE provider = $1
AND processing_state = ANY($2)`, prov, schemas.FinalStates()).Scan(&done); err != nil {
			return err
		}
		if done >= n {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("%s: only %d of %d events final after %v", prov, done, n, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// drainRate is events per second of prov from its first claim
// (processing_started_at of the first batch) to its last processed_at.
func (b *bench) drainRate(ctx context.Context, prov string) (float64, error) {
	var n int
	var span float64
	if err := b.Pool.QueryRow(ctx, `SELECT count(*), extract(epoch FROM max(processed_at) - min(processing_started_at))::float8
FROM inbox WHERE provider = $1`, prov).Scan(&n, &span); err != nil {
		return 0, err
	}
	if span <= 0 {
		return 0, fmt.Errorf("%s: no processing span", prov)
	}
	return float64(n) / span, nil
}

// latencies returns, sorted, processed_at minus the 2xx time of each id.
func (b *bench) latencies(ctx context.Context, prov string, acked map[string]time.Time) ([]time.Duration, error) {
	rows, err := b.Pool.Query(ctx, `SELECT event_id, processed_at FROM inbox WHERE provider = $1 AND processed_at IS NOT NULL`, prov)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []time.Duration
	for rows.Next() {
		var id string
		var at time.Time
		if err := rows.Scan(&id, &at); err != nil {
			return nil, err
		}
		if t, ok := acked[id]; ok {
			out = append(out, at.Sub(t))
		}
	}
	slices.Sort(out)
	return out, rows.Err()
}

func pct(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	return d[int(q*float64(len(d)-1))]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond)) }
