package api

import (
	"errors"
	"net/http"
	"time"
)

// sessionView is one session as the API shows it: no cookie value, no
// provider token, nothing a thief could replay.
type sessionView struct {
	ID         string    `json:"id"`
	Device     string    `json:"device"`
	CreatedAt  time.Time `json:"created_at"`
	LastSeenAt time.Time `json:"last_seen_at"`
	ExpiresAt  time.Time `json:"expires_at"`
	Current    bool      `json:"current"`
}

// listSessions answers the caller's own live sessions.
func (s *Server) listSessions(w http.ResponseWriter, r *http.Request) {
	c := CallerFrom(r.Context())
	out := []sessionView{}
	if s.cfg.Sessions != nil {
		list, err := s.cfg.Sessions.ListSessions(r.Context(), c.User)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		for _, se := range list {
			out = append(out, sessionView{
				ID: se.ID, Device: se.Device, CreatedAt: se.CreatedAt.UTC(),
				LastSeenAt: se.LastSeenAt.UTC(), ExpiresAt: se.ExpiresAt.UTC(),
				Current: c.Via == "session" && se.ID == c.SessionID,
			})
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"sessions": out})
}

// revokeSession revokes one of the caller's own sessions; another person's
// session (or an unknown id) is 404, indistinguishable from a missing one.
func (s *Server) revokeSession(w http.ResponseWriter, r *http.Request) {
	c := CallerFrom(r.Context())
	if s.cfg.Sessions == nil {
		s.fail(w, r, errNotFound)
		return
	}
	reason := "api: revoked by owner via " + c.Via
	err := s.cfg.Sessions.RevokeSession(r.Context(), c.User, pathParam(r, "id"), reason)
	switch {
	case errors.Is(err, ErrSessionNotFound):
		s.fail(w, r, errNotFound)
	case err != nil:
		s.fail(w, r, err)
	default:
		s.cfg.Logger.Info("session revoked via api", "session_id", pathParam(r, "id"), "via", c.Via, "issuer", c.User.Issuer, "subject", c.User.Subject)
		w.WriteHeader(http.StatusNoContent)
	}
}
