package forward

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/gatehouse/gatehouse/consumers/forward/jsbox"
)

// A forward entry's transform (config.Forward.Transform): JavaScript run
// in a sandbox (package jsbox: goja in worker processes) before a delivery
// is signed, as Svix's and Hookdeck's transformations are. The script
// defines
//
//	function handler(webhook) { …; return webhook }
//
// where webhook is {eventType, payload, headers, cancel}: payload the body
// that would be sent (parsed JSON), headers the extra headers to send
// (name → value). The handler may change payload and headers, or set
// cancel = true to send nothing (the event counts as forwarded).
//
// Bounds (jsbox says how each is enforced): no I/O at all; TransformTimeout
// per run (an interrupt, a match timeout on every regular expression, and
// a kill of the worker TransformGrace later when native code does not
// return); the worker's memory (jsbox.DefaultMemory, RLIMIT_DATA) and
// stack; 1 000 call frames; a payload in and out at most jsbox.MaxDepth
// deep, out at most 1 MiB. A script that throws, exhausts a bound or
// returns something else than a webhook fails the delivery permanently:
// the event is dead-lettered with the reason
// (forwards_total{result="transform_failed"}); only its worker is
// replaced. The same bounds hold for the trial run at start-up.
type transform struct {
	box *jsbox.Sandbox
}

// Transform limits.
const (
	DefaultTransformTimeout = time.Second
	// TransformGrace is how long after its timeout a run still in native
	// code is killed.
	TransformGrace = 500 * time.Millisecond
)

// reservedHeaders are the headers a transform may not set: the signature's
// and the body's.
var reservedHeaders = []string{"webhook-id", "webhook-timestamp", "webhook-signature", "content-type", "content-length", "host",
	HeaderReplay, HeaderOriginalReceivedAt}

// trialBody is the delivery of the trial run: the shape of a real one.
const trialBody = `{"type":"gatehouse.trial","timestamp":"2000-01-01T00:00:00Z","data":{"provider":"","event_id":"trial","type":"gatehouse.trial","attempt":0,"event":{}}}`

// compileTransform starts the sandbox of src, which must compile and
// define a function handler, and runs it once on a trial delivery: a
// script that cannot finish it (out of time, memory or stack) is refused,
// in bounded time; one that only throws on it is not (it may expect a
// real event).
func compileTransform(src string, timeout time.Duration) (*transform, error) {
	if timeout <= 0 {
		timeout = DefaultTransformTimeout
	}
	box, err := jsbox.New(jsbox.Config{Source: src, Timeout: timeout, Grace: TransformGrace})
	if err != nil {
		return nil, fmt.Errorf("transform: %w", err)
	}
	_, err = box.Run(context.Background(), "gatehouse.trial", []byte(trialBody))
	var se *jsbox.Error
	switch {
	case err == nil:
	case errors.As(err, &se) && se.Kind == jsbox.KindScript:
	case errors.As(err, &se) && se.Kind == jsbox.KindNoHandler:
		box.Close()
		return nil, fmt.Errorf("transform: %s", se.Msg)
	case se != nil && se.Kind != jsbox.KindCompile:
		box.Close()
		return nil, fmt.Errorf("transform: the trial run failed: %s", se.Msg)
	default:
		box.Close()
		return nil, fmt.Errorf("transform: %w", err)
	}
	return &transform{box: box}, nil
}

// transformed is what a transform made of a delivery.
type transformed struct {
	body    []byte
	headers http.Header
	cancel  bool
}

var errTransform = errors.New("transform")

// run applies the transform to body (the delivery's JSON) of an event of
// type typ. An error wrapping errTransform is the script's doing
// (permanent); any other (no worker could start, ctx ended) is not.
func (t *transform) run(ctx context.Context, typ string, body json.RawMessage) (transformed, error) {
	res, err := t.box.Run(ctx, typ, body)
	var se *jsbox.Error
	if errors.As(err, &se) {
		return transformed{}, fmt.Errorf("%w: %s", errTransform, se.Msg)
	}
	if err != nil {
		return transformed{}, err
	}
	if res.Cancel {
		return transformed{cancel: true}, nil
	}
	tr := transformed{body: res.Payload, headers: http.Header{}}
	for k, s := range res.Headers {
		if !validHeader(k, s) {
			return transformed{}, fmt.Errorf("%w: header %q must be a valid name with a string value", errTransform, k)
		}
		for _, r := range reservedHeaders {
			if strings.EqualFold(k, r) {
				return transformed{}, fmt.Errorf("%w: header %q is set by gatehouse", errTransform, k)
			}
		}
		tr.headers.Set(k, s)
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
