package forward

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/gatehouse/gatehouse/consumers/event"
)

// DeliverOrdered is DeliverShaped for a destination ordered per object:
// while the destination's circuit is open it does not wait but fails with
// event.ErrCircuitOpen (wrapped), also when it was the probe and failed,
// so the consumers park the event and the partition moves on.
func (f *Forwarder) DeliverOrdered(ctx context.Context, ev *event.Event, obj json.RawMessage) (event.Sent, error) {
	return f.shaped(ctx, ev, obj, false)
}

// Ordering reports whether the forwarder delivers per object in order
// (Config.PerObject), and its parking policy: on_dead, the bounds on
// parked keys and events. The consumers park (docs/CONSUMERS.md "Ordered
// delivery per object"); the forwarder only carries the settings.
func (f *Forwarder) Ordering() (perObject bool, onDead string, maxKeys, maxEvents int) {
	return f.cfg.PerObject, f.cfg.OnDead, f.cfg.MaxParkedKeys, f.cfg.MaxParkedEvents
}

// orderDefaults applies the parking defaults: on_dead skip, 10000 keys,
// 100000 events.
func (c *Config) orderDefaults() {
	if c.OnDead == "" {
		c.OnDead = "skip"
	}
	if c.MaxParkedKeys <= 0 {
		c.MaxParkedKeys = 10000
	}
	if c.MaxParkedEvents <= 0 {
		c.MaxParkedEvents = 100000
	}
}

// The headers of a replay's delivery to a destination ordered per object
// (docs/CONSUMERS.md "Ordered delivery per object"): a transform may not
// set them.
const (
	// HeaderReplay is "true" on the delivery of a replayed event.
	HeaderReplay = "Gatehouse-Replay"
	// HeaderOriginalReceivedAt is when gatehouse first received the
	// replayed event (RFC 3339, UTC): its original position among its
	// object's events, which a replay is delivered after.
	HeaderOriginalReceivedAt = "Gatehouse-Original-Received-At"
)

// replayHeaders is extra (a transform's headers; nil: none) with the
// replay headers of ev added, in a new header map.
func replayHeaders(extra http.Header, ev *event.Event) http.Header {
	h := extra.Clone()
	if h == nil {
		h = http.Header{}
	}
	h.Set(HeaderReplay, "true")
	if !ev.ReceivedAt.IsZero() {
		h.Set(HeaderOriginalReceivedAt, ev.ReceivedAt.UTC().Format(time.RFC3339Nano))
	}
	return h
}
