package forward

import (
	"context"
	"encoding/json"

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
