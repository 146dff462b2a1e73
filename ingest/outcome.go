package ingest

// DeliveryOutcome is what became of one delivery: the outcome label of
// gatehouse_webhook_deliveries_total, the outcome of the "webhook
// delivery" log line and the span's gatehouse.outcome.
type DeliveryOutcome string

// The outcomes of a delivery.
const (
	OutcomeAccepted          DeliveryOutcome = "accepted"           // stored now (a batch: one event at least)
	OutcomeDuplicate         DeliveryOutcome = "duplicate"          // every event already stored
	OutcomeChallenge         DeliveryOutcome = "challenge"          // a provider's signed handshake, answered
	OutcomeRejectedSignature DeliveryOutcome = "rejected_signature" // verification failed, or a replayed token
	OutcomeBadRequest        DeliveryOutcome = "bad_request"        // unreadable, unparsable or unstorable
	OutcomeTooLarge          DeliveryOutcome = "too_large"          // the body past max_body_bytes (413)
	OutcomeSlowBody          DeliveryOutcome = "slow_body"          // the body slower than min_body_rate (408)
	OutcomeRefused           DeliveryOutcome = "refused"            // admission or the unverified-bytes budget (503/429)
	OutcomeUnavailable       DeliveryOutcome = "unavailable"        // the write failed or timed out (503)
)
