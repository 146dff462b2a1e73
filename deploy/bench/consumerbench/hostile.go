package main

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/gatehouse/gatehouse/consumers/forward/jsbox"
)

// hostileTransforms are scripts that escaped the engine's interrupt before
// the sandbox (issue 45, finding 2), each run as a forward entry's
// transform would be.
var hostileTransforms = []struct{ name, source string }{
	{"'x'.repeat(2**33)", `function handler(w) { w.payload = {s: 'x'.repeat(2**33)}; return w }`},
	{"Array(1e9).fill(0)", `function handler(w) { w.payload = Array(1e9).fill(0); return w }`},
	{"catastrophic regexp /^(a|aa)+(?=b)$/", `function handler(w) { /^(a|aa)+(?=b)$/.test('a'.repeat(64)); return w }`},
	{"infinite loop", `function handler(w) { for (;;) {} }`},
	{"deep recursion", `function handler(w) { function f(n) { return f(n + 1) + 1 } return f(0) }`},
	{"deep nesting out", `function handler(w) { let o = {}; for (let i = 0; i < 100000; i++) o = {o}; w.payload = o; return w }`},
}

// hostileCost runs each hostile transform through the sandbox (transform
// timeout 1 s) three times and reports how long each run took to fail and
// why, that the same sandbox then runs the benign transform, and how much
// this process's heap grew: the bounds of docs/SECURITY.md, measured.
func hostileCost(ctx context.Context, res *results) error {
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	var parts []string
	for _, h := range hostileTransforms {
		box, err := jsbox.New(jsbox.Config{Source: h.source, Timeout: time.Second})
		if err != nil {
			return err
		}
		var took []time.Duration
		var kind string
		for range 3 {
			start := time.Now()
			_, err := box.Run(ctx, "payment.succeeded", benchDelivery)
			took = append(took, time.Since(start))
			var je *jsbox.Error
			if err == nil || !errors.As(err, &je) {
				box.Close()
				return fmt.Errorf("hostile transform %s: %v, want the sandbox's error", h.name, err)
			}
			kind = je.Error()
		}
		box.Close()
		slices.Sort(took)
		if len(kind) > 60 {
			kind = kind[:60] + "…"
		}
		parts = append(parts, fmt.Sprintf("%s: %s (%s)", h.name, took[1].Round(time.Millisecond), kind))
	}
	// The sandbox still serves a benign transform after them.
	box, err := jsbox.New(jsbox.Config{Source: benchTransform, Timeout: time.Second})
	if err != nil {
		return err
	}
	defer box.Close()
	if _, err := box.Run(ctx, "payment.succeeded", benchDelivery); err != nil {
		return fmt.Errorf("benign transform after the hostile ones: %w", err)
	}
	runtime.GC()
	runtime.ReadMemStats(&m1)
	grew := (int64(m1.HeapInuse) - int64(m0.HeapInuse)) >> 20
	res.row("10 | hostile transforms (timeout 1 s, memory 256 MiB a worker): median time for a run to fail, and why; then a benign run | %s; benign run after them: ok; this process's heap grew %d MiB | each fails its own event within timeout + 0.5 s, the process lives",
		strings.Join(parts, "; "), grew)
	return nil
}
