package benchenv

import (
	"context"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"
)

// stallingServer answers 204, except that its first answer takes stall.
func stallingServer(t *testing.T, stall time.Duration) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if n.Add(1) == 1 {
			time.Sleep(stall)
		}
		w.WriteHeader(http.StatusNoContent)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String()
}

// A request that waits for a connection while the receiver stalls counts
// its wait: latency runs from its due time, not from when it was sent.
func TestFixedRateMeasuresFromTheDueTime(t *testing.T) {
	addr := stallingServer(t, 300*time.Millisecond)
	d := NewDeliveries("p", addr, []byte("whsec_test"), 200)
	r := Load{Addr: addr, Conns: 1, Next: d.Next}.Fixed(context.Background(), 100, time.Second)
	if ok, failed := r.Counts(); ok != 100 || failed != 0 {
		t.Fatalf("answers: %d ok, %d failed (%s); want 100, 0", ok, failed, r.LastError)
	}
	if r.Acks[1].Due != 10*time.Millisecond {
		t.Fatalf("second request due at %s, want 10ms", r.Acks[1].Due)
	}
	// Due at 10 ms, sent after the first answer at about 300 ms.
	if got := r.Acks[1].Latency; got < 250*time.Millisecond {
		t.Errorf("second request's latency %s: the wait for the stalled connection was not counted", got)
	}
	if got := r.Acks[99].Latency; got > 100*time.Millisecond {
		t.Errorf("last request's latency %s: the schedule did not catch up", got)
	}
}
