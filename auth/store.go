package auth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Errors returned by Store.
var (
	// ErrNoSession: the request carries no session cookie, or the cookie names
	// no live session (unknown, revoked, idle too long or past its lifetime).
	ErrNoSession = errors.New("auth: no valid session")
	// ErrSessionNotFound: no live session with that id belongs to that user.
	ErrSessionNotFound = errors.New("auth: session not found")
)

// User is a person's identity: the pair (issuer, subject). Email is an
// attribute, never a key.
type User struct {
	Issuer  string `json:"issuer"`
	Subject string `json:"subject"`
}

// String is "issuer,subject" (the form `gatehouse sessions revoke --user` takes).
func (u User) String() string { return u.Issuer + "," + u.Subject }

// Session is a live browser session. ID is a public handle (a UUID) that may
// be shown, logged and used to revoke the session; it is NOT the cookie
// value, which only the browser holds (the database keeps its SHA-256).
type Session struct {
	ID         string    `json:"id"`
	User       User      `json:"user"`
	Email      string    `json:"email,omitempty"`
	Name       string    `json:"name,omitempty"`
	Device     string    `json:"device"`
	CreatedAt  time.Time `json:"created_at"`
	LastSeenAt time.Time `json:"last_seen_at"`
	// ExpiresAt is when the session ends at the latest: the earlier of the
	// absolute lifetime and the idle timeout counted from LastSeenAt.
	ExpiresAt time.Time `json:"expires_at"`

	opSID    string
	familyID string
}

// StoreConfig configures a Store.
type StoreConfig struct {
	// Pool is the database holding migrations/00001_baseline.sql. Required.
	Pool *pgxpool.Pool
	// Auth supplies CookieName, SessionIdleTimeout, SessionLifetime and the
	// resolved EncryptionKeys (SettingsOf fills them from the auth section).
	Auth Settings
	// Logger nil: slog.Default() (the rule of every stage's Config); Now
	// defaults to time.Now.
	Logger *slog.Logger
	Now    func() time.Time
}

// Store holds sessions, their encrypted tokens and refresh-token families in
// PostgreSQL. It keeps no cache: any number of Store values, in any number of
// processes, may share one database, and a revocation is seen by the very
// next lookup. Safe for concurrent use.
type Store struct {
	pool       *pgxpool.Pool
	keys       *Keyring
	cookieName string
	idle, life time.Duration
	retain     time.Duration // ended sessions are deleted after this (purge.go)
	touchEvery time.Duration
	log        *slog.Logger
	now        func() time.Time
	warnMargin sync.Once // refresh_before ≥ the token lifetime, said once
}

// NewStore returns a Store. It fails when the pool is nil or the encryption
// keys are missing or malformed.
func NewStore(cfg StoreConfig) (*Store, error) {
	if cfg.Pool == nil {
		return nil, errors.New("auth: store: nil pool")
	}
	keys, err := NewKeyring(cfg.Auth.EncryptionKeys)
	if err != nil {
		return nil, err
	}
	a := cfg.Auth
	if a.CookieName == "" || a.SessionIdleTimeout <= 0 || a.SessionLifetime <= 0 {
		return nil, errors.New("auth: store: cookie name and session lifetimes are required (config defaults not applied?)")
	}
	s := &Store{
		pool: cfg.Pool, keys: keys, cookieName: a.CookieName,
		idle: a.SessionIdleTimeout, life: a.SessionLifetime, retain: a.SessionRetention,
		log: cfg.Logger, now: cfg.Now,
	}
	if s.retain == 0 {
		s.retain = 30 * 24 * time.Hour
	}
	s.touchEvery = min(s.idle/10, time.Minute)
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.now == nil {
		s.now = time.Now
	}
	return s, nil
}

// CookieName is the session cookie's name (it starts with "__Host-").
func (s *Store) CookieName() string { return s.cookieName }

// SessionFromRequest resolves the session of a browser request from its
// session cookie and records activity (last seen). It returns ErrNoSession
// when there is no cookie or no live session for it. It does not check CSRF:
// state-changing handlers must also use RequireCSRF.
func (s *Store) SessionFromRequest(r *http.Request) (*Session, error) {
	c, err := r.Cookie(s.cookieName)
	if err != nil || c.Value == "" {
		return nil, ErrNoSession
	}
	return s.Lookup(r.Context(), c.Value)
}

// Lookup resolves a session by its cookie value (see SessionFromRequest).
func (s *Store) Lookup(ctx context.Context, cookieValue string) (*Session, error) {
	now := s.now()
	row := s.pool.QueryRow(ctx, `
		SELECT id, issuer, subject, email, name, device, op_sid, family_id,
		       created_at, last_seen_at, absolute_expires_at
		FROM auth_sessions
		WHERE token_hash = $1 AND revoked_at IS NULL
		  AND absolute_expires_at > $2 AND last_seen_at > $3`,
		hash(cookieValue), now, now.Add(-s.idle))
	sess, abs, err := scanSession(row)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrNoSession
	}
	if err != nil {
		return nil, fmt.Errorf("lookup session: %w", err)
	}
	if now.Sub(sess.LastSeenAt) >= s.touchEvery {
		if _, err := s.pool.Exec(ctx, `UPDATE auth_sessions SET last_seen_at = $2 WHERE id = $1 AND last_seen_at < $2`, sess.ID, now); err != nil {
			return nil, fmt.Errorf("touch session: %w", err)
		}
		sess.LastSeenAt = now
	}
	sess.ExpiresAt = earliest(abs, sess.LastSeenAt.Add(s.idle))
	return sess, nil
}

func scanSession(row pgx.Row) (*Session, time.Time, error) {
	var (
		sess     Session
		id, fam  uuid.UUID
		absolute time.Time
	)
	err := row.Scan(&id, &sess.User.Issuer, &sess.User.Subject, &sess.Email, &sess.Name, &sess.Device,
		&sess.opSID, &fam, &sess.CreatedAt, &sess.LastSeenAt, &absolute)
	if err != nil {
		return nil, time.Time{}, err
	}
	sess.ID, sess.familyID = id.String(), fam.String()
	return &sess, absolute, nil
}

func earliest(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// ListSessions returns the user's live sessions, most recently used first.
func (s *Store) ListSessions(ctx context.Context, u User) ([]Session, error) {
	now := s.now()
	rows, err := s.pool.Query(ctx, `
		SELECT id, issuer, subject, email, name, device, op_sid, family_id,
		       created_at, last_seen_at, absolute_expires_at
		FROM auth_sessions
		WHERE issuer = $1 AND subject = $2 AND revoked_at IS NULL
		  AND absolute_expires_at > $3 AND last_seen_at > $4
		ORDER BY last_seen_at DESC, created_at DESC`,
		u.Issuer, u.Subject, now, now.Add(-s.idle))
	if err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	defer rows.Close()
	var out []Session
	for rows.Next() {
		sess, abs, err := scanSession(rows)
		if err != nil {
			return nil, fmt.Errorf("list sessions: %w", err)
		}
		sess.ExpiresAt = earliest(abs, sess.LastSeenAt.Add(s.idle))
		out = append(out, *sess)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	return out, nil
}

// RevokeSession revokes the session id of user u (and its refresh-token
// family). It takes effect on that session's next request. It returns
// ErrSessionNotFound when no unrevoked session with that id belongs to u
// (ids that are not UUIDs included), so one user cannot probe another's ids.
func (s *Store) RevokeSession(ctx context.Context, u User, id, reason string) error {
	sid, err := uuid.Parse(id)
	if err != nil {
		return ErrSessionNotFound
	}
	n, err := s.revoke(ctx, `id = $1 AND issuer = $2 AND subject = $3`, reason, sid, u.Issuer, u.Subject)
	if err != nil {
		return err
	}
	if n == 0 {
		return ErrSessionNotFound
	}
	return nil
}

// RevokeUser revokes every session and refresh-token family of user u (on
// password reset, account recovery or suspected theft) and returns how many
// sessions were still unrevoked. The OP-side revocation (RFC 7009) of the
// families' refresh tokens is done by the serving process's revocation loop.
func (s *Store) RevokeUser(ctx context.Context, u User, reason string) (int, error) {
	n, err := s.revoke(ctx, `issuer = $1 AND subject = $2`, reason, u.Issuer, u.Subject)
	if err != nil {
		return 0, err
	}
	// Families without a live session (none today, but cheap and complete).
	if _, err := s.pool.Exec(ctx, `UPDATE auth_refresh_families SET revoked_at = $3, revoke_reason = $4
		WHERE issuer = $1 AND subject = $2 AND revoked_at IS NULL`, u.Issuer, u.Subject, s.now(), reason); err != nil {
		return 0, fmt.Errorf("revoke families: %w", err)
	}
	return n, nil
}

// revokeOPSession revokes the sessions of issuer that match the OP session
// id sid and/or subject sub (back-channel logout); empty means "any".
func (s *Store) revokeOPSession(ctx context.Context, issuer, sid, sub, reason string) (int, error) {
	switch {
	case sid != "" && sub != "":
		return s.revoke(ctx, `issuer = $1 AND op_sid = $2 AND subject = $3`, reason, issuer, sid, sub)
	case sid != "":
		return s.revoke(ctx, `issuer = $1 AND op_sid = $2`, reason, issuer, sid)
	case sub != "":
		return s.revoke(ctx, `issuer = $1 AND subject = $2`, reason, issuer, sub)
	}
	return 0, errors.New("auth: revoke needs sid or sub")
}

// revoke marks the matching unrevoked sessions and their families revoked in
// one statement. where uses $1…$n for args; the reason and time are appended.
func (s *Store) revoke(ctx context.Context, where, reason string, args ...any) (int, error) {
	n := len(args)
	q := fmt.Sprintf(`
		WITH revoked AS (
			UPDATE auth_sessions SET revoked_at = $%d, revoke_reason = $%d
			WHERE %s AND revoked_at IS NULL
			RETURNING family_id
		), fam AS (
			UPDATE auth_refresh_families f SET revoked_at = $%d, revoke_reason = $%d
			FROM revoked r WHERE f.id = r.family_id AND f.revoked_at IS NULL
			RETURNING f.id
		)
		SELECT (SELECT count(*) FROM revoked), (SELECT count(*) FROM fam)`, n+1, n+2, where, n+1, n+2)
	var sessions, families int
	if err := s.pool.QueryRow(ctx, q, append(args, s.now(), reason)...).Scan(&sessions, &families); err != nil {
		return 0, fmt.Errorf("revoke sessions: %w", err)
	}
	if sessions > 0 {
		s.log.Info("sessions revoked", "count", sessions, "families", families, "reason", reason)
	}
	return sessions, nil
}

// revokeFamily revokes a refresh-token family and every session in it.
func (s *Store) revokeFamily(ctx context.Context, familyID, reason string) error {
	fid, err := uuid.Parse(familyID)
	if err != nil {
		return fmt.Errorf("revoke family: %w", err)
	}
	if _, err := s.revoke(ctx, `family_id = $1`, reason, fid); err != nil {
		return err
	}
	_, err = s.pool.Exec(ctx, `UPDATE auth_refresh_families SET revoked_at = $2, revoke_reason = $3 WHERE id = $1 AND revoked_at IS NULL`, fid, s.now(), reason)
	if err != nil {
		return fmt.Errorf("revoke family: %w", err)
	}
	return nil
}
