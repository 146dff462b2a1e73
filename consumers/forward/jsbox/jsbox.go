// Package jsbox runs untrusted JavaScript (a forward entry's transform) in
// a sandbox whose memory, CPU time and stack are bounded by the operating
// system, not by the script's cooperation: each script runs in worker
// processes (the program's own executable, re-executed) under a data-size
// resource limit, killed when a run outlives its time, restarted on the
// next run. Inside a worker, goja runs the script with no I/O, a call
// stack bound, an interrupt at the time limit and a match timeout on every
// regular expression. A script that exhausts any bound fails the run it
// was in, with an *Error saying which; the calling process never shares
// its fate.
package jsbox

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"sync"
	"time"
)

// Limits of a run, in and out.
const (
	// MaxOutput bounds the payload a script returns (its JSON), in bytes.
	MaxOutput = 1 << 20
	// MaxDepth bounds the nesting of objects and arrays of the payload a
	// script is given and of the one it returns.
	MaxDepth = 128
)

// Defaults of Config.
const (
	selfExe            = "/proc/self/exe"
	DefaultMemory      = 256 << 20
	DefaultGrace       = 500 * time.Millisecond
	DefaultIdleTimeout = time.Minute
)

// Kind says why a run failed.
type Kind string

// Kinds of *Error.
const (
	KindCompile   Kind = "compile"    // the script does not compile
	KindNoHandler Kind = "no_handler" // the script defines no function handler
	KindScript    Kind = "script"     // it threw, or returned no usable webhook
	KindInput     Kind = "input"      // the delivery is not JSON the sandbox takes
	KindTimeout   Kind = "timeout"    // it ran longer than its time
	KindMemory    Kind = "memory"     // it exhausted the worker's memory or stack
	KindCrash     Kind = "crash"      // the worker died otherwise
)

// Error is a run that the script made fail. Errors of any other type
// (a worker that cannot start, a cancelled context) are not the script's.
type Error struct {
	Kind Kind
	Msg  string
}

func (e *Error) Error() string { return e.Msg }

// Config configures a Sandbox.
type Config struct {
	Source  string        // defines function handler(webhook)
	Timeout time.Duration // one run's time; required
	// Workers bounds the runs at once, one process each (default
	// min(GOMAXPROCS, 4)).
	Workers int
	// Memory is each worker's data-size limit, RLIMIT_DATA (default
	// DefaultMemory): an allocation past it ends the worker.
	Memory uint64
	// Grace after Timeout before a worker still running is killed (default
	// DefaultGrace): the interrupt stops JavaScript at Timeout, the kill
	// stops native code that never returns to it.
	Grace time.Duration
	// IdleTimeout ends a worker unused that long (default DefaultIdleTimeout).
	IdleTimeout time.Duration
	// Executable is the worker's program (default /proc/self/exe, else
	// os.Executable()): any binary that imports this package.
	Executable string
}

// Result is what a script made of a delivery.
type Result struct {
	Cancel  bool              // send nothing
	Payload []byte            // JSON, at most MaxOutput bytes, MaxDepth deep
	Headers map[string]string // as the script set them: the caller checks them
}

// Sandbox runs one script; safe for concurrent use.
type Sandbox struct {
	cfg  Config
	sem  chan struct{}
	mu   sync.Mutex
	idle []*worker
	shut bool
}

// New returns the sandbox of cfg. Workers start on demand; Start starts
// one now.
func New(cfg Config) (*Sandbox, error) {
	if cfg.Timeout <= 0 {
		return nil, fmt.Errorf("jsbox: a timeout is required")
	}
	if cfg.Workers <= 0 {
		cfg.Workers = min(runtime.GOMAXPROCS(0), 4)
	}
	if cfg.Memory == 0 {
		cfg.Memory = DefaultMemory
	}
	if cfg.Grace <= 0 {
		cfg.Grace = DefaultGrace
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.Executable == "" {
		cfg.Executable = selfExe // the running binary, even if its file was replaced since (an upgrade)
		if _, err := os.Stat(selfExe); err != nil {
			exe, err := os.Executable()
			if err != nil {
				return nil, fmt.Errorf("jsbox: find the executable: %w", err)
			}
			cfg.Executable = exe
		}
	}
	return &Sandbox{cfg: cfg, sem: make(chan struct{}, cfg.Workers)}, nil
}

// Start starts a worker and compiles the script in it: an *Error of
// KindCompile when it does not compile.
func (s *Sandbox) Start(ctx context.Context) error {
	w, err := s.get(ctx)
	if err != nil {
		return err
	}
	s.put(w)
	return nil
}

// Run gives the script a delivery of event type typ and JSON body. A
// failure the script caused is an *Error; the worker it ran in is then
// replaced. Other errors (no worker could start, ctx ended) are not the
// script's and may pass on a retry.
func (s *Sandbox) Run(ctx context.Context, typ string, body []byte) (Result, error) {
	if !json.Valid(body) {
		return Result{}, &Error{Kind: KindInput, Msg: "the delivery is not JSON"}
	}
	if d := Depth(body); d > MaxDepth {
		return Result{}, &Error{Kind: KindInput, Msg: fmt.Sprintf("the delivery is nested deeper than %d levels", MaxDepth)}
	}
	select {
	case s.sem <- struct{}{}:
	case <-ctx.Done():
		return Result{}, fmt.Errorf("jsbox: wait for a worker: %w", ctx.Err())
	}
	defer func() { <-s.sem }()
	w, err := s.get(ctx)
	if err != nil {
		return Result{}, err
	}
	resp, err := w.call(ctx, request{Type: typ, Body: body}, s.cfg.Timeout+s.cfg.Grace)
	if err != nil {
		w.kill()
		return Result{}, err
	}
	s.put(w)
	if resp.Kind != "" {
		return Result{}, &Error{Kind: resp.Kind, Msg: resp.Error}
	}
	if resp.Cancel {
		return Result{Cancel: true}, nil
	}
	if len(resp.Payload) == 0 || len(resp.Payload) > MaxOutput || Depth(resp.Payload) > MaxDepth {
		return Result{}, &Error{Kind: KindScript, Msg: "the worker returned a payload out of bounds"}
	}
	return Result{Payload: resp.Payload, Headers: resp.Headers}, nil
}

// Close ends the idle workers, and every other one when its run ends.
func (s *Sandbox) Close() {
	s.mu.Lock()
	idle := s.idle
	s.idle, s.shut = nil, true
	s.mu.Unlock()
	for _, w := range idle {
		w.stop()
	}
}

// get takes an idle worker or starts one.
func (s *Sandbox) get(ctx context.Context) (*worker, error) {
	for {
		s.mu.Lock()
		n := len(s.idle)
		if n == 0 {
			s.mu.Unlock()
			return startWorker(ctx, s.cfg)
		}
		w := s.idle[n-1]
		s.idle = s.idle[:n-1]
		s.mu.Unlock()
		w.idleTimer.Stop()
		select {
		case <-w.done: // died while idle (killed from outside): not the next event's doing
		default:
			return w, nil
		}
	}
}

// put returns a worker that finished a run to the idle ones; it ends
// after IdleTimeout unused.
func (s *Sandbox) put(w *worker) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.shut {
		go w.stop()
		return
	}
	s.idle = append(s.idle, w)
	w.idleTimer = time.AfterFunc(s.cfg.IdleTimeout, func() { s.retire(w) })
}

func (s *Sandbox) retire(w *worker) {
	s.mu.Lock()
	for i, x := range s.idle {
		if x == w {
			s.idle = append(s.idle[:i], s.idle[i+1:]...)
			s.mu.Unlock()
			w.stop()
			return
		}
	}
	s.mu.Unlock()
}
