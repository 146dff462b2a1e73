package forward

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gatehouse/gatehouse/consumers/event"
	"github.com/gatehouse/gatehouse/internal/testkit"
)

// Issue 45, finding 2: a transform that escapes into native code (an
// 8 GiB string, a nesting past the bounds, a regular expression that
// backtracks forever) fails its own delivery, permanently, with the bound
// it hit, in bounded time, without the forwarder's process growing; the
// forwarder then delivers the next event.
func TestForwardTransformEscapesFailTheEventOnly(t *testing.T) {
	svc := newTeamService(t)
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg, nil)
	src := `function handler(w) {
  const d = w.payload.data.event.data;
  if (d.attack === "repeat") w.payload = {s: 'x'.repeat(2**33)};
  if (d.attack === "regex") /^(a|aa)+(?=b)$/.test('a'.repeat(64));
  if (d.attack === "nest") { let o = {}; for (let i = 0; i < 1000; i++) o = {o}; w.payload = o }
  if (d.attack === "getter") w.payload = {get x() { throw new Error("getter refuses") }};
  return w;
}`
	fw := forwardTo(t, svc, Config{Transform: src, TransformTimeout: 300 * time.Millisecond, Metrics: m})
	deep := strings.Repeat(`[`, 5000) + strings.Repeat(`]`, 5000)
	for _, c := range []struct{ id, data, want string }{
		{"repeat", `{"attack":"repeat"}`, "exhausted the sandbox's memory"},
		{"regex", `{"attack":"regex"}`, "ran longer than 300ms"},
		{"nest", `{"attack":"nest"}`, "nested deeper than 128"},
		{"getter", `{"attack":"getter"}`, "getter refuses"},
		{"deep_in", `{"attack":` + deep + `}`, "nested deeper than 128"},
	} {
		runtime.GC()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		start := time.Now()
		err := fw.Deliver(context.Background(), refEvent(c.id, "order.paid", c.data), nil)
		if err == nil || event.Classify(err) != event.ClassPermanent || !errors.Is(err, errTransform) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want a permanent transform error naming %q", c.id, err, c.want)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("%s: took %v", c.id, d)
		}
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		if grew := int64(after.HeapSys) - int64(before.HeapSys); grew > 64<<20 {
			t.Errorf("%s: the forwarder's heap grew by %d MiB", c.id, grew>>20)
		}
		if err := fw.Deliver(context.Background(), refEvent("ok_"+c.id, "order.paid", `{}`), nil); err != nil {
			t.Errorf("after %s: %v", c.id, err)
		}
	}
	if got, _ := svc.Counts(); len(got) != 5 {
		t.Errorf("delivered %v, want the 5 benign events only", got)
	}
	if n := testkit.Counter(t, reg, "gatehouse_consumer_forwards_total", map[string]string{"result": "transform_failed"}); n != 5 {
		t.Errorf("transform_failed = %v, want 5", n)
	}
}

// The start-up hang of issue 45: a transform whose trial run cannot finish
// (here a regular expression backtracking for minutes) is refused with a
// clear error within its time and grace, and so is one that exhausts the
// memory on its trial run; one that only throws on the trial delivery is
// taken.
func TestForwardTransformTrialRunIsBounded(t *testing.T) {
	svc := newTeamService(t)
	for _, c := range []struct{ name, src, want string }{
		{"catastrophic regex", `function handler(w) { /^(a|aa)+(?=b)$/.test('a'.repeat(64)); return w }`, "ran longer than 1s"},
		{"native loop", `function handler(w) { w.payload = Array(1e9).fill(0); return w }`, "the trial run failed"},
		{"memory", `function handler(w) { w.payload = {s: 'x'.repeat(2**33)}; return w }`, "exhausted the sandbox's memory"},
	} {
		start := time.Now()
		fw, err := NewForwarder(Config{Provider: "ref", URL: svc.URL(), Secret: forwardSecret, Transform: c.src, TransformTimeout: time.Second})
		if err == nil {
			fw.Close()
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error naming %q", c.name, err, c.want)
		}
		if d := time.Since(start); d > 2*time.Second+TransformGrace+5*time.Second {
			t.Errorf("%s: refused after %v", c.name, d)
		}
	}
	fw, err := NewForwarder(Config{Provider: "ref", URL: svc.URL(), Secret: forwardSecret,
		Transform: `function handler(w) { return {payload: w.payload.data.event.data.customer.id} }`})
	if err != nil {
		t.Fatalf("a transform that throws on the trial delivery: %v", err)
	}
	fw.Close()
}
