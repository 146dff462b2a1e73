package main

import (
	"bytes"
	"context"
	"testing"
	"time"
)

// TestSoakShort runs the chaos soak briefly inside `make test`: about
// 18 000 events (plus 30 % duplicates) at 200/s with a fault every ~8 s, so
// every kind of fault happens at least once; every invariant must hold.
// `make soak` runs the long version.
func TestSoakShort(t *testing.T) {
	var log bytes.Buffer
	o := &options{objects: 600, perObject: 30, dupRatio: 0.3, swapRatio: 0.1, rate: 200, workers: 16,
		faultEvery: 8 * time.Second, drain: 3 * time.Minute, dir: t.TempDir(), log: &syncWriter{w: &log}}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	res, err := run(ctx, o)
	if err != nil {
		t.Fatalf("soak: %v\n%s", err, log.String())
	}
	var table bytes.Buffer
	res.print(&table)
	t.Logf("\n%s", table.String())
	kinds := map[string]bool{}
	for _, f := range res.faults {
		kinds[f.kind] = true
	}
	if len(kinds) < len(faultKinds) {
		t.Errorf("only %d of %d fault kinds were injected: %v", len(kinds), len(faultKinds), kinds)
	}
	if len(res.violations) > 0 {
		t.Fatalf("invariants violated: %v\nprogress:\n%s", res.violations, log.String())
	}
}
