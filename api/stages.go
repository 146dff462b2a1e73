// Package adapt connects the stages where one needs another's work: the API
// stage imports no other stage, and these adapters give it the login
// stage's sessions and ingest's replay, mapping their errors to api's. cmd
// wires them; the API's tests use the same ones.
package adapt

import (
	"context"
	"errors"
	"net/http"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gatehouse/gatehouse/api"
	"github.com/gatehouse/gatehouse/auth"
	"github.com/gatehouse/gatehouse/ingest"
	"github.com/gatehouse/gatehouse/internal/config"
)

// Sessions adapts the login stage's *auth.Store to api.SessionStore.
func Sessions(st *auth.Store) api.SessionStore { return sessionStore{st} }

type sessionStore struct{ st *auth.Store }

func (a sessionStore) SessionFromRequest(r *http.Request) (string, api.User, error) {
	s, err := a.st.SessionFromRequest(r)
	if errors.Is(err, auth.ErrNoSession) {
		return "", api.User{}, api.ErrNoSession
	}
	if err != nil {
		return "", api.User{}, err
	}
	return s.ID, api.User{Issuer: s.User.Issuer, Subject: s.User.Subject}, nil
}

func (a sessionStore) ListSessions(ctx context.Context, u api.User) ([]api.Session, error) {
	list, err := a.st.ListSessions(ctx, auth.User{Issuer: u.Issuer, Subject: u.Subject})
	if err != nil {
		return nil, err
	}
	out := make([]api.Session, 0, len(list))
	for _, s := range list {
		out = append(out, api.Session{ID: s.ID, Device: s.Device, CreatedAt: s.CreatedAt, LastSeenAt: s.LastSeenAt, ExpiresAt: s.ExpiresAt})
	}
	return out, nil
}

func (a sessionStore) RevokeSession(ctx context.Context, u api.User, id, reason string) error {
	err := a.st.RevokeSession(ctx, auth.User{Issuer: u.Issuer, Subject: u.Subject}, id, reason)
	if errors.Is(err, auth.ErrSessionNotFound) {
		return api.ErrSessionNotFound
	}
	return err
}

// Replayer is ingest.Replay for the API: the same target lookup
// (ingest.ReplayTargetFor over providers) and transaction as `gatehouse
// replay`.
func Replayer(pool *pgxpool.Pool, providers map[string]*config.Provider) api.Replayer {
	return replayer{pool: pool, providers: providers}
}

type replayer struct {
	pool      *pgxpool.Pool
	providers map[string]*config.Provider
}

func (r replayer) Replay(ctx context.Context, provider, eventID string, force bool, by string) (api.ReplayOutcome, error) {
	target, err := ingest.ReplayTargetFor(r.providers, provider)
	if err != nil {
		return api.ReplayOutcome{}, errors.Join(api.ErrProviderNotConfigured, err)
	}
	res, err := ingest.Replay(ctx, r.pool, target, ingest.ReplayRequest{Provider: provider, EventID: eventID, Force: force, RequestedBy: by})
	switch {
	case errors.Is(err, ingest.ErrNotFound):
		return api.ReplayOutcome{}, errors.Join(api.ErrEventNotFound, err)
	case errors.Is(err, ingest.ErrNotReplayable):
		return api.ReplayOutcome{}, errors.Join(api.ErrNotReplayable, err)
	case err != nil:
		return api.ReplayOutcome{}, err
	}
	return api.ReplayOutcome{OutboxID: res.OutboxID.String(), PreviousState: res.PreviousState}, nil
}
