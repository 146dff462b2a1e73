package api

// The adapters from the stages the API serves to its own small interfaces:
// the login stage's sessions and ingest's replay, with their errors mapped
// to api's. cmd wires them; the API's tests use the same ones. (The API is
// an HTTP surface over the stages, not a stage: it may import them; the
// stages never import it or each other.)

import (
	"context"
	"errors"
	"go.opentelemetry.io/otel/trace"
	"net/http"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gatehouse/gatehouse/auth"
	"github.com/gatehouse/gatehouse/ingest/admin"
)

// AuthSessions adapts the login stage's *auth.Store to SessionStore.
func AuthSessions(st *auth.Store) SessionStore { return sessionStore{st} }

type sessionStore struct{ st *auth.Store }

func (a sessionStore) SessionFromRequest(r *http.Request) (string, User, error) {
	s, err := a.st.SessionFromRequest(r)
	if errors.Is(err, auth.ErrNoSession) {
		return "", User{}, ErrNoSession
	}
	if err != nil {
		return "", User{}, err
	}
	return s.ID, User{Issuer: s.User.Issuer, Subject: s.User.Subject}, nil
}

// DisplayName is how the console names the request's signed-in user: the
// name, else the e-mail address the OP gave at sign-in, else "" (the
// console then shows the subject).
func (a sessionStore) DisplayName(r *http.Request) string {
	s, err := a.st.SessionFromRequest(r)
	if err != nil {
		return ""
	}
	if s.Name != "" {
		return s.Name
	}
	return s.Email
}

func (a sessionStore) ListSessions(ctx context.Context, u User) ([]Session, error) {
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

func (a sessionStore) RevokeSession(ctx context.Context, u User, id, reason string) error {
	err := a.st.RevokeSession(ctx, auth.User{Issuer: u.Issuer, Subject: u.Subject}, id, reason)
	if errors.Is(err, auth.ErrSessionNotFound) {
		return ErrSessionNotFound
	}
	return err
}

// IngestReplayer is admin.Replay for the API: the same target lookup
// (admin.ReplayTargetFor over targets, the configured providers' own:
// wiring.ReplayTargets) and transaction as `gatehouse replay`.
func IngestReplayer(pool *pgxpool.Pool, targets map[string]admin.ReplayTarget) Replayer {
	return ingestReplayer{pool: pool, targets: targets}
}

// TracedIngestReplayer is IngestReplayer with each replay traced by tp (a
// new trace linked to the original delivery; internal/tracing).
func TracedIngestReplayer(pool *pgxpool.Pool, targets map[string]admin.ReplayTarget, tp trace.TracerProvider) Replayer {
	return ingestReplayer{pool: pool, targets: targets, tracer: tp}
}

type ingestReplayer struct {
	pool    *pgxpool.Pool
	targets map[string]admin.ReplayTarget
	tracer  trace.TracerProvider
}

func (r ingestReplayer) Replay(ctx context.Context, provider, eventID string, force bool, by string) (ReplayOutcome, error) {
	return r.replay(ctx, admin.ReplayRequest{Provider: provider, EventID: eventID, Force: force, RequestedBy: by, Tracer: r.tracer})
}

func (r ingestReplayer) ReplayDead(ctx context.Context, provider, eventID, by string) (ReplayOutcome, error) {
	return r.replay(ctx, admin.ReplayRequest{Provider: provider, EventID: eventID, OnlyDead: true, RequestedBy: by, Tracer: r.tracer})
}

func (r ingestReplayer) replay(ctx context.Context, req admin.ReplayRequest) (ReplayOutcome, error) {
	target, err := admin.ReplayTargetFor(r.targets, req.Provider)
	if err != nil {
		return ReplayOutcome{}, errors.Join(ErrProviderNotConfigured, err)
	}
	res, err := admin.Replay(ctx, r.pool, target, req)
	switch {
	case errors.Is(err, admin.ErrNotDead):
		return ReplayOutcome{}, errors.Join(ErrNotDead, err)
	case errors.Is(err, admin.ErrNotFound):
		return ReplayOutcome{}, errors.Join(ErrEventNotFound, err)
	case errors.Is(err, admin.ErrNotReplayable):
		return ReplayOutcome{}, errors.Join(ErrNotReplayable, err)
	case err != nil:
		return ReplayOutcome{}, err
	}
	return ReplayOutcome{OutboxID: res.OutboxID.String(), PreviousState: res.PreviousState}, nil
}
