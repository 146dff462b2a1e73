package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gatehouse/gatehouse/ingest"
	"github.com/gatehouse/gatehouse/ingest/signature"
)

type results struct {
	o           *options
	ceiling     float64       // records/s of a plain consumer
	ceilingSQL  float64       // events/s of pgbench running the consumer's SQL
	consumer    float64       // events/s, first to last processed
	consumerAll time.Duration // wall time from start, group join included
	sent        int
	achieved    float64
	lat         []time.Duration
	relayLat    []time.Duration // 2xx → record timestamp (relay)
	consLat     []time.Duration // record timestamp → succeeded (consumer)
	apiCalls    int64
	loadStart   string
}

func body(id string, now time.Time) []byte {
	b, _ := json.Marshal(map[string]any{"id": id, "type": "payment.succeeded", "created_at": now.UTC().Format(time.RFC3339),
		"data": map[string]any{"payment_id": "pay_" + id, "amount": 1999, "currency": "eur"}})
	return b
}

// throughput pre-loads -n events through the relay into the topic, reads
// them with a plain group consumer (the ceiling), then with gatehouse's.
func (b *bench) throughput(ctx context.Context, res *results) error {
	stopRelay, err := b.startRelay(ctx)
	if err != nil {
		return err
	}
	b.relayStop = stopRelay // the latency run keeps using it
	fmt.Fprintf(b.log, "consumerbench: writing %d events (inbox + outbox) and relaying them\n", b.o.events)
	w, err := ingest.NewWriter(b.pool, 4, 64)
	if err != nil {
		return err
	}
	defer w.Close()
	topic := b.cfg.Providers[provider].Topic
	var wg sync.WaitGroup
	errc := make(chan error, 1)
	jobs := make(chan int)
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				id := "tp_" + strconv.Itoa(i)
				now := time.Now()
				if _, err := w.Write(ctx, ingest.Record{Provider: provider, EventID: id, Type: "payment.succeeded", CreatedAt: &now,
					Payload: body(id, now), SecretID: "bench", AggregateID: "pay_" + id, Topic: topic}); err != nil {
					select {
					case errc <- err:
					default:
					}
				}
			}
		}()
	}
	for i := range b.o.events {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	select {
	case err := <-errc:
		return err
	default:
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.kafka.Brokers...))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	for deadline := time.Now().Add(5 * time.Minute); ; {
		ends, err := adm.ListEndOffsets(ctx, topic)
		if err == nil {
			total := int64(0)
			ends.Each(func(o kadm.ListedOffset) { total += o.Offset })
			if total >= int64(b.o.events) {
				break
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("relay did not publish %d events within 5 minutes", b.o.events)
		}
		time.Sleep(100 * time.Millisecond)
	}

	fmt.Fprintf(b.log, "consumerbench: Kafka read ceiling (plain consumer)\n")
	ceil, err := kgo.NewClient(kgo.SeedBrokers(b.kafka.Brokers...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.WithLogger(kgo.BasicLogger(b.log, kgo.LogLevelWarn, nil)))
	if err != nil {
		return err
	}
	start := time.Now() // connection, metadata and the first fetch count
	n := 0
	cctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	for n < b.o.events {
		fs := ceil.PollRecords(cctx, 1000)
		if cctx.Err() != nil {
			ceil.Close()
			return fmt.Errorf("ceiling consumer read %d of %d records: %w", n, b.o.events, cctx.Err())
		}
		n += len(fs.Records())
	}
	res.ceiling = float64(n) / time.Since(start).Seconds()
	ceil.Close()

	fmt.Fprintf(b.log, "consumerbench: PostgreSQL ceiling (pgbench, the consumer's statements)\n")
	if res.ceilingSQL, err = b.ceilingSQL(ctx); err != nil {
		return err
	}

	fmt.Fprintf(b.log, "consumerbench: gatehouse consumer with the projection write\n")
	if b.o.cpuProfile != "" {
		f, err := os.Create(b.o.cpuProfile)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer func() { pprof.StopCPUProfile(); f.Close() }()
	}
	start = time.Now()
	stopCons, err := b.startConsumer(ctx, "consumerbench", nil)
	if err != nil {
		return err
	}
	b.consumerStop = stopCons
	if err := b.waitProcessed(ctx, "tp_%", b.o.events, 10*time.Minute); err != nil {
		return err
	}
	res.consumerAll = time.Since(start)
	var span float64
	if err := b.pool.QueryRow(ctx, `SELECT extract(epoch FROM max(processed_at) - min(processed_at))::float8
FROM inbox WHERE provider = $1 AND event_id LIKE 'tp_%'`, provider).Scan(&span); err != nil {
		return err
	}
	res.consumer = float64(b.o.events-1) / span
	return nil
}

func (b *bench) waitProcessed(ctx context.Context, like string, n int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		var done int
		if err := b.pool.QueryRow(ctx, `SELECT count(*) FROM inbox WHERE provider = $1 AND event_id LIKE $2 AND processing_state = 'succeeded'`,
			provider, like).Scan(&done); err != nil {
			return err
		}
		if done >= n {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			var detail string
			_ = b.pool.QueryRow(ctx, `SELECT coalesce(string_agg(i.event_id || ' ' || i.processing_state || ' attempts=' || i.attempts ||
  ' outbox=' || (SELECT count(*) FROM outbox o WHERE o.event_id = i.event_id) || ' ' || coalesce(i.last_error, ''), '; '), '')
FROM (SELECT * FROM inbox WHERE provider = $1 AND event_id LIKE $2 AND processing_state <> 'succeeded' LIMIT 5) i`, provider, like).Scan(&detail)
			return fmt.Errorf("only %d of %d events succeeded; unfinished: %s", done, n, detail)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// latency posts signed deliveries to the real receiver at a steady rate
// and measures, per event, the receiver's 2xx to inbox.processed_at.
func (b *bench) latency(ctx context.Context, res *results) error {
	defer func() {
		if b.consumerStop != nil {
			b.consumerStop()
		}
		if b.relayStop != nil {
			b.relayStop()
		}
	}()
	addr, stopRecv, err := b.receiver()
	if err != nil {
		return err
	}
	defer stopRecv()
	fmt.Fprintf(b.log, "consumerbench: %v at %.0f events/s through receiver, relay and consumer\n", b.o.duration, b.o.rate)
	sc := signature.Config{Scheme: "reference", TimestampHeader: tsHeader, SignatureHeader: sgHeader}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}, Timeout: 30 * time.Second}
	var mu sync.Mutex
	acked := map[string]time.Time{}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 256)
	interval := time.Duration(float64(time.Second) / b.o.rate)
	start := time.Now()
	total := int(b.o.duration.Seconds() * b.o.rate)
	errs := 0
	for i := 0; i < total; i++ {
		if d := time.Until(start.Add(time.Duration(i) * interval)); d > 0 {
			time.Sleep(d)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		sem <- struct{}{}
		wg.Add(1)
		go func(id string) {
			defer func() { <-sem; wg.Done() }()
			now := time.Now()
			bd := body(id, now)
			h, _ := signature.Sign(sc, []byte(secret), bd, now, id)
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, addr+"/webhooks/"+provider, bytes.NewReader(bd))
			req.Header = h
			req.Header.Set("Content-Type", "application/json")
			resp, err := client.Do(req)
			at := time.Now()
			mu.Lock()
			defer mu.Unlock()
			if err != nil || resp.StatusCode/100 != 2 {
				errs++
			} else {
				acked[id] = at
			}
			if resp != nil {
				resp.Body.Close()
			}
		}("lat_" + strconv.Itoa(i))
	}
	wg.Wait()
	res.sent = len(acked)
	res.achieved = float64(total) / time.Since(start).Seconds()
	if errs > 0 {
		return fmt.Errorf("%d deliveries were not acknowledged", errs)
	}
	if err := b.waitProcessed(ctx, "lat_%", len(acked), 5*time.Minute); err != nil {
		return err
	}
	produced, err := b.recordTimes(ctx, len(acked))
	if err != nil {
		return err
	}
	rows, err := b.pool.Query(ctx, `SELECT event_id, processed_at FROM inbox WHERE provider = $1 AND event_id LIKE 'lat_%'`, provider)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var at time.Time
		if err := rows.Scan(&id, &at); err != nil {
			return err
		}
		res.lat = append(res.lat, at.Sub(acked[id]))
		if p, ok := produced[id]; ok {
			res.relayLat = append(res.relayLat, p.Sub(acked[id]))
			res.consLat = append(res.consLat, at.Sub(p))
		}
	}
	slices.Sort(res.lat)
	slices.Sort(res.relayLat)
	slices.Sort(res.consLat)
	res.apiCalls = b.apiCalls.Load()
	return rows.Err()
}

// recordTimes reads the first record of every lat_ event from the topic
// and returns its timestamp (set by the relay's producer).
func (b *bench) recordTimes(ctx context.Context, n int) (map[string]time.Time, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.kafka.Brokers...), kgo.ConsumeTopics(b.cfg.Providers[provider].Topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	rctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	out := map[string]time.Time{}
	for len(out) < n {
		fs := cl.PollRecords(rctx, 5000)
		if rctx.Err() != nil {
			return nil, fmt.Errorf("read back %d of %d records", len(out), n)
		}
		for _, r := range fs.Records() {
			for _, h := range r.Headers {
				if h.Key == "ce_id" && strings.HasPrefix(string(h.Value), "lat_") {
					if _, seen := out[string(h.Value)]; !seen {
						out[string(h.Value)] = r.Timestamp
					}
				}
			}
		}
	}
	return out, nil
}

func pct(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	return d[int(q*float64(len(d)-1))]
}

func (r *results) pct(q float64) time.Duration { return pct(r.lat, q) }

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }
