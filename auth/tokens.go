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
)

// tokenSet is the OP's tokens of one session; it is only ever stored encrypted.
type tokenSet struct {
	AccessToken  string    `json:"access_token"`
	TokenType    string    `json:"token_type,omitempty"`
	RefreshToken string    `json:"refresh_token,omitempty"`
	IDToken      string    `json:"id_token,omitempty"`
	Expiry       time.Time `json:"expiry,omitzero"`
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
// access token expires within before (or force is set). The token row is
// locked (SELECT … FOR UPDATE) for the whole refresh, so concurrent callers in
// any process wait and then see the new tokens: one refresh token is never
// presented twice. A refresh token already rotated in its family's ledger
// (a stale copy written back) revokes the family (ErrRefreshTokenReuse); an
// invalid_grant or invalid_request answer ends the session (ErrSessionEnded).
func (s *Store) freshTokens(ctx context.Context, sessionID string, before time.Duration, force bool, refresh refreshFunc) (tokenSet, error) {
	var (
		ts       tokenSet
		familyID string
		outcome  error
	)
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var (
			keyID   string
			ct      []byte
			gen     int
			fid     uuid.UUID
			revoked bool
		)
		err := tx.QueryRow(ctx, `
			SELECT t.key_id, t.ciphertext, t.generation, t.family_id,
			       s.revoked_at IS NOT NULL OR f.revoked_at IS NOT NULL
			FROM auth_tokens t
			JOIN auth_sessions s ON s.id = t.session_id
			JOIN auth_refresh_families f ON f.id = t.family_id
			WHERE t.session_id = $1
			FOR UPDATE OF t`, sessionID).Scan(&keyID, &ct, &gen, &fid, &revoked)
		if errors.Is(err, pgx.ErrNoRows) || err == nil && revoked {
			return ErrNoSession
		}
		if err != nil {
			return fmt.Errorf("lock tokens: %w", err)
		}
		familyID = fid.String()
		if err := s.openJSON(keyID, ct, tokensAD(sessionID), &ts); err != nil {
			return fmt.Errorf("open tokens: %w", err)
		}
		now := s.now()
		if !force && (ts.Expiry.IsZero() || ts.Expiry.After(now.Add(before))) {
			return nil
		}
		if ts.RefreshToken == "" {
			return ErrNoRefreshToken
		}
		var rotated *time.Time
		var ledgerFamily uuid.UUID
		err = tx.QueryRow(ctx, `SELECT family_id, rotated_at FROM auth_refresh_tokens WHERE token_hash = $1`,
			hash(ts.RefreshToken)).Scan(&ledgerFamily, &rotated)
		if errors.Is(err, pgx.ErrNoRows) || err == nil && (rotated != nil || ledgerFamily != fid) {
			outcome = ErrRefreshTokenReuse
			return nil
		}
		if err != nil {
			return fmt.Errorf("refresh ledger: %w", err)
		}
		tok, err := refresh(ctx, ts.RefreshToken)
		var re *oauth2.RetrieveError
		if errors.As(err, &re) && (re.ErrorCode == "invalid_grant" || re.ErrorCode == "invalid_request") {
			s.log.Warn("refresh refused by the identity provider; ending session",
				"session", sessionID, "op_error", re.ErrorCode, "status", re.Response.StatusCode)
			outcome = ErrSessionEnded
			return nil
		}
		if err != nil {
			return fmt.Errorf("refresh: %w", err)
		}
		next := tokenSet{AccessToken: tok.AccessToken, TokenType: tok.TokenType, RefreshToken: tok.RefreshToken,
			IDToken: ts.IDToken, Expiry: tok.Expiry}
		if id, _ := tok.Extra("id_token").(string); id != "" {
			next.IDToken = id
		}
		if next.RefreshToken == "" {
			next.RefreshToken = ts.RefreshToken // the OP does not rotate
		}
		if next.RefreshToken != ts.RefreshToken {
			if _, err := tx.Exec(ctx, `UPDATE auth_refresh_tokens SET rotated_at = $2, key_id = NULL, ciphertext = NULL
				WHERE token_hash = $1`, hash(ts.RefreshToken), now); err != nil {
				return fmt.Errorf("rotate ledger: %w", err)
			}
			if err := s.recordRefreshToken(ctx, tx, familyID, next.RefreshToken, gen+1); err != nil {
				return fmt.Errorf("rotate ledger: %w", err)
			}
		}
		keyID, ct, err = s.sealJSON(next, tokensAD(sessionID))
		if err != nil {
			return fmt.Errorf("seal tokens: %w", err)
		}
		if _, err := tx.Exec(ctx, `UPDATE auth_tokens SET key_id = $2, ciphertext = $3, access_expires_at = $4,
			generation = generation + 1, updated_at = $5 WHERE session_id = $1`,
			sessionID, keyID, ct, nullTime(next.Expiry), now); err != nil {
			return fmt.Errorf("store refreshed tokens: %w", err)
		}
		s.log.Info("tokens refreshed", "session", sessionID, "generation", gen+1, "access_expires_at", next.Expiry)
		ts = next
		return nil
	})
	if err != nil {
		return tokenSet{}, err
	}
	if outcome != nil {
		reason := "refresh token reuse"
		if errors.Is(outcome, ErrSessionEnded) {
			reason = "refresh refused by identity provider"
		} else {
			s.log.Error("refresh token reuse detected; revoking the family", "session", sessionID, "family", familyID)
		}
		if err := s.revokeFamily(ctx, familyID, reason); err != nil {
			return tokenSet{}, errors.Join(outcome, err)
		}
		return tokenSet{}, outcome
	}
	return ts, nil
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
