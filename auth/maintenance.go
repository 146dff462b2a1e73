package auth

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// opRevokeFunc revokes one token at the OP (RFC 7009); hint is
// "refresh_token" or "access_token".
type opRevokeFunc func(ctx context.Context, token, hint string) error

// opDrain is what one round of drainOPRevocations did.
type opDrain struct {
	done     int // families revoked at the OP (or with nothing to revoke)
	deferred int // failed, retried after a back-off
	gaveUp   int // undecryptable: marked done without revocation
}

// Back-off of the OP revocation queue: a family whose revocation failed is
// tried again after opRevokeBackoff doubling per attempt, at most
// opRevokeMaxBackoff; one whose tokens cannot be decrypted (its key was
// removed from the configuration) is given up after
// opRevokeUndecryptableTries attempts (about 1.5 min: enough for a
// restart that puts the key back).
const (
	opRevokeBackoff            = 30 * time.Second
	opRevokeMaxBackoff         = time.Hour
	opRevokeUndecryptableTries = 3
)

// errUndecryptable marks a family whose stored tokens cannot be opened.
var errUndecryptable = errors.New("stored tokens cannot be decrypted")

// drainOPRevocations takes up to limit revoked families whose tokens were
// not yet revoked at the OP and are due (never tried, or past their
// back-off), oldest due first, revokes their refresh and access tokens
// there with revoke (nil: the OP has no revocation endpoint), then deletes
// the stored ciphertexts. Families are claimed with SKIP LOCKED so several
// processes can drain concurrently. A failed family is put back with a
// back-off (so failing families cannot hold the head of the queue), and
// an undecryptable one is given up after a few tries.
func (s *Store) drainOPRevocations(ctx context.Context, limit int, revoke opRevokeFunc) (opDrain, error) {
	var d opDrain
	now := s.now()
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		d = opDrain{}
		rows, err := tx.Query(ctx, `SELECT id, op_revoke_attempts FROM auth_refresh_families
			WHERE revoked_at IS NOT NULL AND op_revoked_at IS NULL AND coalesce(op_revoke_next_at, revoked_at) <= $2
			ORDER BY coalesce(op_revoke_next_at, revoked_at) LIMIT $1 FOR UPDATE SKIP LOCKED`, limit, now)
		if err != nil {
			return err
		}
		type fam struct {
			id       uuid.UUID
			attempts int
		}
		fams, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (fam, error) {
			var f fam
			return f, r.Scan(&f.id, &f.attempts)
		})
		if err != nil {
			return err
		}
		for _, f := range fams {
			sp, err := tx.Begin(ctx) // a savepoint: a failed family leaves nothing behind
			if err != nil {
				return err
			}
			ferr := s.revokeFamilyAtOP(ctx, sp, f.id, revoke)
			if ferr == nil {
				if err := sp.Commit(ctx); err != nil {
					return err
				}
				d.done++
				continue
			}
			if err := sp.Rollback(ctx); err != nil {
				return err
			}
			if err := s.deferOPRevocation(ctx, tx, f.id, f.attempts+1, now, ferr, &d); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return d, fmt.Errorf("drain OP revocations: %w", err)
	}
	return d, nil
}

// deferOPRevocation records a failed attempt of family fid: a back-off, or
// for an undecryptable family past its tries, the end (tokens deleted,
// the reason kept in op_revoke_error).
func (s *Store) deferOPRevocation(ctx context.Context, tx pgx.Tx, fid uuid.UUID, attempts int, now time.Time, cause error, d *opDrain) error {
	if errors.Is(cause, errUndecryptable) && attempts >= opRevokeUndecryptableTries {
		s.log.Error("token revocation at the identity provider given up: the stored tokens cannot be decrypted (was an encryption key removed?)",
			"family", fid.String(), "attempts", attempts, "err", cause)
		if _, err := tx.Exec(ctx, `UPDATE auth_refresh_families SET op_revoked_at = $2, op_revoke_attempts = $3, op_revoke_error = $4
			WHERE id = $1`, fid, now, attempts, "given up: "+cause.Error()); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM auth_tokens WHERE family_id = $1`, fid); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE auth_refresh_tokens SET key_id = NULL, ciphertext = NULL WHERE family_id = $1`, fid)
		d.gaveUp++
		return err
	}
	wait := opRevokeMaxBackoff
	if attempts < 8 {
		wait = min(opRevokeBackoff<<(attempts-1), opRevokeMaxBackoff)
	}
	s.log.Warn("token revocation at the identity provider failed; will retry", "family", fid.String(),
		"attempts", attempts, "retry_in", wait.String(), "err", cause)
	d.deferred++
	_, err := tx.Exec(ctx, `UPDATE auth_refresh_families SET op_revoke_attempts = $2, op_revoke_next_at = $3, op_revoke_error = $4
		WHERE id = $1`, fid, attempts, now.Add(wait), cause.Error())
	return err
}

func (s *Store) revokeFamilyAtOP(ctx context.Context, tx pgx.Tx, fid uuid.UUID, revoke opRevokeFunc) error {
	type item struct{ token, hint string }
	var items []item
	seen := map[string]bool{}
	add := func(tok, hint string) {
		if tok != "" && !seen[tok] {
			seen[tok] = true
			items = append(items, item{tok, hint})
		}
	}
	rows, err := tx.Query(ctx, `SELECT session_id, key_id, ciphertext FROM auth_tokens WHERE family_id = $1`, fid)
	if err != nil {
		return err
	}
	type tokRow struct {
		sid   uuid.UUID
		keyID string
		ct    []byte
	}
	trs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (tokRow, error) {
		var t tokRow
		return t, r.Scan(&t.sid, &t.keyID, &t.ct)
	})
	if err != nil {
		return err
	}
	for _, t := range trs {
		var ts tokenSet
		if err := s.openJSON(t.keyID, t.ct, tokensAD(t.sid.String()), &ts); err != nil {
			return fmt.Errorf("%w: %w", errUndecryptable, err)
		}
		add(ts.RefreshToken, "refresh_token")
		add(ts.AccessToken, "access_token")
	}
	rows, err = tx.Query(ctx, `SELECT key_id, ciphertext FROM auth_refresh_tokens
		WHERE family_id = $1 AND ciphertext IS NOT NULL`, fid)
	if err != nil {
		return err
	}
	type ledRow struct {
		keyID string
		ct    []byte
	}
	lrs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (ledRow, error) {
		var l ledRow
		return l, r.Scan(&l.keyID, &l.ct)
	})
	if err != nil {
		return err
	}
	for _, l := range lrs {
		rt, err := s.keys.Open(l.keyID, l.ct, refreshAD(fid.String()))
		if err != nil {
			return fmt.Errorf("%w: %w", errUndecryptable, err)
		}
		add(string(rt), "refresh_token")
	}
	if revoke != nil {
		// Refresh tokens first: revoking one also ends its access tokens at most OPs.
		for _, it := range items {
			if it.hint == "refresh_token" {
				if err := revoke(ctx, it.token, it.hint); err != nil {
					return err
				}
			}
		}
		for _, it := range items {
			if it.hint == "access_token" {
				if err := revoke(ctx, it.token, it.hint); err != nil {
					return err
				}
			}
		}
	}
	if _, err := tx.Exec(ctx, `DELETE FROM auth_tokens WHERE family_id = $1`, fid); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `UPDATE auth_refresh_tokens SET key_id = NULL, ciphertext = NULL WHERE family_id = $1`, fid); err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `UPDATE auth_refresh_families SET op_revoked_at = $2 WHERE id = $1`, fid, s.now())
	return err
}

// Rekey re-encrypts every stored token and pending login secret that is not
// under the primary key, so an old key can then be removed from the
// configuration. It returns how many ciphertexts were rewritten.
func (s *Store) Rekey(ctx context.Context) (int, error) {
	n := 0
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		primary := s.keys.PrimaryID()
		type row struct {
			id    uuid.UUID
			keyID string
			ct    []byte
		}
		scan := func(r pgx.CollectableRow) (row, error) {
			var x row
			return x, r.Scan(&x.id, &x.keyID, &x.ct)
		}
		rows, _ := tx.Query(ctx, `SELECT session_id, key_id, ciphertext FROM auth_tokens WHERE key_id <> $1 FOR UPDATE`, primary)
		toks, err := pgx.CollectRows(rows, scan)
		if err != nil {
			return err
		}
		for _, t := range toks {
			pt, err := s.keys.Open(t.keyID, t.ct, tokensAD(t.id.String()))
			if err != nil {
				return err
			}
			kid, ct, err := s.keys.Seal(pt, tokensAD(t.id.String()))
			if err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `UPDATE auth_tokens SET key_id = $2, ciphertext = $3 WHERE session_id = $1`, t.id, kid, ct); err != nil {
				return err
			}
			n++
		}
		// Several ledger rows may share a family; token_hash identifies the row.
		type lrow struct {
			row
			h []byte
		}
		rows, _ = tx.Query(ctx, `SELECT token_hash, family_id, key_id, ciphertext FROM auth_refresh_tokens
			WHERE ciphertext IS NOT NULL AND key_id <> $1 FOR UPDATE`, primary)
		led, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (lrow, error) {
			var x lrow
			return x, r.Scan(&x.h, &x.id, &x.keyID, &x.ct)
		})
		if err != nil {
			return err
		}
		for _, l := range led {
			pt, err := s.keys.Open(l.keyID, l.ct, refreshAD(l.id.String()))
			if err != nil {
				return err
			}
			kid, ct, err := s.keys.Seal(pt, refreshAD(l.id.String()))
			if err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `UPDATE auth_refresh_tokens SET key_id = $2, ciphertext = $3 WHERE token_hash = $1`, l.h, kid, ct); err != nil {
				return err
			}
			n++
		}
		// Pending logins live minutes; they are simply dropped if not under the primary key.
		tag, err := tx.Exec(ctx, `DELETE FROM auth_login_tx WHERE key_id <> $1`, primary)
		if err != nil {
			return err
		}
		n += int(tag.RowsAffected())
		return nil
	})
	if err != nil {
		return n, fmt.Errorf("rekey: %w", err)
	}
	return n, nil
}

// cleanup deletes expired login transactions and logout token ids, revokes
// expired sessions (so the OP revocation loop drops their tokens), and
// deletes sessions that ended more than auth.session_retention ago with
// their refresh-token families (purge.go).
func (s *Store) cleanup(ctx context.Context) error {
	now := s.now()
	_, err := s.pool.Exec(ctx, `DELETE FROM auth_login_tx WHERE expires_at < $1`, now)
	if err == nil {
		_, err = s.pool.Exec(ctx, `DELETE FROM auth_logout_jti WHERE expires_at < $1`, now)
	}
	if err == nil {
		// Expired (not revoked) sessions: revoke them so the loop drops their tokens.
		_, err = s.revoke(ctx, `(absolute_expires_at < $1 OR last_seen_at < $2)`, "expired", now, now.Add(-s.idle))
	}
	if err == nil {
		_, err = s.purgeEnded(ctx, now.Add(-s.retain))
	}
	if err != nil {
		return fmt.Errorf("cleanup: %w", err)
	}
	return nil
}
