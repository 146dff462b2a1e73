// Package schemas is gatehouse's shared vocabulary: topic names, Kafka record
// headers and message shapes that the relay writes and consumers and data
// teams read. It is a public contract; change it only compatibly.
package schemas

import "strconv"

// Record headers follow the CloudEvents Kafka protocol binding (binary mode):
// the record value is the provider's verified envelope as JSON and the event
// attributes travel as ce_* headers.
const (
	HeaderID          = "ce_id"          // the provider's event id (dedupe key together with ce_source)
	HeaderSource      = "ce_source"      // "/webhooks/<provider>"
	HeaderType        = "ce_type"        // the provider's event type, e.g. payment.succeeded
	HeaderTime        = "ce_time"        // event creation time, RFC 3339, when the provider gave one
	HeaderSpecVersion = "ce_specversion" // "1.0"
	HeaderContentType = "content-type"   // "application/json"
	HeaderOutboxID    = "gatehouse_outbox_id"
	HeaderProvider    = "gatehouse_provider"
	// HeaderReceivedAt is when gatehouse recorded the event (the inbox row's
	// received_at, RFC 3339 with microseconds): the inbox is partitioned by
	// it, so a reader that looks the event up by (provider, event id) and
	// this time reads one partition. Absent on records of a replay or of
	// another relay (Debezium), and on records published before it existed.
	HeaderReceivedAt = "gatehouse_received_at"
	// HeaderTraceparent is the W3C Trace Context of the span that published
	// the record (tracing on): the relay's publish span, or a consumer's
	// forward span on retry and dead-letter topics. HeaderCETraceparent
	// carries the same value as the CloudEvents distributed-tracing
	// extension. Both are absent when the event was recorded with tracing off.
	HeaderTraceparent   = "traceparent"
	HeaderCETraceparent = "ce_traceparent"
	// HeaderVia is how gatehouse obtained the event, a CloudEvents
	// extension attribute (gatehousevia: lowercase letters and digits, as
	// the specification requires of extension names): ViaWebhook, a
	// delivery the receiver verified, or ViaReconcile, read from the
	// provider's event list by reconciliation (authenticated by the API
	// call, not a signature). Absent on records of another relay and on
	// records published before it existed: read absent as webhook.
	HeaderVia = "ce_gatehousevia"
)

// Values of HeaderVia.
const (
	ViaWebhook   = "webhook"
	ViaReconcile = "reconcile"
)

// Retry and dead-letter headers written by consumers when they forward a record.
const (
	HeaderAttempt         = "gatehouse_attempt" // 1-based processing attempt of the forwarded record
	HeaderOriginTopic     = "gatehouse_original_topic"
	HeaderOriginPartition = "gatehouse_original_partition"
	HeaderOriginOffset    = "gatehouse_original_offset"
	HeaderOriginTimestamp = "gatehouse_original_timestamp" // RFC 3339 nano
	HeaderDueAt           = "gatehouse_due_at"             // RFC 3339 nano: not to be processed before
	HeaderErrorClass      = "gatehouse_error_class"        // transient or permanent
	HeaderErrorMessage    = "gatehouse_error_message"      // truncated to 512 bytes
)

// SpecVersion is the CloudEvents version of the ce_* headers.
const SpecVersion = "1.0"

// DefaultTopic is the topic of a provider when its config names none.
func DefaultTopic(provider string) string { return "gatehouse.webhooks." + provider }

// RetryTopic is the n-th (1-based) retry topic of a topic.
func RetryTopic(topic string, n int) string { return topic + ".retry." + strconv.Itoa(n) }

// DeadLetterTopic is the dead-letter topic of a topic.
func DeadLetterTopic(topic string) string { return topic + ".dlq" }

// Source is the ce_source of a provider's events.
func Source(provider string) string { return sourcePrefix + provider }
