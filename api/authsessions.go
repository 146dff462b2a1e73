package api

import (
	"context"
	"errors"
	"net/http"

	"github.com/gatehouse/gatehouse/auth"
)

// AuthSessions adapts the login stage's *auth.Store to SessionStore.
func AuthSessions(st *auth.Store) SessionStore { return authSessions{st} }

type authSessions struct{ st *auth.Store }

func (a authSessions) SessionFromRequest(r *http.Request) (string, User, error) {
	s, err := a.st.SessionFromRequest(r)
	if errors.Is(err, auth.ErrNoSession) {
		return "", User{}, ErrNoSession
	}
	if err != nil {
		return "", User{}, err
	}
	return s.ID, User{Issuer: s.User.Issuer, Subject: s.User.Subject}, nil
}

func (a authSessions) ListSessions(ctx context.Context, u User) ([]Session, error) {
	list, err := a.st.ListSessions(ctx, auth.User{Issuer: u.Issuer, Subject: u.Subject})
	if err != nil {
		return nil, err
	}
	out := make([]Session, 0, len(list))
	for _, s := range list {
		out = append(out, Session{ID: s.ID, Device: s.Device, CreatedAt: s.CreatedAt, LastSeenAt: s.LastSeenAt, ExpiresAt: s.ExpiresAt})
	}
	return out, nil
}

func (a authSessions) RevokeSession(ctx context.Context, u User, id, reason string) error {
	err := a.st.RevokeSession(ctx, auth.User{Issuer: u.Issuer, Subject: u.Subject}, id, reason)
	if errors.Is(err, auth.ErrSessionNotFound) {
		return ErrSessionNotFound
	}
	return err
}
