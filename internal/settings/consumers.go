package settings

import "time"

// Consumers configures the Kafka consumer groups.
type Consumers struct {
	// Group is the consumer group id. Default gatehouse.
	Group string `yaml:"group"`
	// RetryDelays is the retry ladder: one retry topic <topic>.retry.<n> per
	// entry, each holding records until the delay has passed. Default
	// [10s, 1m, 10m]. After the last retry fails the record goes to <topic>.dlq.
	RetryDelays []time.Duration `yaml:"retry_delays"`
	// Providers limits the consumed providers; empty means every configured
	// provider.
	Providers []string `yaml:"providers"`
	// Concurrency bounds how many retry-topic partitions are processed in
	// parallel (each in offset order). Default 16. Main-topic records are
	// processed as one batch per poll.
	Concurrency int `yaml:"concurrency"`
	// MaxPollRecords bounds the records taken per poll, and so one batch
	// (one claim statement, one apply transaction). Default 500.
	MaxPollRecords int `yaml:"max_poll_records"`
	// APITimeout bounds one call to a provider's API. Default 10s.
	APITimeout time.Duration `yaml:"api_timeout"`
	// DrainTimeout bounds how long a stopping consumer finishes the records
	// it already polled. Default 30s.
	DrainTimeout time.Duration `yaml:"drain_timeout"`
	// SessionTimeout is the consumer group session timeout: how long the
	// partitions of a consumer that died without leaving (SIGKILL, a lost
	// node) wait before the group hands them to another. Default 45s
	// (Kafka's); the broker accepts 6s to 30m (group.min/max.session.timeout.ms).
	SessionTimeout time.Duration `yaml:"session_timeout"`
}

// ApplyDefaults fills the zero settings with their defaults.
func (c *Consumers) ApplyDefaults() {
	setDefault(&c.Group, "gatehouse")
	if len(c.RetryDelays) == 0 {
		c.RetryDelays = []time.Duration{10 * time.Second, time.Minute, 10 * time.Minute}
	}
	setDefault(&c.Concurrency, 16)
	setDefault(&c.MaxPollRecords, 500)
	setDefault(&c.APITimeout, 10*time.Second)
	setDefault(&c.DrainTimeout, 30*time.Second)
	setDefault(&c.SessionTimeout, 45*time.Second)
}

// Validate returns the first setting that is out of range, naming its key.
func (c *Consumers) Validate() error {
	for i, d := range c.RetryDelays {
		if d <= 0 {
			return errorf("consumers.retry_delays[%d]: must be positive", i)
		}
	}
	if c.Concurrency < 1 {
		return errorf("consumers.concurrency: must be at least 1")
	}
	if c.MaxPollRecords < 1 {
		return errorf("consumers.max_poll_records: must be at least 1")
	}
	if c.APITimeout < 0 || c.DrainTimeout < 0 {
		return errorf("consumers.api_timeout and drain_timeout: must be positive")
	}
	if c.SessionTimeout < 6*time.Second || c.SessionTimeout > 30*time.Minute {
		return errorf("consumers.session_timeout: must be between 6s and 30m (the broker's group.min/max.session.timeout.ms)")
	}
	return nil
}
