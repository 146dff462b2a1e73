package auth

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// backChannelEvent is the event a logout token must carry (OIDC Back-Channel Logout 1.0).
const backChannelEvent = "http://schemas.openid.net/event/backchannel-logout"

// backchannelLogout is POST /backchannel-logout, called by the OP with a
// logout token: signed by the OP (JWKS, allowed algorithm), iss, aud = this
// client, exp (go-oidc); then iat and jti present, the back-channel event
// present, no nonce, sid or sub present, and the jti not seen before. The
// matching sessions are revoked. Answers 200, or 400 with an OAuth error.
func (s *Service) backchannelLogout(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		writeOAuthError(w, http.StatusBadRequest, "invalid_request", "form expected")
		return
	}
	n, err := s.handleLogoutToken(r, r.PostForm.Get("logout_token"))
	if err != nil {
		s.log.Warn("back-channel logout refused", "err", err, "client_id", s.cfg.ClientID)
		writeOAuthError(w, http.StatusBadRequest, "invalid_request", "invalid logout token")
		return
	}
	s.log.Info("back-channel logout", "sessions", n)
	s.Kick()
	w.WriteHeader(http.StatusOK)
}

func (s *Service) handleLogoutToken(r *http.Request, raw string) (int, error) {
	ctx := r.Context()
	if raw == "" {
		return 0, errors.New("no logout_token")
	}
	tok, err := s.verifier.Verify(s.opContext(ctx), raw)
	if err != nil {
		return 0, fmt.Errorf("verify: %w", err)
	}
	var c struct {
		Sid    string                     `json:"sid"`
		Sub    string                     `json:"sub"`
		Jti    string                     `json:"jti"`
		Iat    *json.Number               `json:"iat"`
		Nonce  *string                    `json:"nonce"`
		Events map[string]json.RawMessage `json:"events"`
	}
	if err := tok.Claims(&c); err != nil {
		return 0, fmt.Errorf("claims: %w", err)
	}
	switch {
	case c.Iat == nil:
		return 0, errors.New("iat missing")
	case c.Jti == "":
		return 0, errors.New("jti missing")
	case c.Nonce != nil:
		return 0, errors.New("nonce present (an ID token, not a logout token)")
	case c.Sid == "" && c.Sub == "":
		return 0, errors.New("neither sid nor sub")
	}
	if _, ok := c.Events[backChannelEvent]; !ok {
		return 0, errors.New("back-channel logout event missing")
	}
	exp := tok.Expiry
	if exp.IsZero() || exp.Before(s.now()) {
		exp = s.now().Add(10 * time.Minute)
	}
	tag, err := s.store.pool.Exec(ctx, `INSERT INTO auth_logout_jti (issuer, jti, expires_at) VALUES ($1,$2,$3)
		ON CONFLICT DO NOTHING`, tok.Issuer, c.Jti, exp)
	if err != nil {
		return 0, fmt.Errorf("record jti: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return 0, errors.New("logout token replayed (jti seen before)")
	}
	return s.store.revokeOPSession(ctx, tok.Issuer, c.Sid, c.Sub, "back-channel logout")
}

func writeOAuthError(w http.ResponseWriter, status int, code, desc string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": code, "error_description": desc})
}

// operatorRevokeUser is POST /operator/v1/revoke-user with
// "Authorization: Bearer <operator_token>" and a JSON body
// {"issuer": "...", "subject": "..."}: it revokes every session and refresh
// family of that user (password reset, account recovery, suspected theft)
// and answers {"revoked_sessions": n}.
func (s *Service) operatorRevokeUser(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	want := s.cfg.OperatorToken
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || len(want) == 0 || subtle.ConstantTimeCompare([]byte(got), want) != 1 {
		w.Header().Set("WWW-Authenticate", `Bearer realm="gatehouse-operator"`)
		writeOAuthError(w, http.StatusUnauthorized, "invalid_token", "operator token required")
		return
	}
	var u User
	dec := json.NewDecoder(io.LimitReader(r.Body, 16<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&u); err != nil || u.Issuer == "" || u.Subject == "" {
		writeOAuthError(w, http.StatusBadRequest, "invalid_request", `body must be {"issuer": "...", "subject": "..."}`)
		return
	}
	n, err := s.store.RevokeUser(r.Context(), u, "operator API")
	if err != nil {
		s.log.Error("operator revoke user", "err", err)
		writeOAuthError(w, http.StatusInternalServerError, "server_error", "revocation failed")
		return
	}
	s.log.Info("operator revoked user", "issuer", u.Issuer, "subject", u.Subject, "sessions", n)
	s.Kick()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]int{"revoked_sessions": n})
}
