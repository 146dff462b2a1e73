package settings

import "time"

// Storage is the storage: block, how long gatehouse keeps what it stores
// (docs/STORAGE.md). The inbox and the dedupe keys are time-partitioned
// tables whose partitions the running processes create ahead and drop whole.
type Storage struct {
	// PartitionInterval is the width of each time partition of the inbox
	// and of the dedupe keys. Default 24h; at least 1m. A change applies to
	// partitions created afterwards.
	PartitionInterval time.Duration `yaml:"partition_interval"`
	// KeyPartitionInterval is the width of each partition of the dedupe
	// keys. A new event id goes into the current one and is probed in the
	// partitions that can hold a live key, the sealed ones only when
	// their key filter may hold it; a narrow current partition keeps the
	// index every new key goes into small. Default 24h (docs/STORAGE.md,
	// docs/BENCHMARKS.md "Storage" for the measurement); at least 1m. A change applies to
	// partitions created afterwards.
	KeyPartitionInterval time.Duration `yaml:"key_partition_interval"`
	// KeyFilterFalsePositives is the false positive rate of the Bloom
	// filter ingest's maintenance builds of each sealed key partition (one
	// that ended more than 10 minutes ago): the receiver probes such a
	// partition for a new event id only when its filter may hold the id,
	// so a new id's cost does not grow with the history kept. A filter
	// takes about 1.8 bytes a key at 0.001 in every receiver's memory
	// (1.2 at 0.01, 0.6 at 0.1), and a new id is probed in about rate ×
	// sealed partitions of them needlessly. Default 0.001; 0 turns the
	// filters off (the existing ones are deleted); below 0.5.
	KeyFilterFalsePositives *float64 `yaml:"key_filter_false_positives"`
	// Ahead is how many partitions exist beyond the current one. Default 3.
	Ahead int `yaml:"ahead"`
	// Retention is how long a stored event (its payload, processing state,
	// effect log and replays) is kept. Default 720h (30 days). A provider's
	// retention overrides it.
	Retention time.Duration `yaml:"retention"`
	// DedupeWindow is how long an event id is remembered, so a redelivery
	// is refused as a duplicate. Default 168h (7 days). A provider's
	// dedupe_window overrides it; either must be at least the provider's
	// documented redelivery window (`gatehouse providers`). An id is kept
	// for the longer of the dedupe window and the retention.
	DedupeWindow time.Duration `yaml:"dedupe_window"`
	// ObjectRetention is how long the consumers keep an object's projection
	// (provider_objects) after its last applied change. Default 0: the
	// provider's key lifetime (the longer of its retention and dedupe
	// window; 30 days with the defaults). At least the dedupe window. A
	// provider's object_retention overrides it.
	ObjectRetention time.Duration `yaml:"object_retention"`
	// AuditRetention is how long erasure audit rows are kept. Default 8760h (365 days).
	AuditRetention time.Duration `yaml:"audit_retention"`
	// CheckInterval is how often the maintenance pass runs. Default 1m.
	CheckInterval time.Duration `yaml:"check_interval"`
	// OutboxRetention is how long the outbox (an append-only log) keeps a
	// published row: a partition is dropped once its range ended longer ago
	// and every relay's cursor has passed all of its rows. Default 24h; at
	// least the outbox partition interval. With Debezium instead of the
	// relay, it must exceed Debezium's longest lag.
	OutboxRetention time.Duration `yaml:"outbox_retention"`
	// OutboxPartitionInterval is the width of the outbox's partitions.
	// Default 1h; at least 1m.
	OutboxPartitionInterval time.Duration `yaml:"outbox_partition_interval"`
}

// DefaultKeyFilterFalsePositives is storage.key_filter_false_positives' default.
const DefaultKeyFilterFalsePositives = 0.001

// KeyFilterRate is storage.key_filter_false_positives, its default when
// unset.
func (s *Storage) KeyFilterRate() float64 {
	if s.KeyFilterFalsePositives == nil {
		return DefaultKeyFilterFalsePositives
	}
	return *s.KeyFilterFalsePositives
}

// ApplyDefaults fills the zero settings with their defaults.
func (s *Storage) ApplyDefaults() {
	if s.PartitionInterval == 0 {
		s.PartitionInterval = 24 * time.Hour
	}
	if s.KeyPartitionInterval == 0 {
		s.KeyPartitionInterval = 24 * time.Hour
	}
	if s.Ahead == 0 {
		s.Ahead = 3
	}
	if s.KeyFilterFalsePositives == nil {
		fp := DefaultKeyFilterFalsePositives
		s.KeyFilterFalsePositives = &fp
	}
	if s.Retention == 0 {
		s.Retention = 30 * 24 * time.Hour
	}
	if s.DedupeWindow == 0 {
		s.DedupeWindow = 7 * 24 * time.Hour
	}
	if s.AuditRetention == 0 {
		s.AuditRetention = 365 * 24 * time.Hour
	}
	if s.CheckInterval == 0 {
		s.CheckInterval = time.Minute
	}
	if s.OutboxRetention == 0 {
		s.OutboxRetention = 24 * time.Hour
	}
	if s.OutboxPartitionInterval == 0 {
		s.OutboxPartitionInterval = time.Hour
	}
}

// Validate returns the first setting that is out of range, naming its key
// (a provider's retention is checked against it by internal/config).
func (s *Storage) Validate() error {
	switch {
	case s.PartitionInterval < time.Minute:
		return errorf("storage.partition_interval: %s is below 1m", s.PartitionInterval)
	case s.KeyPartitionInterval < time.Minute:
		return errorf("storage.key_partition_interval: %s is below 1m", s.KeyPartitionInterval)
	case *s.KeyFilterFalsePositives < 0 || *s.KeyFilterFalsePositives >= 0.5:
		return errorf("storage.key_filter_false_positives: %g; want 0 (off) or a rate below 0.5", *s.KeyFilterFalsePositives)
	case s.Ahead < 1:
		return errorf("storage.ahead: %d; want at least 1", s.Ahead)
	case s.OutboxPartitionInterval < time.Minute:
		return errorf("storage.outbox_partition_interval: %s is below 1m", s.OutboxPartitionInterval)
	case s.OutboxRetention < s.OutboxPartitionInterval:
		return errorf("storage.outbox_retention: %s is shorter than storage.outbox_partition_interval (%s)", s.OutboxRetention, s.OutboxPartitionInterval)
	case s.Retention < s.PartitionInterval:
		return errorf("storage.retention: %s is shorter than storage.partition_interval (%s)", s.Retention, s.PartitionInterval)
	case s.DedupeWindow < s.PartitionInterval:
		return errorf("storage.dedupe_window: %s is shorter than storage.partition_interval (%s)", s.DedupeWindow, s.PartitionInterval)
	case s.ObjectRetention < 0:
		return errorf("storage.object_retention: %s must not be negative", s.ObjectRetention)
	case s.AuditRetention <= 0 || s.CheckInterval <= 0:
		return errorf("storage: audit_retention and check_interval must be positive")
	}
	return nil
}
