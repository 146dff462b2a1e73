// Package forward delivers the consumers' events to the teams' own
// services: Standard Webhooks signing, destinations shared by the entries
// naming them (one circuit breaker, concurrency bound and rate limit
// each), when: filters and the JavaScript transform of an entry.
package forward

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/tidwall/gjson"

	"github.com/gatehouse/gatehouse/consumers/event"
	"github.com/gatehouse/gatehouse/internal/redact"
	"github.com/gatehouse/gatehouse/internal/text"
	"github.com/gatehouse/gatehouse/schemas"
	"github.com/gatehouse/gatehouse/schemas/providers"
)

// Config configures a Forwarder (config.Forward says what each
// setting means).
type Config struct {
	Provider string   // labels metrics; part of webhook-id
	URL      string   // required: the destination
	Secret   string   // required: whsec_<base64>, the Standard Webhooks secret
	Types    []string // event type patterns; default ["*"]
	// When filters the events further by their envelope (schemas.Conditions,
	// the fetch rules' language); nil: every event of Types.
	When    schemas.Conditions
	Include bool // send the fetched object too
	// Transform is JavaScript shaping each delivery (forward_transform.go);
	// "": none. TransformTimeout bounds one run (default 1s).
	Transform        string
	TransformTimeout time.Duration
	// NoErasureNotices opts the destination out of erasure notices
	// (DeliverNotice); false: the destination receives them.
	NoErasureNotices bool
	// Timeout per delivery (default 10s); Concurrency (default 64),
	// RateLimit (0: none) and RateBurst as throttle.Config's.
	Timeout     time.Duration
	Concurrency int
	RateLimit   float64
	RateBurst   int
	// BreakerFailures (default 5) consecutive failures open the circuit;
	// while open one probe per BreakerProbe (default 5s) is sent.
	BreakerFailures int
	BreakerProbe    time.Duration
	// PerObject delivers the events of one Kafka key in topic order
	// (config.Forward's order: per_object): the consumers park a key's
	// later events behind a failed one. OnDead ("skip", the default, or
	// "hold") and the bounds MaxParkedKeys (default 10000) and
	// MaxParkedEvents (default 100000) are the parking's.
	PerObject       bool
	OnDead          string
	MaxParkedKeys   int
	MaxParkedEvents int
	// Shared, when set, holds the destinations of every forwarder built
	// with it: forwarders whose URLs have one DestinationKey share one
	// circuit breaker, concurrency bound, rate limit and connection pool
	// (and must agree on Timeout, Concurrency, RateLimit, RateBurst and the
	// breaker settings). nil: the forwarder's destination is its own.
	Shared    *Destinations
	Transport http.RoundTripper
	Metrics   *Metrics
	Now       func() time.Time
}

// Forwarder delivers events to one destination, signed with Standard
// Webhooks: headers webhook-id ("<provider>:<event id>", the same on every
// retry, so the team deduplicates by it), webhook-timestamp and
// webhook-signature; body {"type", "timestamp", "data": {"provider",
// "event_id", "type", "created_at", "attempt", "event": the verified
// envelope, "object": the fetched object when Include}}.
//
// A 2xx answer delivers. 5xx, 408, 429, timeouts and network errors are
// transient (the retry ladder, then the dead-letter topic) and count
// towards the destination's circuit breaker (shared by every forwarder of
// the destination: Config.Shared); while the circuit is open
// deliveries wait instead of failing. Any other answer, a redirect included (never
// followed), is permanent: the event is dead-lettered with the status.
type Forwarder struct {
	cfg      Config
	tf       *transform // nil: none
	redacted string     // the destination key (redact.DestinationKey): no user info, query or path, for errors
	wh       *standardwebhooks.Webhook
	d        *destination // shared with the other forwarders of its key
	m        forwardMetrics
}

// NewForwarder returns the forwarder of cfg. It fails on a URL that is not
// absolute, a secret the Standard Webhooks library refuses, or limits that
// differ from those of a shared destination's earlier forwarder.
func NewForwarder(cfg Config) (*Forwarder, error) {
	key, err := redact.DestinationKey(cfg.URL)
	if err != nil {
		return nil, err
	}
	wh, err := standardwebhooks.NewWebhook(cfg.Secret)
	if err != nil {
		return nil, fmt.Errorf("forward secret: %w", err)
	}
	if len(cfg.Types) == 0 {
		cfg.Types = []string{"*"}
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 64
	}
	if cfg.BreakerFailures <= 0 {
		cfg.BreakerFailures = 5
	}
	if cfg.BreakerProbe <= 0 {
		cfg.BreakerProbe = 5 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	cfg.orderDefaults()
	l := destLimits{Timeout: cfg.Timeout, Concurrency: cfg.Concurrency, RateLimit: cfg.RateLimit, RateBurst: cfg.RateBurst,
		BreakerFailures: cfg.BreakerFailures, BreakerProbe: cfg.BreakerProbe}
	var d *destination
	if cfg.Shared != nil {
		if d, err = cfg.Shared.get(key, l, cfg.Transport, cfg.Now); err != nil {
			return nil, err
		}
	} else {
		d = newDestination(key, l, cfg.Transport, cfg.Now, cfg.Metrics)
	}
	var tf *transform
	if cfg.Transform != "" {
		if tf, err = compileTransform(cfg.Transform, cfg.TransformTimeout); err != nil {
			return nil, err
		}
	}
	return &Forwarder{cfg: cfg, tf: tf, redacted: key, wh: wh, d: d, m: cfg.Metrics.forForward(cfg.Provider, key)}, nil
}

// Close ends the worker processes of the forwarder's transform, if any.
func (f *Forwarder) Close() {
	if f.tf != nil {
		f.tf.box.Close()
	}
}

// Destination is the forwarder's destination key (redact.DestinationKey).
func (f *Forwarder) Destination() string { return f.d.key }

// Matches reports whether the forwarder takes events of type typ.
func (f *Forwarder) Matches(typ string) bool {
	return slices.ContainsFunc(f.cfg.Types, func(p string) bool { return providers.MatchType(p, typ) })
}

// Accepts reports whether the forwarder takes ev: its type (Matches) and
// its envelope (When).
func (f *Forwarder) Accepts(ev *event.Event) bool {
	return f.Matches(ev.Type) && (len(f.cfg.When) == 0 || f.cfg.When.Holds(gjson.ParseBytes(ev.Envelope)))
}

// ErasureNotices reports whether the destination receives erasure notices
// (Config.NoErasureNotices unset).
func (f *Forwarder) ErasureNotices() bool { return !f.cfg.NoErasureNotices }

// DeliverNotice sends an erasure notice (ev of type
// schemas.ErasureNoticeType, its envelope the notice's value) to the
// destination as a delivery like any other: signed with Standard Webhooks,
// webhook-id "<provider>:erasure:<erasure id>:<event id>", body {"type":
// "gatehouse.erasure", "timestamp", "data": {..., "event": the notice}}.
// Neither the entry's types, its when: nor its transform apply: the
// notice is gatehouse's own, and tells the team's service to erase its
// copies of the events it names. The errors are Deliver's.
func (f *Forwarder) DeliverNotice(ctx context.Context, ev *event.Event) error {
	if ev.Type != schemas.ErasureNoticeType {
		return event.Permanentf("forward: %s is not an erasure notice", ev.Type)
	}
	body, err := f.body(ev, nil)
	if err != nil {
		return event.Permanent(err)
	}
	return f.deliver(ctx, ev, body, nil)
}

// Deliver sends ev (and obj when the forwarder includes objects and obj is
// not nil) until the destination answers; see Forwarder for the errors.
func (f *Forwarder) Deliver(ctx context.Context, ev *event.Event, obj json.RawMessage) error {
	_, err := f.DeliverShaped(ctx, ev, obj)
	return err
}

// Transforms reports whether the forwarder's deliveries pass through a
// transform (what it sent is then recorded for the console).
func (f *Forwarder) Transforms() bool { return f.tf != nil }

// DeliverShaped is Deliver that also answers what was sent.
func (f *Forwarder) DeliverShaped(ctx context.Context, ev *event.Event, obj json.RawMessage) (event.Sent, error) {
	return f.shaped(ctx, ev, obj, true)
}

// shaped is DeliverShaped, waiting while the circuit is open or (wait
// false: DeliverOrdered) failing with event.ErrCircuitOpen.
func (f *Forwarder) shaped(ctx context.Context, ev *event.Event, obj json.RawMessage, wait bool) (event.Sent, error) {
	body, err := f.body(ev, obj)
	if err != nil {
		return event.Sent{}, event.Permanent(err)
	}
	var extra http.Header
	if f.tf != nil {
		tr, err := f.tf.run(ctx, ev.Type, body)
		if errors.Is(err, errTransform) {
			f.m.result("transform_failed")
			return event.Sent{}, event.Permanent(&TransformError{Dest: f.redacted, Err: err})
		}
		if err != nil { // the sandbox, not the script: retried
			return event.Sent{}, fmt.Errorf("forward to %s: %w", f.redacted, err)
		}
		if tr.cancel {
			f.m.result("dropped")
			return event.Sent{Transformed: true, Dropped: true}, nil
		}
		body, extra = tr.body, tr.headers
	}
	if ev.Replay {
		extra = replayHeaders(extra, ev)
	}
	return event.Sent{Body: body, Headers: extra, Transformed: f.tf != nil}, f.deliverWaiting(ctx, ev, body, extra, wait)
}

// deliver sends body until the destination answers, through the
// destination's circuit breaker.
func (f *Forwarder) deliver(ctx context.Context, ev *event.Event, body []byte, extra http.Header) error {
	return f.deliverWaiting(ctx, ev, body, extra, true)
}

// deliverWaiting is deliver; without wait, an open circuit (or a failed
// probe) fails with event.ErrCircuitOpen instead of waiting.
func (f *Forwarder) deliverWaiting(ctx context.Context, ev *event.Event, body []byte, extra http.Header, wait bool) error {
	id := ev.Provider + ":" + ev.ID
	admit := f.d.br.admit
	if !wait {
		admit = f.d.br.tryAdmit
	}
	for {
		probe, err := admit(ctx)
		if err != nil {
			return fmt.Errorf("forward to %s: %w", f.redacted, err)
		}
		err = f.send(ctx, id, body, extra)
		if err == nil {
			f.d.br.reached(probe)
			f.m.result("delivered")
			return nil
		}
		if event.Classify(err) == event.ClassPermanent {
			f.d.br.reached(probe) // the destination is up; the request is refused
			f.m.result("refused")
			return err
		}
		if ctx.Err() != nil {
			f.d.br.abandon(probe) // the answer is unknown: another delivery probes
			return err
		}
		f.m.result("failed")
		if open := f.d.br.failed(probe); probe && open {
			if !wait {
				return fmt.Errorf("forward to %s: %w: %w", f.redacted, event.ErrCircuitOpen, err)
			}
			continue // a failed probe: wait for the next, the event does not fail while paused
		}
		return err
	}
}

func (f *Forwarder) body(ev *event.Event, obj json.RawMessage) ([]byte, error) {
	type data struct {
		Provider  string          `json:"provider"`
		EventID   string          `json:"event_id"`
		Type      string          `json:"type"`
		CreatedAt *time.Time      `json:"created_at,omitempty"`
		Attempt   int             `json:"attempt"`
		Event     json.RawMessage `json:"event"`
		Object    json.RawMessage `json:"object,omitempty"`
	}
	d := data{Provider: ev.Provider, EventID: ev.ID, Type: ev.Type, Attempt: ev.Attempt, Event: ev.Envelope}
	ts := f.cfg.Now().UTC()
	if !ev.CreatedAt.IsZero() {
		t := ev.CreatedAt.UTC()
		d.CreatedAt, ts = &t, t
	}
	if f.cfg.Include && obj != nil {
		d.Object = obj
	}
	if !json.Valid(d.Event) {
		return nil, errors.New("forward: the stored envelope is not JSON")
	}
	return json.Marshal(struct {
		Type      string `json:"type"`
		Timestamp string `json:"timestamp"`
		Data      data   `json:"data"`
	}{ev.Type, ts.Format(time.RFC3339Nano), d})
}

func (f *Forwarder) send(ctx context.Context, id string, body []byte, extra http.Header) error {
	release, err := f.d.flow.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("forward to %s: %w", f.redacted, err)
	}
	defer release()
	now := f.cfg.Now()
	sig, err := f.wh.Sign(id, now, body)
	if err != nil {
		return event.Permanentf("forward: sign: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, f.cfg.URL, bytes.NewReader(body))
	if err != nil {
		return event.Permanentf("forward request: %w", err)
	}
	for k, vs := range extra { // a transform's; never the ones set below
		req.Header[k] = vs
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("webhook-id", id)
	req.Header.Set("webhook-timestamp", fmt.Sprint(now.Unix()))
	req.Header.Set("webhook-signature", sig)
	start := time.Now()
	resp, err := f.d.http.Do(req)
	f.m.duration.Observe(time.Since(start).Seconds())
	if err != nil {
		err = f.redactURLError(err)
		if event.IsTimeout(err) {
			return fmt.Errorf("forward to %s: timeout: %w", f.redacted, err)
		}
		return fmt.Errorf("forward to %s: %w", f.redacted, err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 256))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20)) // keep the connection reusable
	if resp.StatusCode/100 == 2 {
		return nil
	}
	fe := &Error{Status: resp.StatusCode, Dest: f.redacted, Body: text.Truncate(string(msg), 256)}
	switch {
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable:
		f.d.flow.Pause(resp.StatusCode, resp.Header)
		return fe
	case resp.StatusCode >= 500 || resp.StatusCode == http.StatusRequestTimeout:
		return fe
	case resp.StatusCode/100 == 3:
		fe.Body = "redirect not followed: forward.url must name the final address"
	}
	return event.Permanent(fe)
}

// redactURLError replaces the URL that the HTTP client's *url.Error names
// (the configured one, user info, path and query included) by the
// destination key.
func (f *Forwarder) redactURLError(err error) error {
	ue, ok := err.(*url.Error) // what http.Client.Do returns
	if !ok {
		return err
	}
	c := *ue
	c.URL = f.redacted
	return &c
}
