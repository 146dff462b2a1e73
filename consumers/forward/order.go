package forward

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
