package settings

import (
	"regexp"
	"time"
)

// Relay modes (relay.mode).
const (
	// RelayReplication reads the outbox through logical replication.
	RelayReplication = "replication"
	// RelayPoll reads the outbox table.
	RelayPoll = "poll"
	// RelayExternal says another CDC (Debezium's Outbox Event Router)
	// reads the outbox: `gatehouse relay` refuses to run.
	RelayExternal = "external"
)

// Identifier is what a slot or publication name may be (a PostgreSQL
// unquoted identifier, lower case).
var Identifier = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// Relay configures the outbox relay.
type Relay struct {
	// Mode is "replication" (logical replication, default) or "poll";
	// `gatehouse relay --mode` overrides.
	// "external" says the outbox is read by another CDC (Debezium's Outbox
	// Event Router): `gatehouse relay` refuses to run, and the outbox's
	// partitions are dropped by age alone (storage.outbox_retention).
	Mode string `yaml:"mode"`
	// Slot and Publication name the replication slot and publication.
	// Defaults gatehouse_outbox and gatehouse_outbox. The slot name also
	// names the lock that keeps one relay active at a time (both modes).
	Slot        string `yaml:"slot"`
	Publication string `yaml:"publication"`
	// RepublishAfter is the age after which the dispatcher re-publishes an
	// unsent outbox row. Default 30s.
	RepublishAfter time.Duration `yaml:"republish_after"`
	// StatusInterval is how often the streamer reports its confirmed LSN to
	// PostgreSQL and asks for a keepalive. Default 1s.
	StatusInterval time.Duration `yaml:"status_interval"`
	// HeartbeatInterval is how often the streamer writes a logical decoding
	// message so the slot advances on a quiet database. Default 10s.
	HeartbeatInterval time.Duration `yaml:"heartbeat_interval"`
	// PollInterval is how long poll mode and the dispatcher sleep when they
	// found nothing to do. Default 100ms (poll mode), the dispatcher checks
	// every RepublishAfter/4.
	PollInterval time.Duration `yaml:"poll_interval"`
	// BatchSize is how many rows poll mode and the dispatcher take per
	// transaction. Default 1000.
	BatchSize int `yaml:"batch_size"`
	// OnPublished and RetainPublished were removed with the baseline migration:
	// the outbox is an append-only log whose partitions are dropped after
	// storage.outbox_retention. Setting either is an error that says so.
	OnPublished     string        `yaml:"on_published"`
	RetainPublished time.Duration `yaml:"retain_published"`
	// MetricsInterval is how often queue age and slot lag are measured.
	// Default 5s.
	MetricsInterval time.Duration `yaml:"metrics_interval"`
}

// ApplyDefaults fills the zero settings with their defaults.
func (r *Relay) ApplyDefaults() {
	setDefault(&r.Mode, RelayReplication)
	setDefault(&r.Slot, "gatehouse_outbox")
	setDefault(&r.Publication, "gatehouse_outbox")
	setDefault(&r.RepublishAfter, 30*time.Second)
	setDefault(&r.StatusInterval, time.Second)
	setDefault(&r.HeartbeatInterval, 10*time.Second)
	setDefault(&r.PollInterval, 100*time.Millisecond)
	setDefault(&r.BatchSize, 1000)
	setDefault(&r.MetricsInterval, 5*time.Second)
}

// Validate returns the first setting that is out of range, naming its key.
func (r *Relay) Validate() error {
	if r.Mode != RelayReplication && r.Mode != RelayPoll && r.Mode != RelayExternal {
		return errorf("relay.mode: %q is not replication, poll or external", r.Mode)
	}
	if !Identifier.MatchString(r.Slot) {
		return errorf("relay.slot: %q must match %s", r.Slot, Identifier)
	}
	if !Identifier.MatchString(r.Publication) {
		return errorf("relay.publication: %q must match %s", r.Publication, Identifier)
	}
	if r.RepublishAfter < 0 || r.StatusInterval < 0 || r.HeartbeatInterval < 0 || r.PollInterval < 0 || r.MetricsInterval < 0 {
		return errorf("relay: intervals must be positive")
	}
	if r.OnPublished != "" || r.RetainPublished != 0 {
		return errorf("relay.on_published and relay.retain_published were removed: the outbox is an append-only log " +
			"whose partitions are dropped after storage.outbox_retention (docs/RELAY.md); delete these keys")
	}
	if r.BatchSize < 1 {
		return errorf("relay.batch_size: must be at least 1")
	}
	return nil
}
