package ingest

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gatehouse/gatehouse/ingest/signature"
	"github.com/gatehouse/gatehouse/schemas/providers"
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
	// Key is the digest of what was signed (guardKey); nil: no guard.
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

// guardKey is the guard's record for a verified delivery of ep, with no
// Key when its kind keeps no guard. The query string is part of the
// content only where the scheme signs the URL (Twilio, an hmac definition
// using {url}): elsewhere it is not the signer's, and a captured delivery
// resent with ?x=1 is the same content.
func guardKey(ep *endpoint, query string, body []byte, res signature.Result) GuardKey {
	h := sha256.New()
	h.Write([]byte(ep.name))
	h.Write([]byte{0})
	switch ep.guard {
	case providers.GuardToken:
		if res.Nonce == "" {
			return GuardKey{}
		}
		h.Write([]byte("token\x00" + res.Nonce))
	case providers.GuardContent:
		if !ep.signsURL {
			query = ""
		}
		h.Write([]byte("content\x00" + query + "\x00"))
		h.Write(body)
	default:
		return GuardKey{}
	}
	return GuardKey{Key: h.Sum(nil), TTL: ep.guardTTL, Token: ep.guard == providers.GuardToken}
}

// SweepReplayGuard deletes expired replay-guard records until ctx ends,
// every interval, in batches of at most batch rows (oldest first, through
// the expires_at index), at most 20 batches a round, so one round never
// holds a long transaction or scans the table. Errors are logged and the
// next round tries again.
func SweepReplayGuard(ctx context.Context, pool *pgxpool.Pool, interval time.Duration, batch int, log *slog.Logger) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		for range 20 {
			n, err := sweepReplayGuard(ctx, pool, time.Now(), batch)
			if err != nil {
				if ctx.Err() == nil {
					log.Warn("replay guard sweep", "err", err)
				}
				break
			}
			if n < int64(batch) {
				break
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

func sweepReplayGuard(ctx context.Context, pool *pgxpool.Pool, now time.Time, batch int) (int64, error) {
	tag, err := pool.Exec(ctx, `DELETE FROM ingest_replay_guard WHERE key IN (
		SELECT key FROM ingest_replay_guard WHERE expires_at <= $1 ORDER BY expires_at LIMIT $2)`, now, batch)
	if err != nil {
		return 0, fmt.Errorf("delete expired replay guard rows: %w", err)
	}
	return tag.RowsAffected(), nil
}

// guardOf is the guard p keeps and its lifetime: the catalogue's, or for
// scheme hmac a content guard when an event id comes from a header the
// definition does not sign as {id}. The lifetime is p.ReplayGuardTTL, else
// twice the replay window of a scheme with a signed timestamp, else
// DefaultReplayGuardTTL.
func guardOf(p *Provider, k providers.Kind) (string, time.Duration) {
	g := k.Guard
	h := p.Signature.HMAC
	if h != nil { // scheme hmac: only it takes a definition
		if unsignedHeader(k.EventID, h) {
			g = providers.GuardContent
		}
	}
	if g == "" {
		return "", 0
	}
	ttl := p.ReplayGuardTTL
	if ttl <= 0 {
		ttl = DefaultReplayGuardTTL
		if d, _ := signature.Describe(k.Scheme, h); d.Timestamp != "" {
			ttl = 2 * p.Signature.Tolerance
		}
	}
	return g, ttl
}

// unsignedHeader reports whether any of fs, or of the fields they join,
// reads a header that h does not sign as {id}.
func unsignedHeader(fs providers.Fields, h *providers.HMAC) bool {
	for _, f := range fs {
		if f.Header != "" && (!h.Uses(providers.PartID) || !strings.EqualFold(f.Header, h.IDHeader)) {
			return true
		}
		if unsignedHeader(f.Join, h) {
			return true
		}
	}
	return false
}
