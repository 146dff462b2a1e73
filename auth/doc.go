// Package auth is gatehouse's browser login as a backend-for-frontend: OIDC
// Authorization Code + PKCE against an external OpenID Provider, server-side
// sessions behind an opaque "__Host-" cookie, the OP's tokens kept encrypted
// on the server and refreshed there, and revocation (per session, per user,
// OIDC Back-Channel Logout, sign-out with the OP's end-session endpoint).
//
// # For other packages: sessions of browser requests (stable API)
//
// Build a *Store from the pool and the configuration (cheap; no cache, so
// several Stores over one database agree, and a revocation is effective on
// the very next lookup):
//
//	store, err := auth.NewStore(auth.StoreConfig{Pool: pool, Auth: cfg.Auth, Logger: log})
//
// Then:
//
//   - store.SessionFromRequest(r) (*auth.Session, error) resolves the session
//     of a cookie-authenticated request: Session.User is the identity
//     (Issuer, Subject), Session.ID the public session id. It returns
//     auth.ErrNoSession when there is none (answer 401). It also records
//     activity. Combine it with auth.CheckCSRF / auth.RequireCSRF (origin =
//     auth.OriginOf(cfg.Auth.RedirectURL)) for state-changing calls.
//   - store.ListSessions(ctx, user) ([]auth.Session, error) lists the user's
//     live sessions, most recently used first.
//   - store.RevokeSession(ctx, user, id, reason) error revokes one session of
//     that user by its public id (auth.ErrSessionNotFound when it is not one
//     of the user's live sessions).
//   - store.RevokeUser(ctx, user, reason) (int, error) revokes every session
//     and refresh-token family of the user.
//
// The tokens of a revoked session are revoked at the OP (RFC 7009) and then
// deleted by the revocation loop of the serving process (Service.Run).
//
// # The browser surface
//
// New(Config) returns a *Service that discovers the OP and mounts (Routes):
// GET / (to /account or /signin), GET /signin (page), GET /login?next=…, GET <redirect_url path> (callback),
// POST /logout, GET /account, POST /account/sessions/{id}/revoke,
// POST /account/sessions/revoke-all, POST /backchannel-logout and, with an
// operator token, POST /operator/v1/revoke-user. Service.AccessToken gives a
// backend handler a fresh access token of a session (refreshed under a
// per-session Postgres row lock, rotated, with reuse detection).
package auth
