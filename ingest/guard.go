package ingest

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gatehouse/gatehouse/ingest/signature"
	"github.com/gatehouse/gatehouse/internal/config"
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
// The same key with the same event id passes (a provider's retry, or a
// retry after a failed write): the guard row is written before the inbox
// row and never decides alone that an event is stored.

// Guard is the replay guard's store (the Writer implements it).
type Guard interface {
	// Guard records key for eventID until expires, unless a live record
	// exists, and returns the event id the key is recorded for.
	Guard(ctx context.Context, key []byte, eventID string, now, expires time.Time) (string, error)
}

// DefaultReplayGuardTTL is the guard's lifetime for a scheme that signs no
// timestamp (GitHub, Shopify, Bitbucket, Twilio): their signatures never
// expire, so the guard cannot be complete; 72 h covers the providers'
// redelivery windows (GitHub offers redelivery for 3 days, Shopify retries
// for 48 h). A scheme with a signed timestamp keeps it twice its window.
const DefaultReplayGuardTTL = 72 * time.Hour

var errReplayed = errors.New("signature already used for another event")

// guardKey is the digest the guard records for a verified delivery of ep,
// nil when its kind keeps no guard.
func guardKey(ep *endpoint, query string, body []byte, res signature.Result) []byte {
	h := sha256.New()
	h.Write([]byte(ep.name))
	h.Write([]byte{0})
	switch ep.guard {
	case providers.GuardToken:
		if res.Nonce == "" {
			return nil
		}
		h.Write([]byte("token\x00" + res.Nonce))
	case providers.GuardContent:
		h.Write([]byte("content\x00" + query + "\x00"))
		h.Write(body)
	default:
		return nil
	}
	return h.Sum(nil)
}

// checkGuard applies ep's guard to a verified delivery of eventID:
// (false, nil) to go on, (true, nil) for a duplicate of another id's
// delivery, errReplayed for a token reused.
func (r *Receiver) checkGuard(ctx context.Context, ep *endpoint, key []byte, eventID string) (dup bool, err error) {
	if key == nil {
		return false, nil
	}
	now := r.cfg.Now()
	first, err := r.guard.Guard(ctx, key, eventID, now, now.Add(ep.guardTTL))
	if err != nil || first == eventID {
		return false, err
	}
	if ep.guard == providers.GuardToken {
		return false, errReplayed
	}
	return true, nil
}

// Guard implements Guard on the Writer's pool: an insert that takes the
// key over only from an expired record, then, when a live record was
// there, a read of it (a statement of its own, so that it sees a record
// committed concurrently).
func (w *Writer) Guard(ctx context.Context, key []byte, eventID string, now, expires time.Time) (string, error) {
	var first string
	err := w.pool.QueryRow(ctx, `INSERT INTO ingest_replay_guard AS g (key, event_id, expires_at) VALUES ($1, $2, $3)
		ON CONFLICT (key) DO UPDATE SET event_id = excluded.event_id, expires_at = excluded.expires_at
		WHERE g.expires_at <= $4
		RETURNING event_id`, key, eventID, expires, now).Scan(&first)
	if errors.Is(err, pgx.ErrNoRows) {
		err = w.pool.QueryRow(ctx, `SELECT event_id FROM ingest_replay_guard WHERE key = $1`, key).Scan(&first)
	}
	if err != nil {
		return "", fmt.Errorf("replay guard: %w", err)
	}
	return first, nil
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
func guardOf(p *config.Provider, k providers.Kind) (string, time.Duration) {
	g := k.Guard
	if p.Scheme == "hmac" && p.HMAC != nil {
		for _, f := range k.EventID {
			if f.Header != "" && (!p.HMAC.Uses(providers.PartID) || !strings.EqualFold(f.Header, p.HMAC.IDHeader)) {
				g = providers.GuardContent
			}
		}
	}
	if g == "" {
		return "", 0
	}
	ttl := p.ReplayGuardTTL
	if ttl <= 0 {
		ttl = DefaultReplayGuardTTL
		if d, _ := signature.Describe(k.Scheme, p.HMAC); d.Timestamp != "" {
			ttl = 2 * p.Tolerance
		}
	}
	return g, ttl
}
