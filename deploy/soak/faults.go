package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"
)

// fault is one injected fault.
type fault struct {
	kind      string
	target    string
	at        time.Time // when it was injected
	restored  time.Time // when the faulty component was running again
	recovered time.Duration
	err       error
}

// Fault kinds.
const (
	faultServe    = "SIGKILL serve"
	faultRelay    = "SIGKILL relay"
	faultConsume  = "SIGKILL consume"
	faultBroker   = "SIGKILL Kafka broker"
	faultPostgres = "restart PostgreSQL (fast)"
)

var faultKinds = []string{faultServe, faultRelay, faultConsume, faultBroker, faultPostgres}

// injectFaults injects faults until ctx ends: every kind once in a random
// order, then again in a new order, with random pauses around o.faultEvery.
func (s *stack) injectFaults(ctx context.Context, o *options) []*fault {
	var out []*fault
	var order []string
	for {
		pause := time.Duration(float64(o.faultEvery) * (0.5 + rand.Float64()))
		select {
		case <-ctx.Done():
			return out
		case <-time.After(pause):
		}
		if len(order) == 0 {
			order = append([]string(nil), faultKinds...)
			rand.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		}
		f := &fault{kind: order[0], at: time.Now()}
		order = order[1:]
		f.err = s.inject(context.WithoutCancel(ctx), f)
		f.restored = time.Now()
		if f.err != nil {
			s.logf("fault %s %s: %v", f.kind, f.target, f.err)
		} else {
			s.logf("fault %s %s: back after %v", f.kind, f.target, f.restored.Sub(f.at).Round(time.Millisecond))
		}
		out = append(out, f)
	}
}

// inject applies one fault and brings the component back.
func (s *stack) inject(ctx context.Context, f *fault) error {
	down := func(min, spread time.Duration) { time.Sleep(min + time.Duration(rand.Int64N(int64(spread)))) }
	switch f.kind {
	case faultServe, faultRelay, faultConsume:
		p := s.serve
		if f.kind == faultRelay {
			p = s.relay
		} else if f.kind == faultConsume {
			p = s.consume[rand.IntN(len(s.consume))]
		}
		f.target = p.Name
		p.Kill()
		down(200*time.Millisecond, 1500*time.Millisecond)
		return p.Start(ctx)
	case faultBroker:
		node := s.kafka.Nodes[rand.IntN(len(s.kafka.Nodes))]
		f.target = fmt.Sprintf("node %s", node.Brokers[0])
		if err := node.Kill(); err != nil {
			return err
		}
		down(2*time.Second, 3*time.Second)
		rctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		return node.Restart(rctx)
	case faultPostgres:
		f.target = "postgres"
		if err := s.pg.Stop(false); err != nil {
			return err
		}
		down(500*time.Millisecond, time.Second)
		rctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		return s.pg.Start(rctx)
	}
	return fmt.Errorf("unknown fault %q", f.kind)
}
