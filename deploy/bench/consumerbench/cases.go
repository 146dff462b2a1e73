package main

import (
	"cmp"
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gatehouse/gatehouse/deploy/bench/benchenv"
	"github.com/gatehouse/gatehouse/schemas"
)

// results are the figures of one run.
type results struct {
	receiverRate   float64 // case 1: closed loop, 16 connections
	receiverEvents int
	fastRate       float64 // case 1: consumer drain, API latency 0
	slowRate       float64 // case 2: API latency 50 ms, new objects
	groupedCalls   float64 // case 3: API calls per event
	groupedRate    float64
	limitedMax     int   // case 4: most requests in any one-second window
	limited429     int64 // case 4: 429s the API answered
	limitedRate    float64
	steadyAchieved float64 // case 5
	steadyLat      *benchenv.Hist
	mixedLat       *benchenv.Hist // case 6: genuine events among foreign records
	forwardFast    float64        // case 7: forward, destination latency 0
	forwardSlow    float64        // case 8: forward, destination latency 50 ms
	ceilingSQL     float64
	loadStart      string
}

func (b *bench) runCases(ctx context.Context, res *results) error {
	addr, stopRecv, err := b.receiver()
	if err != nil {
		return err
	}
	defer stopRecv()
	o := b.o

	// 1. The receiver's own max rate (closed loop, 16 connections, nothing
	// else running), whose events are then the backlog the consumer
	// drains, API latency 0.
	b.Logf("case 1: receiver closed loop for %v, then the consumer drains it", o.receiverFor)
	maxRate := benchenv.Load{Addr: addr, Conns: 16, Next: benchenv.NewDeliveries("maxrate", addr, []byte(secret), 0).Next}.Closed(ctx, o.receiverFor)
	ok, failed := maxRate.Counts()
	if failed > 0 {
		return fmt.Errorf("%d deliveries were not acknowledged (last: %s)", failed, maxRate.LastError)
	}
	res.receiverEvents, res.receiverRate = ok, maxRate.Rate()
	stopRelay, err := b.startRelay(ctx)
	if err != nil {
		return err
	}
	defer stopRelay()
	if err := b.waitTopic(ctx, b.cfg.Providers["maxrate"].Topic, res.receiverEvents); err != nil {
		return err
	}
	if res.fastRate, err = b.drain(ctx, "maxrate", res.receiverEvents); err != nil {
		return err
	}

	// 2. API latency 50 ms, every event a new object.
	b.Logf("case 2: %d events, API latency %v, new objects", o.events, o.apiLatency)
	b.api.latency.Store(int64(o.apiLatency))
	if res.slowRate, err = b.backlog(ctx, "slow", o.events, func(i int) string { return "pay_slow_" + strconv.Itoa(i) }); err != nil {
		return err
	}

	// 3. API latency 50 ms, ten events per object arriving together.
	b.Logf("case 3: %d events, 10 per object", o.events)
	before := b.api.calls.Load()
	if res.groupedRate, err = b.backlog(ctx, "grouped", o.events, func(i int) string { return "pay_grp_" + strconv.Itoa(i/10) }); err != nil {
		return err
	}
	res.groupedCalls = float64(b.api.calls.Load()-before) / float64(o.events)
	b.api.latency.Store(0)

	// 4. api_rate_limit: the fake API answers 429 above the limit plus the
	// 5 % burst a token bucket of that rate allows in any one second.
	b.Logf("case 4: %d events with api_rate_limit %d", o.limitedEvents, o.rateLimit)
	b.api.limit.Store(int64(o.rateLimit * 105 / 100))
	b.api.record(true)
	if res.limitedRate, err = b.backlog(ctx, "limited", o.limitedEvents, func(i int) string { return "pay_lim_" + strconv.Itoa(i) }); err != nil {
		return err
	}
	res.limitedMax = maxInWindow(b.api.record(false), time.Second)
	res.limited429 = b.api.tooMany.Load()
	b.api.limit.Store(0)

	// 5. Steady rate through receiver, relay and consumer.
	b.Logf("case 5: %.0f events/s for %v end to end", o.rate, o.steadyFor)
	if res.steadyLat, res.steadyAchieved, err = b.endToEnd(ctx, addr, "steady", o.rate, int(o.rate*o.steadyFor.Seconds()), nil); err != nil {
		return err
	}

	// 6. Foreign records (no inbox row) produced straight to the topic
	// while genuine events arrive through the receiver.
	b.Logf("case 6: %d foreign records among %d genuine events", o.foreign, o.genuine)
	if res.mixedLat, _, err = b.endToEnd(ctx, addr, "mixed", o.mixedRate, o.genuine, b.foreignRecords); err != nil {
		return err
	}

	// 7 and 8. Forward to a team's service answering at once, then after
	// the API latency.
	for _, c := range []struct {
		prov string
		rate *float64
	}{{"fwdfast", &res.forwardFast}, {"fwdslow", &res.forwardSlow}} {
		b.Logf("case %s: %d events forwarded, destination latency %v", c.prov, o.events, time.Duration(b.api.latency.Load()))
		if *c.rate, err = b.backlog(ctx, c.prov, o.events, func(i int) string { return "pay_" + c.prov + "_" + strconv.Itoa(i) }); err != nil {
			return err
		}
		b.api.latency.Store(int64(o.apiLatency))
	}
	b.api.latency.Store(0)
	if got := b.api.delivered.Load(); got < int64(2*o.events) {
		return fmt.Errorf("forward cases: %d deliveries, want %d", got, 2*o.events)
	}
	return nil
}

// backlog preloads n events of prov (object names the subject of event i)
// and drains them (drain).
func (b *bench) backlog(ctx context.Context, prov string, n int, object func(i int) string) (float64, error) {
	if err := b.preload(ctx, prov, n, object); err != nil {
		return 0, err
	}
	return b.drain(ctx, prov, n)
}

// drain starts a consumer on prov's pre-loaded topic, waits for n final
// events and returns the drain rate: n over the time from the first claim
// (processing_started_at of the first batch) to the last processed_at.
func (b *bench) drain(ctx context.Context, prov string, n int) (float64, error) {
	stop, err := b.startConsumer(ctx, prov)
	if err != nil {
		return 0, err
	}
	defer stop()
	if err := b.waitFinal(ctx, prov, n, 10*time.Minute); err != nil {
		return 0, err
	}
	var span float64
	err = b.Pool.QueryRow(ctx, `SELECT extract(epoch FROM max(processed_at) - min(processing_started_at))::float8 FROM inbox WHERE provider = $1`, prov).Scan(&span)
	return float64(n) / span, err
}

// foreignRecords produces o.foreign records with no inbox row to the
// "mixed" topic, spread over the genuine events' time.
func (b *bench) foreignRecords(ctx context.Context) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Kafka.Brokers...), kgo.ProducerLinger(time.Millisecond))
	if err != nil {
		return err
	}
	defer cl.Close()
	o, i := b.o, 0
	span := time.Duration(float64(o.genuine)/o.mixedRate*float64(time.Second)) + time.Second
	produce := func(n int) error {
		for range min(n, o.foreign-i) {
			id := "foreign_" + strconv.Itoa(i)
			cl.Produce(ctx, schemas.Record{Topic: b.cfg.Providers["mixed"].Topic, Key: "pay_" + id, Provider: "mixed", EventID: id, Type: "payment.succeeded",
				OutboxID: "00000000-0000-0000-0000-000000000000", Payload: body(id, "pay_"+id, time.Now())}.Encode(), nil)
			i++
		}
		return nil
	}
	_, err = benchenv.Pace(ctx, float64(o.foreign)/span.Seconds(), span, produce)
	_ = produce(o.foreign) // what the last tick left
	return cmp.Or(err, cl.Flush(ctx))
}

func maxInWindow(times []time.Time, w time.Duration) int {
	most, j := 0, 0
	for i := range times { // times are in arrival order
		for times[i].Sub(times[j]) >= w {
			j++
		}
		most = max(most, i-j+1)
	}
	return most
}
