package auth

import (
	"errors"
	"net/http"
	"net/url"

	"github.com/go-chi/chi/v5"
)

// home is GET /: when signed in, the user's home (Config.Home: the
// console for an operator) or the account page; else the sign-in page.
func (s *Service) home(w http.ResponseWriter, r *http.Request) {
	noStore(w)
	if sess, err := s.store.SessionFromRequest(r); err == nil {
		to := "/account"
		if s.homeOf != nil {
			if h := s.homeOf(sess.User); h != "" {
				to = h
			}
		}
		http.Redirect(w, r, to, http.StatusSeeOther)
		return
	}
	http.Redirect(w, r, "/signin?next=%2Faccount", http.StatusSeeOther)
}

// signinPage is GET /signin?next=…: a page with one "Sign in" button.
func (s *Service) signinPage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	next := SafeNext(q.Get("next"), s.cfg.NextAllowlist)
	if _, err := s.store.SessionFromRequest(r); err == nil && !q.Has("signed_out") {
		noStore(w)
		http.Redirect(w, r, next, http.StatusSeeOther)
		return
	}
	data := map[string]any{"Next": next, "SignedOut": q.Has("signed_out"), "Ended": q.Has("ended")}
	if err := s.pages.render(w, http.StatusOK, "Sign in", "signin", data); err != nil {
		s.log.Error("render signin", "err", err)
	}
}

// account is GET /account: who you are and your active sessions.
func (s *Service) account(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	sess, err := s.store.SessionFromRequest(r)
	if err != nil {
		s.toSignin(w, r, "/account", errors.Is(err, ErrNoSession) && hasCookie(r, s.store.cookieName))
		return
	}
	// Keep the OP tokens fresh while the user is active; a refused refresh
	// ends the session here and now.
	if _, err := s.AccessToken(ctx, sess.ID); err != nil {
		switch {
		case errors.Is(err, ErrNoSession), errors.Is(err, ErrSessionEnded), errors.Is(err, ErrRefreshTokenReuse):
			s.toSignin(w, r, "/account", true)
			return
		case errors.Is(err, ErrNoRefreshToken), errors.Is(err, ErrRefreshOff):
		default:
			s.log.Warn("account: token refresh failed; session kept", "session", sess.ID, "err", err)
		}
	}
	list, err := s.store.ListSessions(ctx, sess.User)
	if err != nil {
		s.log.Error("account: list sessions", "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	if err := s.pages.render(w, http.StatusOK, "Account", "account", map[string]any{"Current": sess, "Sessions": list}); err != nil {
		s.log.Error("render account", "err", err)
	}
}

func hasCookie(r *http.Request, name string) bool {
	_, err := r.Cookie(name)
	return err == nil
}

// toSignin sends the browser to the sign-in page, clearing a dead cookie.
func (s *Service) toSignin(w http.ResponseWriter, r *http.Request, next string, ended bool) {
	v := url.Values{"next": {next}}
	if ended {
		s.setSessionCookie(w, "", 0)
		v.Set("ended", "1")
	}
	noStore(w)
	http.Redirect(w, r, "/signin?"+v.Encode(), http.StatusSeeOther)
}

// logout is POST /logout: revoke locally, then the OP's end-session endpoint.
func (s *Service) logout(w http.ResponseWriter, r *http.Request) {
	sess, err := s.store.SessionFromRequest(r)
	if err == nil {
		if err := s.store.RevokeSession(r.Context(), sess.User, sess.ID, "sign-out"); err != nil && !errors.Is(err, ErrSessionNotFound) {
			s.log.Error("logout: revoke", "session", sess.ID, "err", err)
			http.Error(w, "internal error", http.StatusInternalServerError)
			return
		}
		s.log.Info("signed out", "session", sess.ID, "issuer", sess.User.Issuer, "subject", sess.User.Subject)
		s.Kick()
	}
	s.endSession(w, r)
}

// endSession clears the cookie and redirects to the OP's end_session_endpoint
// (client_id and, when configured, post_logout_redirect_uri; the ID token is
// not sent because tokens never go to the browser), or to the sign-in page.
func (s *Service) endSession(w http.ResponseWriter, r *http.Request) {
	s.setSessionCookie(w, "", 0)
	noStore(w)
	if s.meta.EndSession == "" {
		http.Redirect(w, r, "/signin?signed_out=1", http.StatusSeeOther)
		return
	}
	u, err := url.Parse(s.meta.EndSession)
	if err != nil {
		http.Redirect(w, r, "/signin?signed_out=1", http.StatusSeeOther)
		return
	}
	q := u.Query()
	q.Set("client_id", s.cfg.ClientID)
	if s.cfg.PostLogoutRedirectURL != "" {
		q.Set("post_logout_redirect_uri", s.cfg.PostLogoutRedirectURL)
	}
	u.RawQuery = q.Encode()
	http.Redirect(w, r, u.String(), http.StatusSeeOther)
}

// revokeOne is POST /account/sessions/{id}/revoke.
func (s *Service) revokeOne(w http.ResponseWriter, r *http.Request) {
	sess, err := s.store.SessionFromRequest(r)
	if err != nil {
		s.toSignin(w, r, "/account", false)
		return
	}
	id := chi.URLParam(r, "id")
	switch err := s.store.RevokeSession(r.Context(), sess.User, id, "revoked from account page"); {
	case errors.Is(err, ErrSessionNotFound):
		http.Error(w, "no such session", http.StatusNotFound)
		return
	case err != nil:
		s.log.Error("revoke session", "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	s.log.Info("session revoked by its user", "session", id, "by_session", sess.ID)
	s.Kick()
	if id == sess.ID {
		s.endSession(w, r)
		return
	}
	noStore(w)
	http.Redirect(w, r, "/account", http.StatusSeeOther)
}

// revokeAll is POST /account/sessions/revoke-all ("sign out everywhere").
func (s *Service) revokeAll(w http.ResponseWriter, r *http.Request) {
	sess, err := s.store.SessionFromRequest(r)
	if err != nil {
		s.toSignin(w, r, "/account", false)
		return
	}
	n, err := s.store.RevokeUser(r.Context(), sess.User, "sign out everywhere")
	if err != nil {
		s.log.Error("revoke all sessions", "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	s.log.Info("signed out everywhere", "sessions", n, "issuer", sess.User.Issuer, "subject", sess.User.Subject)
	s.Kick()
	s.endSession(w, r)
}
