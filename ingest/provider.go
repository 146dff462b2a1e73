package ingest

import (
	"time"

	"github.com/gatehouse/gatehouse/ingest/signature"
	"github.com/gatehouse/gatehouse/schemas/providers"
)

// Provider is one webhook endpoint (providers.<name> of the
// configuration) as the receiver, replay and erasure read it; package
// wiring builds it from the configuration, where its defaults live.
type Provider struct {
	// Kind is the catalogue entry of the provider's scheme, with the
	// endpoint's own event_id, event_type and created_at where it sets them.
	Kind providers.Kind
	// Signature is the verifier's configuration: scheme, replay window,
	// headers, hmac definition, public URL and the resolved secrets.
	Signature signature.Config
	// VerifyToken answers Meta's GET handshake (resolved; nil: none).
	VerifyToken []byte
	// MaxBodyBytes bounds the request body.
	MaxBodyBytes int64
	// MaxInFlight and ReservedInFlight are the provider's share of
	// Config.MaxInFlight; OverloadStatus (503 or 429) answers a refusal.
	MaxInFlight, ReservedInFlight, OverloadStatus int
	// ReplayGuardTTL is how long the replay guard remembers a delivery of
	// a provider whose event id is not signed (0: guardOf's default).
	ReplayGuardTTL time.Duration
	// AggregateIDPath are the dotted paths of the Kafka key; Topic the
	// provider's Kafka topic.
	AggregateIDPath []string
	Topic           string
	// SearchIndexed keeps a GIN index of the provider's payloads on every
	// inbox partition (ingest/upkeep's search indexes).
	SearchIndexed bool
}

// secret returns the value of the provider's secret id.
func (p *Provider) secret(id string) []byte {
	for _, s := range p.Signature.Secrets {
		if s.ID == id {
			return s.Value
		}
	}
	return nil
}
