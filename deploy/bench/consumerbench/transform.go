package main

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/dop251/goja"

	"github.com/gatehouse/gatehouse/consumers/forward/jsbox"
)

// benchTransform reshapes a delivery as a team's transform typically does.
const benchTransform = `function handler(w) {
  const d = w.payload.data;
  w.payload = {kind: w.eventType, provider: d.provider, id: d.event_id, event: d.event};
  w.headers["X-Team"] = "bench";
  return w;
}`

// benchDelivery is a forward body of about 1 KiB.
var benchDelivery = func() []byte {
	items := make([]map[string]any, 12)
	for i := range items {
		items[i] = map[string]any{"sku": fmt.Sprintf("sku_%04d", i), "quantity": i + 1, "price": 1999}
	}
	b, _ := json.Marshal(map[string]any{"type": "payment.succeeded", "timestamp": "2026-01-01T00:00:00Z",
		"data": map[string]any{"provider": "bench", "event_id": "evt_1", "type": "payment.succeeded", "attempt": 1,
			"event": map[string]any{"id": "evt_1", "data": map[string]any{"payment_id": "pay_1", "items": items}}}})
	return b
}()

// transformCost measures a forward entry's transform per event: in the
// sandbox as `consume` runs it (jsbox: a worker process per run at once),
// one event at a time and with every worker busy, beside the same script
// in goja in the calling process (the engine without the sandbox, as
// before issue 45: a floor for any in-process design).
func transformCost(ctx context.Context, o *options, res *results) error {
	box, err := jsbox.New(jsbox.Config{Source: benchTransform, Timeout: time.Second})
	if err != nil {
		return err
	}
	defer box.Close()
	workers := min(runtime.GOMAXPROCS(0), 4)
	run := func() error {
		_, err := box.Run(ctx, "payment.succeeded", benchDelivery)
		return err
	}
	for range 2 * workers { // start the workers
		if err := run(); err != nil {
			return fmt.Errorf("transform: %w", err)
		}
	}
	start := time.Now()
	for range o.transformN {
		if err := run(); err != nil {
			return fmt.Errorf("transform: %w", err)
		}
	}
	sandboxed := time.Since(start) / time.Duration(o.transformN)
	start = time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := w; i < o.transformN; i += workers {
				if err := run(); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return fmt.Errorf("transform: %w", err)
	}
	rate := float64(o.transformN) / time.Since(start).Seconds()
	prog := goja.MustCompile("transform.js", benchTransform+"\n;handler", true)
	start = time.Now()
	for range o.transformN {
		if err := inProcess(prog); err != nil {
			return fmt.Errorf("transform in-process: %w", err)
		}
	}
	direct := time.Since(start) / time.Duration(o.transformN)
	res.row("9 | transform of a %d-byte delivery (%d events): per event in the sandbox, one at a time / in goja in-process without the sandbox; events/s with %d workers busy | **%s** / %s; %.0f events/s | –",
		len(benchDelivery), o.transformN, workers, us(sandboxed), us(direct), rate)
	return nil
}

// inProcess runs prog on benchDelivery in a new runtime of this process.
func inProcess(prog *goja.Program) error {
	vm := goja.New()
	fn, err := vm.RunProgram(prog)
	if err != nil {
		return err
	}
	handler, _ := goja.AssertFunction(fn)
	in := vm.NewObject()
	payload, err := vm.RunString("(" + string(benchDelivery) + ")")
	if err != nil {
		return err
	}
	_ = in.Set("eventType", "payment.succeeded")
	_ = in.Set("payload", payload)
	_ = in.Set("headers", vm.NewObject())
	out, err := handler(goja.Undefined(), in)
	if err != nil {
		return err
	}
	_, err = json.Marshal(out.Export().(map[string]any)["payload"])
	return err
}

func us(d time.Duration) string { return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond)) }
