package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"golang.org/x/oauth2"
)

// Errors of the token store.
var (
	// ErrRefreshTokenReuse: a refresh token that was already rotated was about
	// to be presented again; the whole family has been revoked.
	ErrRefreshTokenReuse = errors.New("auth: rotated refresh token presented again; token family revoked")
	// ErrSessionEnded: the OP refused the refresh token (invalid_grant or
	// invalid_request); the session and its family have been revoked.
	ErrSessionEnded = errors.New("auth: the identity provider ended the session")
	// ErrNoRefreshToken: the access token expired and no refresh token is held.
	ErrNoRefreshToken = errors.New("auth: access token expired and no refresh token")
	// ErrRefreshOff: the access token expired and auth.refresh is off.
	ErrRefreshOff = errors.New("auth: access token expired and server-side refresh is off (auth.refresh)")
)

// tokenSet is the OP's tokens of one session; it is only ever stored encrypted.
type tokenSet struct {
	AccessToken  string    `json:"access_token"`
	TokenType    string    `json:"token_type,omitempty"`
	RefreshToken string    `json:"refresh_token,omitempty"`
	IDToken      string    `json:"id_token,omitempty"`
	Expiry       time.Time `json:"expiry,omitzero"`
	// Lifetime is the access token's lifetime as issued (expires_in).
	Lifetime time.Duration `json:"lifetime,omitzero"`
}

// lifetime is the access token's lifetime as the OP issued it (0 unknown).
func lifetime(tok *oauth2.Token, now time.Time) time.Duration {
	if tok.Expiry.IsZero() {
		return 0
	}
	return max(tok.Expiry.Sub(now), 0)
}

// refreshMargin is how long before expiry the tokens are refreshed:
// refresh_before, but at most half the token's own lifetime, so a token
// that lives no longer than refresh_before is not refreshed on every use.
func refreshMargin(before, life time.Duration) time.Duration {
	if life > 0 && before > life/2 {
		return life / 2
	}
	return before
}

func tokensAD(sessionID string) []byte { return []byte("auth_tokens:" + sessionID) }
func refreshAD(familyID string) []byte { return []byte("auth_refresh_tokens:" + familyID) }

func (s *Store) sealJSON(v any, ad []byte) (string, []byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", nil, err
	}
	return s.keys.Seal(b, ad)
}

func (s *Store) openJSON(keyID string, ct, ad []byte, v any) error {
	b, err := s.keys.Open(keyID, ct, ad)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// newSession is what a successful login hands to createSession.
type newSession struct {
	User               User
	Email, Name, OPSID string
	Device             string
	Tokens             tokenSet
}

// createSession stores a new session, a new refresh-token family and the
// encrypted tokens in one transaction and returns the cookie value (256
// random bits; only its SHA-256 is stored).
func (s *Store) createSession(ctx context.Context, ns newSession) (string, *Session, error) {
	now := s.now()
	cookie := randomToken(32)
	sid, fid := uuid.New(), uuid.New()
	keyID, ct, err := s.sealJSON(ns.Tokens, tokensAD(sid.String()))
	if err != nil {
		return "", nil, fmt.Errorf("seal tokens: %w", err)
	}
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO auth_refresh_families (id, issuer, subject, created_at) VALUES ($1,$2,$3,$4)`,
			fid, ns.User.Issuer, ns.User.Subject, now); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO auth_sessions (id, token_hash, issuer, subject, email, name, op_sid, device,
				family_id, created_at, last_seen_at, absolute_expires_at)
			VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$10,$11)`,
			sid, hash(cookie), ns.User.Issuer, ns.User.Subject, ns.Email, ns.Name, ns.OPSID, ns.Device, fid, now, now.Add(s.life)); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO auth_tokens (session_id, family_id, key_id, ciphertext, access_expires_at, updated_at)
			VALUES ($1,$2,$3,$4,$5,$6)`, sid, fid, keyID, ct, nullTime(ns.Tokens.Expiry), now); err != nil {
			return err
		}
		return s.recordRefreshToken(ctx, tx, fid.String(), ns.Tokens.RefreshToken, 0)
	})
	if err != nil {
		return "", nil, fmt.Errorf("create session: %w", err)
	}
	sess := &Session{
		ID: sid.String(), User: ns.User, Email: ns.Email, Name: ns.Name, Device: ns.Device,
		CreatedAt: now, LastSeenAt: now, ExpiresAt: earliest(now.Add(s.life), now.Add(s.idle)),
		opSID: ns.OPSID, familyID: fid.String(),
	}
	return cookie, sess, nil
}

// recordRefreshToken adds a refresh token to its family's ledger (hash, and
// the ciphertext while it is current so it can be revoked at the OP).
func (s *Store) recordRefreshToken(ctx context.Context, tx pgx.Tx, familyID, rt string, gen int) error {
	if rt == "" {
		return nil
	}
	keyID, ct, err := s.keys.Seal([]byte(rt), refreshAD(familyID))
	if err != nil {
		return fmt.Errorf("seal refresh token: %w", err)
	}
	_, err = tx.Exec(ctx, `INSERT INTO auth_refresh_tokens (token_hash, family_id, generation, issued_at, key_id, ciphertext)
		VALUES ($1,$2,$3,$4,$5,$6)`, hash(rt), familyID, gen, s.now(), keyID, ct)
	return err
}

func nullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t
}

// refreshFunc performs the refresh_token grant at the OP.
type refreshFunc func(ctx context.Context, refreshToken string) (*oauth2.Token, error)

// freshTokens returns the session's tokens, refreshing them first when the
// access token expires within before (or force is set), in four steps:
// lock the token row, check the refresh token against its family's ledger,
// call the OP, store the rotation. The token row stays locked (SELECT … FOR
// UPDATE) from the first step to the commit, the OP call included, so
// concurrent callers in any process wait and then see the new tokens: one
// refresh token is never presented twice. A refresh token already rotated
// in its family's ledger (a stale copy written back) revokes the family
// (ErrRefreshTokenReuse); an invalid_grant or invalid_request answer ends
// the session (ErrSessionEnded).
func (s *Store) freshTokens(ctx context.Context, sessionID string, before time.Duration, force bool, refresh refreshFunc) (tokenSet, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return tokenSet{}, fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback(context.Background()) //nolint:errcheck // no-op after commit
	cur, err := s.lockTokens(ctx, tx, sessionID)
	if err != nil {
		return tokenSet{}, err
	}
	now := s.now()
	if cur.ts.Lifetime > 0 && before >= cur.ts.Lifetime {
		s.warnMargin.Do(func() {
			s.log.Warn("auth.refresh_before is not shorter than the OP's access token lifetime; refreshing at half the lifetime instead",
				"refresh_before", before, "token_lifetime", cur.ts.Lifetime)
		})
	}
	if !force && (cur.ts.Expiry.IsZero() || cur.ts.Expiry.After(now.Add(refreshMargin(before, cur.ts.Lifetime)))) {
		return cur.ts, tx.Commit(ctx)
	}
	if cur.ts.RefreshToken == "" {
		return tokenSet{}, ErrNoRefreshToken
	}
	if err := s.checkLedger(ctx, tx, cur); err != nil {
		if errors.Is(err, ErrRefreshTokenReuse) {
			_ = tx.Rollback(ctx)
			s.log.Error("refresh token reuse detected; revoking the family", "session", sessionID, "family", cur.familyID)
			return tokenSet{}, s.endFamily(ctx, cur.familyID, "refresh token reuse", err)
		}
		return tokenSet{}, err
	}
	tok, err := refresh(ctx, cur.ts.RefreshToken)
	var re *oauth2.RetrieveError
	if errors.As(err, &re) && (re.ErrorCode == "invalid_grant" || re.ErrorCode == "invalid_request") {
		_ = tx.Rollback(ctx)
		s.log.Warn("refresh refused by the identity provider; ending session",
			"session", sessionID, "op_error", re.ErrorCode, "status", re.Response.StatusCode)
		return tokenSet{}, s.endFamily(ctx, cur.familyID, "refresh refused by identity provider", ErrSessionEnded)
	}
	if err != nil {
		return tokenSet{}, fmt.Errorf("refresh: %w", err)
	}
	next, err := s.storeRefresh(ctx, tx, cur, tok, now)
	if err != nil {
		return tokenSet{}, err
	}
	if err := tx.Commit(ctx); err != nil {
		return tokenSet{}, fmt.Errorf("commit refreshed tokens: %w", err)
	}
	s.log.Info("tokens refreshed", "session", sessionID, "generation", cur.gen+1, "access_expires_at", next.Expiry)
	return next, nil
}

// lockedTokens is a session's token row, locked by lockTokens.
type lockedTokens struct {
	sessionID string
	ts        tokenSet
	gen       int
	familyID  string
	family    uuid.UUID
}

// lockTokens locks and opens the session's token row; ErrNoSession when the
// session or its family is gone or revoked.
func (s *Store) lockTokens(ctx context.Context, tx pgx.Tx, sessionID string) (*lockedTokens, error) {
	var (
		keyID   string
		ct      []byte
		revoked bool
	)
	cur := &lockedTokens{sessionID: sessionID}
	err := tx.QueryRow(ctx, `
		SELECT t.key_id, t.ciphertext, t.generation, t.family_id,
		       s.revoked_at IS NOT NULL OR f.revoked_at IS NOT NULL
		FROM auth_tokens t
		JOIN auth_sessions s ON s.id = t.session_id
		JOIN auth_refresh_families f ON f.id = t.family_id
		WHERE t.session_id = $1
		FOR UPDATE OF t`, sessionID).Scan(&keyID, &ct, &cur.gen, &cur.family, &revoked)
	if errors.Is(err, pgx.ErrNoRows) || err == nil && revoked {
		return nil, ErrNoSession
	}
	if err != nil {
		return nil, fmt.Errorf("lock tokens: %w", err)
	}
	cur.familyID = cur.family.String()
	if err := s.openJSON(keyID, ct, tokensAD(sessionID), &cur.ts); err != nil {
		return nil, fmt.Errorf("open tokens: %w", err)
	}
	return cur, nil
}

// checkLedger returns ErrRefreshTokenReuse when the refresh token about to
// be presented is unknown to its family's ledger or already rotated.
func (s *Store) checkLedger(ctx context.Context, tx pgx.Tx, cur *lockedTokens) error {
	var rotated *time.Time
	var ledgerFamily uuid.UUID
	err := tx.QueryRow(ctx, `SELECT family_id, rotated_at FROM auth_refresh_tokens WHERE token_hash = $1`,
		hash(cur.ts.RefreshToken)).Scan(&ledgerFamily, &rotated)
	if errors.Is(err, pgx.ErrNoRows) || err == nil && (rotated != nil || ledgerFamily != cur.family) {
		return ErrRefreshTokenReuse
	}
	if err != nil {
		return fmt.Errorf("refresh ledger: %w", err)
	}
	return nil
}

// storeRefresh records the OP's answer in tx: the rotation in the ledger
// (when the OP rotated the refresh token) and the sealed new tokens.
func (s *Store) storeRefresh(ctx context.Context, tx pgx.Tx, cur *lockedTokens, tok *oauth2.Token, now time.Time) (tokenSet, error) {
	next := tokenSet{AccessToken: tok.AccessToken, TokenType: tok.TokenType, RefreshToken: tok.RefreshToken,
		IDToken: cur.ts.IDToken, Expiry: tok.Expiry, Lifetime: lifetime(tok, now)}
	if id, _ := tok.Extra("id_token").(string); id != "" {
		next.IDToken = id
	}
	if next.RefreshToken == "" {
		next.RefreshToken = cur.ts.RefreshToken // the OP does not rotate
	}
	if next.RefreshToken != cur.ts.RefreshToken {
		if _, err := tx.Exec(ctx, `UPDATE auth_refresh_tokens SET rotated_at = $2, key_id = NULL, ciphertext = NULL
			WHERE token_hash = $1`, hash(cur.ts.RefreshToken), now); err != nil {
			return tokenSet{}, fmt.Errorf("rotate ledger: %w", err)
		}
		if err := s.recordRefreshToken(ctx, tx, cur.familyID, next.RefreshToken, cur.gen+1); err != nil {
			return tokenSet{}, fmt.Errorf("rotate ledger: %w", err)
		}
	}
	keyID, ct, err := s.sealJSON(next, tokensAD(cur.sessionID))
	if err != nil {
		return tokenSet{}, fmt.Errorf("seal tokens: %w", err)
	}
	if _, err := tx.Exec(ctx, `UPDATE auth_tokens SET key_id = $2, ciphertext = $3, access_expires_at = $4,
		generation = generation + 1, updated_at = $5 WHERE session_id = $1`,
		cur.sessionID, keyID, ct, nullTime(next.Expiry), now); err != nil {
		return tokenSet{}, fmt.Errorf("store refreshed tokens: %w", err)
	}
	return next, nil
}

// endFamily revokes a refresh-token family (and its sessions) for reason
// and returns cause, joined with the revocation's own error if it failed.
func (s *Store) endFamily(ctx context.Context, familyID, reason string, cause error) error {
	if err := s.revokeFamily(ctx, familyID, reason); err != nil {
		return errors.Join(cause, err)
	}
	return cause
}

// idToken returns the stored ID token of a session.
func (s *Store) idToken(ctx context.Context, sessionID string) (string, error) {
	ts, err := s.loadTokens(ctx, sessionID)
	return ts.IDToken, err
}

// loadTokens decrypts the stored tokens of a session without refreshing.
func (s *Store) loadTokens(ctx context.Context, sessionID string) (tokenSet, error) {
	var keyID string
	var ct []byte
	err := s.pool.QueryRow(ctx, `SELECT key_id, ciphertext FROM auth_tokens WHERE session_id = $1`, sessionID).Scan(&keyID, &ct)
	if err != nil {
		return tokenSet{}, fmt.Errorf("load tokens: %w", err)
	}
	var ts tokenSet
	if err := s.openJSON(keyID, ct, tokensAD(sessionID), &ts); err != nil {
		return tokenSet{}, err
	}
	return ts, nil
}
