package jsbox

import (
	"testing"
	"time"
)

const benchSrc = `function handler(w) {
  const d = w.payload.data;
  w.payload = {kind: w.eventType, customer: d.event.data.customer, cents: d.event.data.amount * 100};
  w.headers["X-Team"] = "bench";
  return w;
}`

// BenchmarkRun is a run in the sandbox: a worker process's round trip.
func BenchmarkRun(b *testing.B) {
	s, err := New(Config{Source: benchSrc, Timeout: time.Second, Workers: 1})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	for b.Loop() {
		if _, err := s.Run(b.Context(), "order.paid", []byte(delivery)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkExecute is the same run in this process: what the sandbox's
// process boundary adds is BenchmarkRun's time less this.
func BenchmarkExecute(b *testing.B) {
	prog, err := compile(benchSrc)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if r := execute(prog, time.Second, request{Type: "order.paid", Body: []byte(delivery)}); r.Kind != "" {
			b.Fatal(r.Error)
		}
	}
}
