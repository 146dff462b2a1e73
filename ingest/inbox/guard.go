package inbox

import (
	"errors"
	"time"
)

// The replay guard covers what the inbox's (provider, event id) key cannot
// when a provider's event id is not signed (providers.Kind.Guard): a
// captured GitHub delivery sent again with another X-GitHub-Delivery
// verifies, and would be a new row. The guard records, for a bounded
// lifetime, the digest of what was signed with the event id it first came
// with:
//
//   - GuardContent: a later delivery of the same signed content under
//     another id is a duplicate of the first (answered as a duplicate,
//     nothing written);
//   - GuardToken (Mailgun, whose signature covers only timestamp and
//     token): a token seen before with another event id is refused (400,
//     reason replayed): the event data beside it is not the signer's.
//
// The same key with the same event id passes (a provider's retry). The
// guard's record is written by the Writer in the statement that writes the
// event (insertSQL), so one commit holds both: a delivery is answered as a
// duplicate only of an event that is durably stored, and the guard costs
// no round trip of its own.

// GuardKey is the replay guard's record of a Record (Record.Guard).
type GuardKey struct {
	// Key is the digest of what was signed (the edge's guardKey); nil: no guard.
	Key []byte
	// TTL is how long the record counts, from the database's clock.
	TTL time.Duration
	// Token: a reuse under another id is refused (GuardToken), not a
	// duplicate (GuardContent).
	Token bool
}

// DefaultReplayGuardTTL is the guard's lifetime for a scheme that signs no
// timestamp (GitHub, Shopify, Bitbucket, Twilio): their signatures never
// expire, so the guard cannot be complete; 72 h covers the providers'
// redelivery windows (GitHub offers redelivery for 3 days, Shopify retries
// for 48 h). A scheme with a signed timestamp keeps it twice its window.
const DefaultReplayGuardTTL = 72 * time.Hour

var errReplayed = errors.New("signature already used for another event")
