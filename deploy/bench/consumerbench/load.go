package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"golang.org/x/sync/errgroup"

	"github.com/gatehouse/gatehouse/deploy/bench/benchenv"
	"github.com/gatehouse/gatehouse/ingest"
	"github.com/gatehouse/gatehouse/schemas"
)

func body(id, object string, now time.Time) []byte {
	b, _ := json.Marshal(map[string]any{"id": id, "type": "payment.succeeded", "created_at": now.UTC().Format(time.RFC3339),
		"data": map[string]any{"payment_id": object, "amount": 1999, "currency": "eur"}})
	return b
}

// preload writes n events of prov through the Writer (inbox and outbox,
// as the receiver does), 64 at a time, and waits until the relay has
// published them. object names the subject of event i.
func (b *bench) preload(ctx context.Context, prov string, n int, object func(i int) string) error {
	w, err := ingest.NewWriter(b.Pool, 4, 64)
	if err != nil {
		return err
	}
	defer w.Close()
	topic := b.cfg.Providers[prov].Topic
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(64)
	for i := range n {
		g.Go(func() error {
			id, now, obj := prov+"_"+strconv.Itoa(i), time.Now(), object(i)
			_, err := w.Write(gctx, ingest.Record{Provider: prov, EventID: id, Type: "payment.succeeded", CreatedAt: &now,
				Payload: body(id, obj, now), SecretID: "bench", AggregateID: obj, Topic: topic})
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	return b.waitTopic(ctx, topic, n)
}

// waitTopic waits until topic holds at least n records.
func (b *bench) waitTopic(ctx context.Context, topic string, n int) error {
	err := benchenv.Until(ctx, 100*time.Millisecond, 5*time.Minute, func() (bool, error) {
		ends, err := b.Admin.ListEndOffsets(ctx, topic)
		total := int64(0)
		ends.Each(func(o kadm.ListedOffset) { total += o.Offset })
		return err == nil && total >= int64(n), nil
	})
	if err != nil {
		return fmt.Errorf("relay did not publish %d records to %s within 5 minutes: %w", n, topic, err)
	}
	return nil
}

// endToEnd runs a consumer of prov while total deliveries go to the
// receiver at addr at rate per second (an open loop over up to 512
// connections) and beside, when set, runs at the same time; it returns the
// latencies from each delivery's 2xx to its processed_at and the rate
// achieved.
func (b *bench) endToEnd(ctx context.Context, addr, prov string, rate float64, total int, beside func(context.Context) error) (*benchenv.Hist, float64, error) {
	stop, err := b.startConsumer(ctx, prov)
	if err != nil {
		return nil, 0, err
	}
	defer stop()
	done := make(chan error, 1)
	go func() {
		if beside != nil {
			done <- beside(ctx)
		}
		close(done)
	}()
	d := time.Duration(float64(total) / rate * float64(time.Second))
	r := benchenv.Load{Addr: addr, Conns: 512, Next: benchenv.NewDeliveries(prov, addr, []byte(secret), 0).Next, IDs: true}.Fixed(ctx, rate, d)
	if _, failed := r.Counts(); failed > 0 {
		return nil, 0, fmt.Errorf("%d deliveries were not acknowledged (last: %s)", failed, r.LastError)
	}
	if err := <-done; err != nil {
		return nil, 0, err
	}
	if err := b.waitFinal(ctx, prov, len(r.Acks), 5*time.Minute); err != nil {
		return nil, 0, err
	}
	acked := make(map[string]time.Time, len(r.Acks))
	for _, a := range r.Acks {
		acked[a.ID] = r.Start.Add(a.Due + a.Latency)
	}
	rows, err := b.Pool.Query(ctx, `SELECT event_id, processed_at FROM inbox WHERE provider = $1 AND processed_at IS NOT NULL`, prov)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	h := benchenv.NewHist()
	for rows.Next() {
		var id string
		var at time.Time
		if err := rows.Scan(&id, &at); err != nil {
			return nil, 0, err
		}
		if t, ok := acked[id]; ok {
			h.Record(at.Sub(t))
		}
	}
	return h, r.Rate(), rows.Err()
}

// waitFinal waits until n events of prov are in a final state.
func (b *bench) waitFinal(ctx context.Context, prov string, n int, timeout time.Duration) error {
	var done int
	err := benchenv.Until(ctx, 50*time.Millisecond, timeout, func() (bool, error) {
		err := b.Pool.QueryRow(ctx, `SELECT count(*) FROM inbox WHERE provider = $1
AND processing_state = ANY($2)`, prov, schemas.FinalStates()).Scan(&done)
		return err == nil && done >= n, err
	})
	if err != nil {
		return fmt.Errorf("%s: only %d of %d events final after %v: %w", prov, done, n, timeout, err)
	}
	return nil
}
