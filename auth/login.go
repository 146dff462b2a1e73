package auth

import (
	"context"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/jackc/pgx/v5"
	"golang.org/x/oauth2"
)

// preLoginCookie binds pending logins to the browser that started them. One
// value is shared by every tab of the browser, so several logins may run at
// once; it lives as long as a login transaction.
const preLoginCookie = "__Host-gatehouse-login"

// loginTx is a pending login between /login and the callback.
type loginTx struct {
	Verifier      string `json:"v"`
	Nonce         string `json:"n"`
	bindingHash   []byte
	next          string
	attempt       int
	correlationID string
	createdAt     time.Time
	expiresAt     time.Time
}

func loginAD(stateHash []byte) []byte {
	return []byte("auth_login_tx:" + hex.EncodeToString(stateHash))
}

// login starts a login: GET /login?next=…
func (s *Service) login(w http.ResponseWriter, r *http.Request) {
	next := SafeNext(r.URL.Query().Get("next"), s.cfg.NextAllowlist)
	s.startLogin(w, r, next, 0, randomToken(9))
}

// startLogin stores a new login transaction and redirects to the OP.
func (s *Service) startLogin(w http.ResponseWriter, r *http.Request, next string, attempt int, corr string) {
	binding := ""
	if c, err := r.Cookie(preLoginCookie); err == nil && len(c.Value) == 43 {
		binding = c.Value // another tab's pending login: share the binding
	} else {
		binding = randomToken(32)
	}
	state, nonce, verifier := randomToken(32), randomToken(32), oauth2.GenerateVerifier()
	now := s.now()
	tx := loginTx{Verifier: verifier, Nonce: nonce}
	sh := hash(state)
	keyID, ct, err := s.store.sealJSON(tx, loginAD(sh))
	if err == nil {
		_, err = s.store.pool.Exec(r.Context(), `INSERT INTO auth_login_tx (state_hash, binding_hash, key_id, secrets,
			next_path, attempt, correlation_id, created_at, expires_at) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9)`,
			sh, hash(binding), keyID, ct, next, attempt, corr, now, now.Add(s.cfg.LoginTimeout))
	}
	if err != nil {
		s.log.Error("login: store transaction", "correlation_id", corr, "err", err)
		s.logins.WithLabelValues("internal_error").Inc()
		s.errorPage(w, r, http.StatusInternalServerError, pageInternal, corr, nil)
		return
	}
	http.SetCookie(w, &http.Cookie{
		Name: preLoginCookie, Value: binding, Path: "/", MaxAge: int(s.cfg.LoginTimeout / time.Second),
		HttpOnly: true, Secure: true, SameSite: http.SameSiteLaxMode,
	})
	s.log.Info("login started", "correlation_id", corr, "client_id", s.cfg.ClientID, "callback_uri", s.cfg.RedirectURL,
		"attempt", attempt, "next", next, "started_at", now)
	noStore(w)
	http.Redirect(w, r, s.oauth.AuthCodeURL(state, oidc.Nonce(nonce), oauth2.S256ChallengeOption(verifier)), http.StatusFound)
}

// consumeTx deletes and returns the transaction of state: a state is usable
// exactly once, and it is consumed before the code is redeemed.
func (s *Service) consumeTx(ctx context.Context, state string) (*loginTx, error) {
	sh := hash(state)
	var (
		tx    loginTx
		keyID string
		ct    []byte
	)
	err := s.store.pool.QueryRow(ctx, `DELETE FROM auth_login_tx WHERE state_hash = $1
		RETURNING binding_hash, key_id, secrets, next_path, attempt, correlation_id, created_at, expires_at`, sh).
		Scan(&tx.bindingHash, &keyID, &ct, &tx.next, &tx.attempt, &tx.correlationID, &tx.createdAt, &tx.expiresAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("consume login transaction: %w", err)
	}
	if err := s.store.openJSON(keyID, ct, loginAD(sh), &tx); err != nil {
		return nil, fmt.Errorf("open login transaction: %w", err)
	}
	return &tx, nil
}

// callback finishes a login: GET <redirect path>?code=…&state=…
func (s *Service) callback(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	q := r.URL.Query()
	state := q.Get("state")
	opErr := q.Get("error")
	corr := randomToken(9)
	l := s.log.With("correlation_id", corr, "client_id", s.cfg.ClientID, "callback_uri", s.cfg.RedirectURL)
	if state == "" && opErr != "" {
		// The OP answered with an error and no state (it could not trust the request).
		if opErr == "redirect_uri_mismatch" {
			s.loginFailed(w, r, l, corr, failOPNoState, pageRedirectMismatch, http.StatusBadRequest,
				map[string]string{"RedirectURI": s.cfg.RedirectURL}, "op_error", opErr)
			return
		}
		s.loginFailed(w, r, l, corr, failOPNoState, "", 0, map[string]string{"Code": opErr}, "op_error", opErr)
		return
	}
	if state == "" {
		s.loginFailed(w, r, l, corr, failStateMismatch, "", 0, nil, "reason", "no state parameter", "op_error", opErr)
		return
	}
	tx, err := s.consumeTx(ctx, state)
	if err != nil {
		s.loginFailed(w, r, l, corr, failInternal, "", 0, nil, "step", "consume state", "err", err)
		return
	}
	if tx == nil {
		s.loginFailed(w, r, l, corr, failStateMismatch, "", 0, nil, "reason", "state unknown or already used", "op_error", opErr)
		return
	}
	corr = tx.correlationID
	l = s.log.With("correlation_id", corr, "client_id", s.cfg.ClientID, "callback_uri", s.cfg.RedirectURL,
		"login_started_at", tx.createdAt)
	c, cerr := r.Cookie(preLoginCookie)
	if cerr != nil || subtle.ConstantTimeCompare(hash(c.Value), tx.bindingHash) != 1 {
		s.loginFailed(w, r, l, corr, failStateMismatch, "", 0, nil,
			"reason", "state belongs to another browser (pre-login cookie missing or different)", "op_error", opErr)
		return
	}
	if s.now().After(tx.expiresAt) {
		s.loginFailed(w, r, l, corr, failExpired, "", 0, map[string]string{"Next": tx.next}, "expired_at", tx.expiresAt)
		return
	}
	// RFC 9207: the authorization response names its issuer (mix-up defence).
	if iss, ok := q["iss"]; ok || s.meta.IssParameter {
		if !ok || len(iss) != 1 || iss[0] != s.cfg.Issuer {
			s.loginFailed(w, r, l, corr, failIssuerMismatch, "", 0, nil, "iss_present", ok)
			return
		}
	}
	if opErr != "" {
		s.opError(w, r, l, tx, corr, opErr, "authorize")
		return
	}
	code := q.Get("code")
	if code == "" {
		s.loginFailed(w, r, l, corr, failNoCode, "", 0, nil)
		return
	}
	ectx, cancel := context.WithTimeout(s.opContext(ctx), 15*time.Second)
	defer cancel()
	tok, err := s.oauth.Exchange(ectx, code, oauth2.VerifierOption(tx.Verifier))
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		// The OP's own words (never the code, the verifier or the secret).
		l.Warn("token endpoint refused the code", "op_error", re.ErrorCode, "op_error_description", re.ErrorDescription)
		s.opError(w, r, l, tx, corr, re.ErrorCode, "token")
		return
	}
	if err != nil {
		s.loginFailed(w, r, l, corr, failOPUnreachable, "", 0, nil, "err", err)
		return
	}
	id, err := s.verifyLogin(ctx, tok, tx.Nonce)
	if err != nil {
		s.loginFailed(w, r, l, corr, failInvalidIDToken, "", 0, nil, "err", err)
		return
	}
	ts := tokenSet{AccessToken: tok.AccessToken, TokenType: tok.TokenType, RefreshToken: tok.RefreshToken,
		IDToken: id.raw, Expiry: tok.Expiry, Lifetime: lifetime(tok, s.now())}
	cookie, sess, err := s.store.createSession(ctx, newSession{User: id.user, Email: id.email, Name: id.name,
		OPSID: id.sid, Device: deviceOf(r.UserAgent()), Tokens: ts})
	if err != nil {
		s.loginFailed(w, r, l, corr, failInternal, "", 0, nil, "step", "create session", "err", err)
		return
	}
	if prev, err := s.store.SessionFromRequest(r); err == nil && prev.ID != sess.ID {
		// This browser's previous session is replaced, not left running beside the new one.
		if err := s.store.RevokeSession(ctx, prev.User, prev.ID, "replaced by a new login"); err != nil && !errors.Is(err, ErrSessionNotFound) {
			l.Warn("login: revoke the replaced session", "session", prev.ID, "err", err)
		}
		s.Kick()
	}
	s.setSessionCookie(w, cookie, s.cfg.SessionLifetime)
	// The pre-login binding has done its job, unless another tab of this
	// browser still has a login pending on it.
	var pending bool
	if err := s.store.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM auth_login_tx WHERE binding_hash = $1 AND expires_at > $2)`,
		tx.bindingHash, s.now()).Scan(&pending); err == nil && !pending {
		http.SetCookie(w, &http.Cookie{Name: preLoginCookie, Value: "", Path: "/", MaxAge: -1,
			HttpOnly: true, Secure: true, SameSite: http.SameSiteLaxMode})
	}
	s.logins.WithLabelValues("ok").Inc()
	l.Info("login succeeded", "session", sess.ID, "issuer", id.user.Issuer, "subject", id.user.Subject,
		"refresh_token", tok.RefreshToken != "", "finished_at", s.now())
	noStore(w)
	http.Redirect(w, r, tx.next, http.StatusSeeOther)
}

// loginFailure is one way a callback ends without a session: the reason
// label of the logins counter ("" counts nothing), the log line and its
// level, and the answer's status and page.
type loginFailure struct {
	reason string
	msg    string
	level  slog.Level
	status int
	page   string
}

// The callback's failures, in the order its checks run: one table, as the
// API maps its errors in api/errors.go.
var (
	failOPNoState      = loginFailure{"op_error", "login failed: identity provider error without state", slog.LevelWarn, http.StatusBadGateway, pageOPError}
	failStateMismatch  = loginFailure{"state_mismatch", "login failed: state mismatch", slog.LevelWarn, http.StatusBadRequest, pageStateMismatch}
	failInternal       = loginFailure{"", "login failed: internal error", slog.LevelError, http.StatusInternalServerError, pageInternal}
	failExpired        = loginFailure{"expired", "login failed: login transaction expired", slog.LevelWarn, http.StatusBadRequest, pageLoginExpired}
	failIssuerMismatch = loginFailure{"issuer_mismatch", "login failed: authorization response iss does not match the issuer", slog.LevelWarn, http.StatusBadRequest, pageIssuerMismatch}
	failNoCode         = loginFailure{"no_code", "login failed: callback without code", slog.LevelWarn, http.StatusBadRequest, pageVerifyFailed}
	failOPUnreachable  = loginFailure{"op_unreachable", "login failed: token endpoint unreachable", slog.LevelError, http.StatusBadGateway, pageOPUnavailable}
	failInvalidIDToken = loginFailure{"invalid_id_token", "login failed: ID token or UserInfo rejected", slog.LevelWarn, http.StatusBadRequest, pageVerifyFailed}
)

// loginFailed counts, logs and answers f; page and status, when set,
// replace f's (one failure, several pages), attrs are logged with it.
func (s *Service) loginFailed(w http.ResponseWriter, r *http.Request, l *slog.Logger, corr string, f loginFailure,
	page string, status int, data map[string]string, attrs ...any) {
	if f.reason != "" {
		s.logins.WithLabelValues(f.reason).Inc()
	}
	l.Log(r.Context(), f.level, f.msg, append(attrs, "at", s.now())...)
	if page == "" {
		page, status = f.page, f.status
	}
	s.errorPage(w, r, status, page, corr, data)
}

// opError handles an OAuth error from the authorize redirect or the token endpoint.
func (s *Service) opError(w http.ResponseWriter, r *http.Request, l interface {
	Warn(string, ...any)
	Info(string, ...any)
}, tx *loginTx, corr, code, where string) {
	s.logins.WithLabelValues("op_error").Inc()
	l.Warn("login failed: identity provider error", "op_error", code, "endpoint", where, "attempt", tx.attempt)
	switch code {
	case "redirect_uri_mismatch":
		// Deterministic: restarting cannot fix it, so never loop.
		s.errorPage(w, r, http.StatusBadRequest, pageRedirectMismatch, corr, map[string]string{"RedirectURI": s.cfg.RedirectURL})
	case "invalid_grant":
		if where == "token" && tx.attempt == 0 {
			// The code expired or was already used: one automatic restart.
			l.Info("login restarting once after invalid_grant")
			s.startLogin(w, r, tx.next, 1, corr)
			return
		}
		s.errorPage(w, r, http.StatusBadRequest, pageInvalidGrant, corr, map[string]string{"Next": tx.next})
	case "access_denied":
		s.errorPage(w, r, http.StatusForbidden, pageAccessDenied, corr, map[string]string{"Next": tx.next})
	case "invalid_client", "unauthorized_client", "unsupported_response_type", "invalid_scope":
		s.errorPage(w, r, http.StatusBadGateway, pageMisconfigured, corr, map[string]string{"Code": code})
	default:
		s.errorPage(w, r, http.StatusBadGateway, pageOPError, corr, map[string]string{"Code": code, "Next": tx.next})
	}
}

func (s *Service) setSessionCookie(w http.ResponseWriter, value string, maxAge time.Duration) {
	c := &http.Cookie{
		Name: s.store.cookieName, Value: value, Path: "/", HttpOnly: true, Secure: true,
		SameSite: http.SameSiteLaxMode, MaxAge: int(maxAge / time.Second),
	}
	if maxAge <= 0 {
		c.MaxAge = -1
	}
	http.SetCookie(w, c)
}

func noStore(w http.ResponseWriter) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Pragma", "no-cache")
}
