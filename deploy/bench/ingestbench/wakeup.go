package main

import (
	"runtime"
	"time"

	"github.com/gatehouse/gatehouse/deploy/bench/benchenv"
)

// wakeProbe measures how late this process is woken: a goroutine on its own
// OS thread sleeps 1 ms in a loop and records each overshoot. On a shared
// 2-core machine the benchmark's latency includes such delays in every
// process on a request's path (load generator, receiver, PostgreSQL); the
// probe shows their size during each run, apart from anything the receiver
// does.
type wakeProbe struct {
	stop chan struct{}
	done chan *benchenv.Hist
}

func startWakeProbe() *wakeProbe {
	p := &wakeProbe{stop: make(chan struct{}), done: make(chan *benchenv.Hist, 1)}
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		late := benchenv.NewHist()
		for {
			select {
			case <-p.stop:
				p.done <- late
				return
			default:
			}
			t := time.Now()
			time.Sleep(time.Millisecond)
			late.Record(time.Since(t) - time.Millisecond)
		}
	}()
	return p
}

// finish stops the probe and returns the p99 and maximum overshoot.
func (p *wakeProbe) finish() (p99, worst time.Duration) {
	close(p.stop)
	late := <-p.done
	return late.Q(0.99), late.Q(1)
}
