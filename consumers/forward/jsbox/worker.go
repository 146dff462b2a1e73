package jsbox

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strconv"
	"syscall"
	"time"

	"github.com/dlclark/regexp2"
	"github.com/dop251/goja"

	"github.com/gatehouse/gatehouse/internal/text"
)

// The worker side: the process that runs scripts. Any binary that imports
// this package becomes a worker when started with workerEnv set (the
// parent does so with its own executable), before its main or its tests
// run: the init below serves requests on stdin/stdout and exits.
const (
	workerEnv = "GATEHOUSE_TRANSFORM_WORKER"
	memoryEnv = "GATEHOUSE_TRANSFORM_MEMORY"
)

func init() {
	if os.Getenv(workerEnv) == "1" {
		os.Exit(serveWorker(os.Stdin, os.Stdout))
	}
}

// Limits inside a worker.
const (
	maxCallStack = 1000     // JavaScript frames
	maxGoStack   = 64 << 20 // native recursion (JSON.parse/stringify of nesting): a fatal error past it
)

// serveWorker caps the process's memory, then answers one request at a
// time until stdin closes. A script's runaway in native code (an
// allocation past the cap, a native recursion past the stack) is a fatal
// error of this process, which the parent sees and reports.
func serveWorker(in io.Reader, out io.Writer) int {
	limit, err := strconv.ParseUint(os.Getenv(memoryEnv), 10, 64)
	if err != nil || limit == 0 {
		fmt.Fprintln(os.Stderr, "jsbox worker: no memory limit given")
		return 3
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_DATA, &syscall.Rlimit{Cur: limit, Max: limit}); err != nil {
		fmt.Fprintln(os.Stderr, "jsbox worker: set memory limit:", err)
		return 3
	}
	signal.Ignore(os.Interrupt, syscall.SIGTERM, syscall.SIGHUP) // the parent ends it, by closing stdin or killing it
	debug.SetMaxStack(maxGoStack)
	debug.SetMemoryLimit(int64(limit / 2)) // collect early, well before the hard cap
	br, bw := bufio.NewReader(in), bufio.NewWriter(out)
	if err := writeFrame(bw, response{}); err != nil { // ready: the start's time is not the script's
		return 0
	}
	var hello initRequest
	if err := readFrame(br, &hello); err != nil {
		return 0
	}
	// Read when a RegExp is compiled, literals with the script: every one the
	// script makes stops matching at its time limit.
	regexp2.DefaultMatchTimeout = hello.Timeout
	prog, err := compile(hello.Source)
	if err != nil {
		_ = writeFrame(bw, response{Kind: KindCompile, Error: text.Elide(err.Error(), 1024)})
		_, _ = io.Copy(io.Discard, br) // exit once the parent has read the answer and closed stdin
		return 0
	}
	if err := writeFrame(bw, response{}); err != nil {
		return 0
	}
	for {
		var req request
		if err := readFrame(br, &req); err != nil {
			if errors.Is(err, io.EOF) {
				return 0
			}
			fmt.Fprintln(os.Stderr, "jsbox worker: read request:", err)
			return 4
		}
		if err := writeFrame(bw, execute(prog, hello.Timeout, req)); err != nil {
			return 0
		}
	}
}

func compile(src string) (*goja.Program, error) {
	return goja.Compile("transform.js", src+"\n;typeof handler === 'function' ? handler : undefined", true)
}

// prelude runs before the script in each runtime: it keeps its own
// JSON.parse, JSON.stringify and Object.keys (the script may replace the
// globals) and reads the handler's result inside the sandbox, so nothing
// the script built is walked by Go code: getters, toJSON and cycles throw
// there, under the same time limit.
var prelude = goja.MustCompile("prelude.js", `(function () {
  const parse = JSON.parse, stringify = JSON.stringify, keys = Object.keys, max = `+strconv.Itoa(MaxOutput)+`;
  return {
    input: function (type, body) { return {eventType: type, payload: parse(body), headers: {}, cancel: false} },
    output: function (res) {
      if (res === null || typeof res !== 'object') throw new TypeError('handler must return the webhook object');
      if (res.cancel === true) return [true, '', []];
      const p = stringify(res.payload);
      if (typeof p !== 'string' || p === 'null') throw new TypeError('handler must return the webhook with a JSON payload');
      if (p.length > max) throw new RangeError('payload larger than ' + max + ' bytes');
      const h = res.headers, hs = [];
      if (h !== undefined && h !== null) {
        const ks = keys(h);
        if (ks.length > 64) throw new RangeError('more than 64 headers');
        for (const k of ks) {
          const v = h[k];
          if (typeof v !== 'string') throw new TypeError('header ' + stringify(k) + ' must be a string');
          hs.push(k, v);
        }
      }
      return [false, p, hs];
    }
  };
})()`, true)

// execute runs one event through a new runtime.
func execute(prog *goja.Program, timeout time.Duration, req request) (resp response) {
	defer func() {
		if r := recover(); r != nil {
			resp = response{Kind: KindCrash, Error: fmt.Sprintf("panicked: %v", r)}
		}
	}()
	vm := goja.New()
	vm.SetMaxCallStackSize(maxCallStack)
	timer := time.AfterFunc(timeout, func() { vm.Interrupt("ran longer than " + timeout.String()) })
	defer timer.Stop()
	pre, err := vm.RunProgram(prelude)
	if err != nil {
		return failure(err)
	}
	funcs := pre.ToObject(vm)
	input, _ := goja.AssertFunction(funcs.Get("input"))
	output, _ := goja.AssertFunction(funcs.Get("output"))
	fn, err := vm.RunProgram(prog)
	if err != nil {
		return failure(err)
	}
	handler, ok := goja.AssertFunction(fn)
	if !ok {
		return response{Kind: KindNoHandler, Error: "the script defines no function handler(webhook)"}
	}
	in, err := input(goja.Undefined(), vm.ToValue(req.Type), vm.ToValue(string(req.Body)))
	if err != nil {
		return failure(err)
	}
	res, err := handler(goja.Undefined(), in)
	if err != nil {
		return failure(err)
	}
	outv, err := output(goja.Undefined(), res)
	if err != nil {
		return failure(err)
	}
	parts, _ := outv.Export().([]any) // built by output above: [bool, string, [string…]]
	if len(parts) != 3 {
		return response{Kind: KindCrash, Error: "prelude output malformed"}
	}
	if c, _ := parts[0].(bool); c {
		return response{Cancel: true}
	}
	payload, _ := parts[1].(string)
	if d := Depth([]byte(payload)); d > MaxDepth {
		return response{Kind: KindScript, Error: fmt.Sprintf("payload nested deeper than %d levels", MaxDepth)}
	}
	resp.Payload = []byte(payload)
	hs, _ := parts[2].([]any)
	for i := 0; i+1 < len(hs); i += 2 {
		if resp.Headers == nil {
			resp.Headers = map[string]string{}
		}
		k, _ := hs[i].(string)
		v, _ := hs[i+1].(string)
		resp.Headers[k] = v
	}
	return resp
}

// failure maps an error of the runtime to a response.
func failure(err error) response {
	var ie *goja.InterruptedError
	if errors.As(err, &ie) {
		return response{Kind: KindTimeout, Error: fmt.Sprint(ie.Value())}
	}
	var so *goja.StackOverflowError
	if errors.As(err, &so) {
		return response{Kind: KindScript, Error: fmt.Sprintf("RangeError: more than %d nested calls%s", maxCallStack, err.Error())}
	}
	return response{Kind: KindScript, Error: text.Elide(err.Error(), 1024)}
}
