package auth

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// opRevokeFunc revokes one token at the OP (RFC 7009); hint is
// "refresh_token" or "access_token".
type opRevokeFunc func(ctx context.Context, token, hint string) error

// drainOPRevocations takes up to limit revoked families whose tokens were not
// yet revoked at the OP, revokes their refresh and access tokens there with
// revoke (nil: the OP has no revocation endpoint), then deletes the stored
// ciphertexts. Families are claimed with SKIP LOCKED so several processes can
// drain concurrently. A failed OP call leaves the family for the next round.
func (s *Store) drainOPRevocations(ctx context.Context, limit int, revoke opRevokeFunc) (int, error) {
	done := 0
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT id FROM auth_refresh_families
			WHERE revoked_at IS NOT NULL AND op_revoked_at IS NULL
			ORDER BY revoked_at LIMIT $1 FOR UPDATE SKIP LOCKED`, limit)
		if err != nil {
			return err
		}
		fams, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
		if err != nil {
			return err
		}
		for _, fid := range fams {
			if err := s.revokeFamilyAtOP(ctx, tx, fid, revoke); err != nil {
				s.log.Warn("token revocation at the identity provider failed; will retry", "family", fid.String(), "err", err)
				continue
			}
			done++
		}
		return nil
	})
	if err != nil {
		return done, fmt.Errorf("drain OP revocations: %w", err)
	}
	return done, nil
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
			return err
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
			return err
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

// cleanup deletes expired login transactions and logout token ids, and the
// rows of sessions that ended more than a day ago (their tokens are revoked
// first by the OP revocation loop; here only expired ones are removed).
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
	if err != nil {
		return fmt.Errorf("cleanup: %w", err)
	}
	return nil
}
