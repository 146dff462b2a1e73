package jsbox

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gatehouse/gatehouse/internal/text"
)

// worker is one worker process, serving one run at a time.
type worker struct {
	cmd       *exec.Cmd
	in        io.WriteCloser
	bw        *bufio.Writer
	br        *bufio.Reader
	stderr    *headBuffer
	done      chan struct{} // closed when the process has been waited for
	timeout   time.Duration
	memory    uint64
	idleTimer *time.Timer
}

// startWorker starts a worker process with cfg's limits and has it compile
// the script: an *Error of KindCompile when it does not. The start is
// bounded by Timeout+Grace, as a run is.
func startWorker(ctx context.Context, cfg Config) (*worker, error) {
	cmd := exec.Command(cfg.Executable)
	// Nothing of the parent's environment (its secrets) reaches the worker.
	cmd.Env = []string{workerEnv + "=1", memoryEnv + "=" + strconv.FormatUint(cfg.Memory*raceFactor, 10),
		"GOMAXPROCS=1", "GOTRACEBACK=single"}
	// Its own process group: a terminal's Ctrl-C reaches gatehouse, which
	// abandons its runs (retried later), not the worker mid-run (which
	// would read as the script's crash). It ends when its stdin closes.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	w := &worker{cmd: cmd, stderr: &headBuffer{max: 2048}, done: make(chan struct{}), timeout: cfg.Timeout, memory: cfg.Memory}
	cmd.Stderr = w.stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("jsbox: worker stdin: %w", err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("jsbox: worker stdout: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("jsbox: start worker: %w", err)
	}
	w.in, w.bw, w.br = in, bufio.NewWriter(in), bufio.NewReaderSize(out, 64<<10)
	go func() {
		_ = cmd.Wait()
		close(w.done)
	}()
	if err := w.ready(ctx); err != nil {
		return nil, err
	}
	resp, err := w.call(ctx, initRequest{Source: cfg.Source, Timeout: cfg.Timeout}, cfg.Timeout+cfg.Grace)
	if err != nil {
		w.kill()
		var se *Error
		if errors.As(err, &se) && se.Kind == KindCrash {
			return nil, fmt.Errorf("jsbox: start worker: %s", se.Msg) // not the script's doing
		}
		return nil, err
	}
	if resp.Kind != "" {
		w.kill()
		return nil, &Error{Kind: resp.Kind, Msg: resp.Error}
	}
	return w, nil
}

// startTimeout bounds a worker's start until it is ready for the script
// (exec, the runtime's start, the memory limit): not the script's time.
const startTimeout = 30 * time.Second

// ready waits for the worker's first frame; a worker that does not send
// it is killed, with an error that is not the script's.
func (w *worker) ready(ctx context.Context) error {
	timer := time.AfterFunc(startTimeout, w.signal)
	defer timer.Stop()
	stopCtx := context.AfterFunc(ctx, w.signal)
	defer stopCtx()
	var resp response
	if err := readFrame(w.br, &resp); err != nil {
		w.kill()
		line, _, _ := strings.Cut(strings.TrimSpace(w.stderr.String()), "\n")
		return fmt.Errorf("jsbox: start worker: %v %s (%s)", err, text.Elide(line, 200), w.cmd.ProcessState)
	}
	return nil
}

// call sends req and reads the answer. Past limit, or when ctx ends, the
// worker is killed; the error then says why (an *Error when the script is
// to blame: its time, its memory, its crash).
func (w *worker) call(ctx context.Context, req any, limit time.Duration) (response, error) {
	var expired, cancelled atomic.Bool
	timer := time.AfterFunc(limit, func() { expired.Store(true); w.signal() })
	defer timer.Stop()
	stopCtx := context.AfterFunc(ctx, func() { cancelled.Store(true); w.signal() })
	defer stopCtx()
	var resp response
	err := writeFrame(w.bw, req)
	if err == nil {
		err = readFrame(w.br, &resp)
	}
	if err == nil {
		return resp, nil
	}
	w.signal()
	<-w.done // the exit status and stderr are complete
	switch {
	case expired.Load():
		return response{}, &Error{Kind: KindTimeout, Msg: fmt.Sprintf("ran longer than %s (stopped in native code)", w.timeout)}
	case cancelled.Load():
		return response{}, fmt.Errorf("jsbox: run abandoned: %w", context.Cause(ctx))
	}
	return response{}, w.death(err)
}

// death describes why the worker ended, from the head of its stderr (the
// Go runtime's fatal error).
func (w *worker) death(readErr error) *Error {
	msg := w.stderr.String()
	switch {
	case strings.Contains(msg, "out of memory") || strings.Contains(msg, "cannot allocate memory") ||
		strings.Contains(msg, "failed to allocate"):
		return &Error{Kind: KindMemory, Msg: fmt.Sprintf("exhausted the sandbox's memory (%d MiB)", w.memory>>20)}
	case strings.Contains(msg, "stack overflow") || strings.Contains(msg, "stack exceeds"):
		return &Error{Kind: KindMemory, Msg: fmt.Sprintf("exhausted the sandbox's stack (%d MiB): nested too deep", maxGoStack>>20)}
	}
	line, _, _ := strings.Cut(strings.TrimSpace(msg), "\n")
	if line == "" {
		line = readErr.Error()
	}
	return &Error{Kind: KindCrash, Msg: "the sandbox's worker died: " + text.Elide(line, 200) + " (" + w.cmd.ProcessState.String() + ")"}
}

// signal kills the process, ending any read or write on its pipes.
func (w *worker) signal() { _ = w.cmd.Process.Kill() }

// kill ends the worker and waits for it.
func (w *worker) kill() {
	w.signal()
	<-w.done
}

// stop asks the worker to exit (its stdin ends) and kills it if it has
// not within a second.
func (w *worker) stop() {
	_ = w.in.Close()
	select {
	case <-w.done:
	case <-time.After(time.Second):
		w.kill()
	}
}

// headBuffer keeps the first max bytes written to it.
type headBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (h *headBuffer) Write(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if n := h.max - len(h.b); n > 0 {
		h.b = append(h.b, p[:min(n, len(p))]...)
	}
	return len(p), nil
}

func (h *headBuffer) String() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return string(h.b)
}
