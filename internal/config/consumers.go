package config

import "time"

// Consumers configures the Kafka consumer groups.
type Consumers struct {
	// Group is the consumer group id. Default gatehouse.
	Group string `yaml:"group"`
	// RetryDelays is the retry ladder. Default [10s, 1m, 10m].
	RetryDelays []time.Duration `yaml:"retry_delays"`
}

func (c *Consumers) applyDefaults() {
	if c.Group == "" {
		c.Group = "gatehouse"
	}
	if len(c.RetryDelays) == 0 {
		c.RetryDelays = []time.Duration{10 * time.Second, time.Minute, 10 * time.Minute}
	}
}

func (c *Consumers) validate() error {
	for i, d := range c.RetryDelays {
		if d <= 0 {
			return errorf("consumers.retry_delays[%d]: must be positive", i)
		}
	}
	return nil
}

