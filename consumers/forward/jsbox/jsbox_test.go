package jsbox

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

const testTimeout = time.Second // generous: a race-detector build on a busy machine

func newSandbox(t *testing.T, src string) *Sandbox {
	t.Helper()
	s, err := New(Config{Source: src, Timeout: testTimeout, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

const delivery = `{"type":"order.paid","data":{"event":{"data":{"customer":"cus_1","amount":12}}}}`

// A script shapes the payload and headers, or cancels; the payload keeps
// the order the script gave its keys.
func TestRunShapesTheDelivery(t *testing.T) {
	s := newSandbox(t, `function handler(w) {
  const d = w.payload.data.event.data;
  if (d.test) { w.cancel = true; return w }
  w.payload = {kind: w.eventType, customer: d.customer, cents: d.amount * 100};
  w.headers["X-Route"] = "billing";
  return w;
}`)
	res, err := s.Run(t.Context(), "order.paid", []byte(delivery))
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Payload) != `{"kind":"order.paid","customer":"cus_1","cents":1200}` || res.Headers["X-Route"] != "billing" || res.Cancel {
		t.Errorf("result %+v (%s)", res, res.Payload)
	}
	res, err = s.Run(t.Context(), "order.paid", []byte(`{"data":{"event":{"data":{"test":true}}}}`))
	if err != nil || !res.Cancel {
		t.Errorf("cancel: %+v, %v", res, err)
	}
}

// The hostile transforms of issue 45: each one fails its own run in
// bounded time with the bound it hit, the calling process's heap does
// not grow, and the sandbox serves the next delivery.
func TestRunHostileScriptsFailWithinBounds(t *testing.T) {
	deep := strings.Repeat(`{"a":`, 10000) + "1" + strings.Repeat("}", 10000)
	for _, c := range []struct {
		name, src, body string
		kinds           []Kind
		want            string
	}{
		{"repeat 8 GiB", `function handler(w) { w.payload = {s: 'x'.repeat(2**33)}; return w }`, "", []Kind{KindMemory}, "memory"},
		{"repeat in a call", `function handler(w) { 'x'.repeat(2**33).length; return w }`, "", []Kind{KindMemory}, "memory"},
		{"padStart", `function handler(w) { w.payload = 'x'.padStart(2**31, 'ab'); return w }`, "", []Kind{KindMemory}, "memory"},
		{"padEnd", `function handler(w) { w.payload = 'x'.padEnd(2**31); return w }`, "", []Kind{KindMemory}, "memory"},
		{"Array(1e9).fill", `function handler(w) { w.payload = Array(1e9).fill(0); return w }`, "", []Kind{KindMemory, KindTimeout}, ""},
		{"doubling string", `function handler(w) { let s = 'x'; for (;;) s += s }`, "", []Kind{KindMemory, KindTimeout}, ""},
		{"join", `function handler(w) { w.payload = new Array(2**28).join('abcdefgh'); return w }`, "", []Kind{KindMemory, KindTimeout}, ""},
		{"stringify a cycle", `function handler(w) { const a = {}; a.a = a; JSON.stringify(a); return w }`, "", []Kind{KindScript}, "circular"},
		{"returns a cycle", `function handler(w) { const a = {}; a.a = a; w.payload = a; return w }`, "", []Kind{KindScript}, "circular"},
		{"deep nesting out", `function handler(w) { let o = {}; for (let i = 0; i < 3e5; i++) o = {o}; w.payload = o; return w }`, "", []Kind{KindMemory, KindScript, KindTimeout}, ""},
		{"deep JSON.parse", `function handler(w) { w.payload = JSON.parse('['.repeat(3e6) + ']'.repeat(3e6)); return w }`, "", []Kind{KindMemory, KindScript, KindTimeout}, ""},
		{"nested past the bound out", `function handler(w) { let o = {}; for (let i = 0; i < 200; i++) o = {o}; w.payload = o; return w }`, "", []Kind{KindScript}, "nested deeper than 128"},
		{"deep nesting in", `function handler(w) { return w }`, deep, []Kind{KindInput}, "nested deeper than 128"},
		{"catastrophic regex", `function handler(w) { /^(a|aa)+(?=b)$/.test('a'.repeat(64)); return w }`, "", []Kind{KindTimeout}, "ran longer than"},
		{"catastrophic regex in a loop", `function handler(w) { for (;;) /(x+x+)+y/.test('x'.repeat(40)) }`, "", []Kind{KindTimeout}, "ran longer than"},
		{"infinite loop", `function handler(w) { for (;;) {} }`, "", []Kind{KindTimeout}, "ran longer than 1s"},
		{"deep recursion", `function f(n) { return f(n + 1) } function handler(w) { return f(0) }`, "", []Kind{KindScript}, ""},
		{"throw in a getter", `function handler(w) { w.payload = {get x() { throw new Error("getter says no") }}; return w }`, "", []Kind{KindScript}, "getter says no"},
		{"throw in a result getter", `function handler(w) { return {get payload() { throw new Error("no payload") }} }`, "", []Kind{KindScript}, "no payload"},
		{"throw in toJSON", `function handler(w) { w.payload = {toJSON() { throw new Error("toJSON says no") }}; return w }`, "", []Kind{KindScript}, "toJSON says no"},
		{"payload too large", `function handler(w) { w.payload = 'x'.repeat((1 << 20) + 16); return w }`, "", []Kind{KindScript}, "payload larger than"},
		{"replaced JSON", `function handler(w) { JSON.stringify = () => 'not json'; JSON.parse = null; return w }`, "", nil, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newSandbox(t, c.src)
			body := c.body
			if body == "" {
				body = delivery
			}
			runtime.GC()
			var before runtime.MemStats
			runtime.ReadMemStats(&before)
			start := time.Now()
			_, err := s.Run(t.Context(), "order.paid", []byte(body))
			elapsed := time.Since(start)
			var se *Error
			switch {
			case c.kinds == nil:
				if err != nil {
					t.Fatalf("err %v, want none", err)
				}
			case !errors.As(err, &se) || !slices.Contains(c.kinds, se.Kind) || !strings.Contains(err.Error(), c.want):
				t.Fatalf("err %#v, want an *Error of kind %v naming %q", err, c.kinds, c.want)
			}
			if elapsed > 10*time.Second {
				t.Errorf("took %v", elapsed)
			}
			var after runtime.MemStats
			runtime.ReadMemStats(&after)
			if grew := int64(after.HeapSys) - int64(before.HeapSys); grew > 64<<20 {
				t.Errorf("the calling process's heap grew by %d MiB", grew>>20)
			}
			t.Logf("%v after %v", err, elapsed)
			// The sandbox goes on: a new worker takes the next delivery.
			ok := newSandbox(t, `function handler(w) { w.payload = {ok: true}; return w }`)
			if res, err := ok.Run(t.Context(), "order.paid", []byte(delivery)); err != nil || string(res.Payload) != `{"ok":true}` {
				t.Errorf("a benign run after: %s, %v", res.Payload, err)
			}
			if se != nil && se.Kind != KindScript && se.Kind != KindInput {
				if _, err := s.Run(t.Context(), "order.paid", []byte(delivery)); !errors.As(err, &se) {
					t.Errorf("the same script again: %v, want its failure again", err)
				}
			}
		})
	}
}

// A script that does not compile is refused when the sandbox starts; one
// with no handler fails each run with KindNoHandler.
func TestStartCompiles(t *testing.T) {
	s := newSandbox(t, `function handler( {`)
	var se *Error
	if err := s.Start(t.Context()); !errors.As(err, &se) || se.Kind != KindCompile {
		t.Errorf("start: %v, want KindCompile", err)
	}
	s = newSandbox(t, `function nope() {}`)
	if _, err := s.Run(t.Context(), "x", []byte(`{}`)); !errors.As(err, &se) || se.Kind != KindNoHandler {
		t.Errorf("run: %v, want KindNoHandler", err)
	}
}

// A cancelled context abandons the run: not the script's failure.
func TestRunCancelled(t *testing.T) {
	s := newSandbox(t, `function handler(w) { for (;;) {} }`)
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	var se *Error
	if _, err := s.Run(ctx, "x", []byte(`{}`)); err == nil || errors.As(err, &se) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err %v, want the context's", err)
	}
}

// Depth counts nesting outside strings.
func TestDepth(t *testing.T) {
	for in, want := range map[string]int{`1`: 0, `{}`: 1, `[[1],{"a":[2]}]`: 3, `{"a":"[[[{{{"}`: 1, `["\"[["]`: 1} {
		if got := Depth([]byte(in)); got != want {
			t.Errorf("Depth(%s) = %d, want %d", in, got, want)
		}
	}
}

// A worker killed from outside while idle (the kernel's OOM killer, an
// operator) is replaced before the next delivery, which does not fail;
// an idle worker ends after IdleTimeout, and the next run starts another.
func TestRunReplacesWorkersThatEnded(t *testing.T) {
	s := newSandbox(t, `function handler(w) { return w }`)
	if err := s.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	w := s.idle[0]
	s.mu.Unlock()
	w.kill()
	if _, err := s.Run(t.Context(), "x", []byte(`{}`)); err != nil {
		t.Fatalf("after a worker died idle: %v", err)
	}
	s2, err := New(Config{Source: `function handler(w) { return w }`, Timeout: testTimeout, IdleTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s2.Close)
	if err := s2.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	s2.mu.Lock()
	w = s2.idle[0]
	s2.mu.Unlock()
	select {
	case <-w.done:
	case <-time.After(5 * time.Second):
		t.Fatal("an idle worker did not end")
	}
	if _, err := s2.Run(t.Context(), "x", []byte(`{}`)); err != nil {
		t.Fatalf("after the idle worker ended: %v", err)
	}
	var se *Error
	if _, err := s2.Run(t.Context(), "x", []byte(`{not json`)); !errors.As(err, &se) || se.Kind != KindInput {
		t.Errorf("a delivery that is not JSON: %v", err)
	}
}

// A terminal's Ctrl-C goes to gatehouse's process group, not the
// workers'; and a worker ignores an interrupt sent to it anyway: the run
// in it completes.
func TestWorkersOutliveAnInterrupt(t *testing.T) {
	s := newSandbox(t, `function handler(w) { const end = Date.now() + 200; while (Date.now() < end) {} w.payload = {ok: 1}; return w }`)
	if err := s.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	pid := s.idle[0].cmd.Process.Pid
	s.mu.Unlock()
	if pg, err := syscall.Getpgid(pid); err != nil || pg == syscall.Getpgrp() {
		t.Errorf("the worker's process group %d (%v) is gatehouse's", pg, err)
	}
	go func() {
		time.Sleep(50 * time.Millisecond)
		_ = syscall.Kill(pid, syscall.SIGINT)
	}()
	if res, err := s.Run(t.Context(), "x", []byte(`{}`)); err != nil || string(res.Payload) != `{"ok":1}` {
		t.Errorf("a run interrupted by SIGINT: %s, %v", res.Payload, err)
	}
}

// A worker's start (exec, the runtime's start: a second or more in a
// race-detector build) is not counted in the script's time: a slow start
// does not fail the delivery as a timeout.
func TestSlowStartIsNotTheScriptsTime(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	slow := filepath.Join(t.TempDir(), "slow-worker")
	if err := os.WriteFile(slow, []byte("#!/bin/sh\nsleep 1\nexec "+self+"\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Source: `function handler(w) { return w }`, Timeout: 200 * time.Millisecond, Grace: 100 * time.Millisecond, Executable: slow})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	if _, err := s.Run(t.Context(), "x", []byte(`{}`)); err != nil {
		t.Errorf("a run on a slow-starting worker: %v", err)
	}
}
