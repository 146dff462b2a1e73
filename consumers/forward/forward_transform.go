package forward

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/dop251/goja"
)

// A forward entry's transform (config.Forward.Transform): JavaScript run in
// an embedded pure-Go engine (goja) before a delivery is signed, as
// Svix's and Hookdeck's transformations are. The script defines
//
//	function handler(webhook) { …; return webhook }
//
// where webhook is {eventType, payload, headers, cancel}: payload the body
// that would be sent (parsed JSON), headers the extra headers to send
// (name → value). The handler may change payload and headers, or set
// cancel = true to send nothing (the event counts as forwarded).
//
// Bounds: each call runs in a new runtime with no I/O at all (no require,
// no timers, no network, no file system: goja provides none), stopped
// after TransformTimeout (a runaway loop is interrupted), with a call stack
// of at most 1 000 frames; the payload it returns is at most 1 MiB. goja
// has no allocation cap: the time limit bounds what a script can allocate.
// A script that throws, runs out of time or returns something else than a
// webhook fails the delivery permanently: the event is dead-lettered with
// the error (forwards_total{result="transform_failed"}).
type transform struct {
	prog    *goja.Program
	timeout time.Duration
}

// Transform limits.
const (
	DefaultTransformTimeout = time.Second
	maxTransformOutput      = 1 << 20
	maxTransformStack       = 1000
)

// reservedHeaders are the headers a transform may not set: the signature's
// and the body's.
var reservedHeaders = []string{"webhook-id", "webhook-timestamp", "webhook-signature", "content-type", "content-length", "host"}

// compileTransform compiles src, which must define a function handler.
func compileTransform(src string, timeout time.Duration) (*transform, error) {
	if timeout <= 0 {
		timeout = DefaultTransformTimeout
	}
	prog, err := goja.Compile("transform.js", src+"\n;typeof handler === 'function' ? handler : undefined", true)
	if err != nil {
		return nil, fmt.Errorf("transform: %w", err)
	}
	t := &transform{prog: prog, timeout: timeout}
	if _, err := t.run("probe", json.RawMessage(`{}`)); err != nil && strings.Contains(err.Error(), "defines no function handler") {
		return nil, err
	}
	return t, nil
}

// transformed is what a transform made of a delivery.
type transformed struct {
	body    []byte
	headers http.Header
	cancel  bool
}

var errTransform = errors.New("transform")

// run applies the transform to body (the delivery's JSON) of an event of
// type typ.
func (t *transform) run(typ string, body json.RawMessage) (transformed, error) {
	vm := goja.New()
	vm.SetMaxCallStackSize(maxTransformStack)
	timer := time.AfterFunc(t.timeout, func() { vm.Interrupt(fmt.Sprintf("ran longer than %s", t.timeout)) })
	defer timer.Stop()
	fn, err := vm.RunProgram(t.prog)
	if err != nil {
		return transformed{}, fmt.Errorf("%w: %v", errTransform, err)
	}
	handler, ok := goja.AssertFunction(fn)
	if !ok {
		return transformed{}, fmt.Errorf("%w: the script defines no function handler(webhook)", errTransform)
	}
	var payload any
	if err := json.Unmarshal(body, &payload); err != nil {
		return transformed{}, fmt.Errorf("%w: the delivery is not JSON: %v", errTransform, err)
	}
	in := vm.NewObject()
	_ = in.Set("eventType", typ)
	_ = in.Set("payload", payload)
	_ = in.Set("headers", vm.NewObject())
	_ = in.Set("cancel", false)
	res, err := handler(goja.Undefined(), in)
	if err != nil {
		return transformed{}, fmt.Errorf("%w: %v", errTransform, err)
	}
	out, ok := res.Export().(map[string]any)
	if res == nil || goja.IsUndefined(res) || goja.IsNull(res) || !ok {
		return transformed{}, fmt.Errorf("%w: handler must return the webhook object", errTransform)
	}
	if c, _ := out["cancel"].(bool); c {
		return transformed{cancel: true}, nil
	}
	b, err := json.Marshal(out["payload"])
	if err != nil || len(b) > maxTransformOutput || string(b) == "null" {
		return transformed{}, fmt.Errorf("%w: payload must be JSON of at most %d bytes", errTransform, maxTransformOutput)
	}
	tr := transformed{body: b, headers: http.Header{}}
	if hs, ok := out["headers"].(map[string]any); ok {
		for k, v := range hs {
			s, ok := v.(string)
			if !ok || !validHeader(k, s) {
				return transformed{}, fmt.Errorf("%w: header %q must be a valid name with a string value", errTransform, k)
			}
			for _, r := range reservedHeaders {
				if strings.EqualFold(k, r) {
					return transformed{}, fmt.Errorf("%w: header %q is set by gatehouse", errTransform, k)
				}
			}
			tr.headers.Set(k, s)
		}
	}
	return tr, nil
}

func validHeader(name, value string) bool {
	if name == "" || len(name) > 128 || len(value) > 4096 {
		return false
	}
	for _, c := range name {
		if !(c == '-' || c >= '0' && c <= '9' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z') {
			return false
		}
	}
	return !strings.ContainsAny(value, "\r\n\x00")
}
