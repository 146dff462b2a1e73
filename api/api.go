// Package api is gatehouse's own HTTP API under /api/v1, an OAuth 2.0
// resource server: machine clients present bearer access tokens (checked by
// auth/bearer), the browser presents its session cookie (backend-for-frontend),
// and every call checks both the scope (what the client may do) and the
// caller's role or ownership (what the person may do). Its inbox queries
// are one read model (inbox.go) that the operator's console (api/console)
// answers too; stages.go adapts the login stage's sessions and ingest's
// replay to the API's small interfaces.
package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/gatehouse/gatehouse/auth/bearer"
	"github.com/gatehouse/gatehouse/internal/settings"
)

// Prefix is where the API is mounted.
const Prefix = "/api/v1"

// Scopes the API knows.
const (
	ScopeSessionsRead  = "sessions:read"
	ScopeSessionsWrite = "sessions:write"
	ScopeEventsRead    = "events:read"
	ScopeEventsReplay  = "events:replay"
	ScopeEventsErase   = "events:erase"
	ScopeObjectsRead   = "objects:read"
)

// AllScopes are granted to the browser's own session: gatehouse's frontend
// is first-party, so only the person's roles and ownership limit it.
var AllScopes = []string{ScopeSessionsRead, ScopeSessionsWrite, ScopeEventsRead, ScopeEventsReplay, ScopeEventsErase, ScopeObjectsRead}

// TokenVerifier checks a bearer token (auth/bearer.Verifier).
type TokenVerifier interface {
	Verify(ctx context.Context, token string) (*bearer.Principal, error)
}

// Provider is what the API reads of a configured provider: the owner
// mapping of its objects (OwnerPath, a dotted path into the object whose
// value is "<issuer> <subject>", or a subject under OwnerIssuer; "" maps
// no owner) and whether its payloads are indexed for search.
type Provider struct {
	OwnerPath, OwnerIssuer string
	SearchIndexed          bool
}

// User is a person: the pair (issuer, subject).
type User = settings.APIOperator

// Session is a browser session as the session store describes it. ID is a
// public handle, never the cookie value.
type Session struct {
	ID         string
	Device     string
	CreatedAt  time.Time
	LastSeenAt time.Time
	ExpiresAt  time.Time
}

// Errors a SessionStore returns.
var (
	// ErrNoSession: the request has no live session cookie.
	ErrNoSession = errors.New("api: no session")
	// ErrSessionNotFound: no live session with that id belongs to the user.
	ErrSessionNotFound = errors.New("api: session not found")
)

// SessionStore is what the API needs of the browser session store (the
// login stage's auth.Store, adapted in cmd/gatehouse).
type SessionStore interface {
	// SessionFromRequest resolves the request's session cookie to the session
	// id and its user; ErrNoSession when there is none.
	SessionFromRequest(r *http.Request) (id string, u User, err error)
	// ListSessions lists the user's live sessions.
	ListSessions(ctx context.Context, u User) ([]Session, error)
	// RevokeSession revokes one of the user's sessions; ErrSessionNotFound
	// when id is not a live session of u.
	RevokeSession(ctx context.Context, u User, id, reason string) error
}

// Errors a Replayer returns (wrapped with the cause).
var (
	// ErrEventNotFound: no inbox row for the event.
	ErrEventNotFound = errors.New("api: event not found")
	// ErrNotReplayable: unverified, or final or in flight without force.
	ErrNotReplayable = errors.New("api: event cannot be replayed in its state")
	// ErrProviderNotConfigured: the event's provider is no longer configured.
	ErrProviderNotConfigured = errors.New("api: event's provider is not configured")
	// ErrNotDead (an ErrNotReplayable): ReplayDead of an event no longer dead.
	ErrNotDead = fmt.Errorf("%w: no longer dead", ErrNotReplayable)
)

// ReplayOutcome is what a replay did.
type ReplayOutcome struct {
	OutboxID      string
	PreviousState string
}

// Replayer re-enqueues a stored, verified event through the outbox (ingest's
// replay, adapted in cmd/gatehouse, the same transaction `gatehouse replay`
// runs). It returns ErrEventNotFound, ErrNotReplayable or
// ErrProviderNotConfigured, wrapped, for the refusals.
type Replayer interface {
	Replay(ctx context.Context, provider, eventID string, force bool, requestedBy string) (ReplayOutcome, error)
	// ReplayDead is Replay of an event only while it is dead, checked in
	// the replay's transaction (a failure issue's replay): an event no
	// longer dead is ErrNotDead (wrapping ErrNotReplayable).
	ReplayDead(ctx context.Context, provider, eventID, requestedBy string) (ReplayOutcome, error)
}

// Config configures the API.
type Config struct {
	// API is the api section (docs/CONFIG.md, api.*) as the configuration
	// declares it: the operators (issuer, subject pairs allowed to read
	// and replay events), the operator role a bearer token may carry, the
	// read timeout (a read request's query is cancelled when it runs out,
	// the answer is 503 with Retry-After: readbound.go) and the span of an
	// indexed search page (Inbox.SearchSpan). New applies its defaults.
	settings.API
	// Verifier checks bearer tokens; nil means bearer tokens are not accepted
	// (every Authorization header is then answered 401 invalid_token).
	Verifier TokenVerifier
	// Sessions resolves browser sessions and lists/revokes them; nil means
	// no cookie access and the /sessions endpoints answer 404 for everyone.
	Sessions SessionStore
	// Pool is the database the API reads (inbox, provider_objects). Required.
	Pool *pgxpool.Pool
	// Replayer re-enqueues events; nil answers every replay 503.
	Replayer Replayer
	// Eraser erases stored payloads (POST /erasures); nil answers 503.
	Eraser Eraser
	// Providers are the configured webhook providers, by name: the owner
	// mapping of their objects and how their payloads are searched.
	Providers map[string]Provider
	// Logger nil: slog.Default(). Registerer nil: metrics are not registered
	// (the rule of every stage's Config). Now defaults to time.Now.
	Logger     *slog.Logger
	Registerer prometheus.Registerer
	Now        func() time.Time
}

// Server serves the API.
type Server struct {
	cfg       Config
	inbox     Inbox
	operators map[[2]string]bool
	m         *metrics
}

// New returns a Server. It fails without a pool.
func New(cfg Config) (*Server, error) {
	if cfg.Pool == nil {
		return nil, errors.New("api: nil pool")
	}
	cfg.API.ApplyDefaults()
	inbox := Inbox{Pool: cfg.Pool, SearchIndexed: SearchIndexed(cfg.Providers), SearchSpan: cfg.SearchSpan}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	s := &Server{cfg: cfg, inbox: inbox, operators: map[[2]string]bool{}, m: newMetrics(cfg.Registerer)}
	for _, op := range cfg.Operators {
		s.operators[[2]string{op.Issuer, op.Subject}] = true
	}
	return s, nil
}

// Routes mounts the API under Prefix on r.
func (s *Server) Routes(r chi.Router) {
	r.Route(Prefix, func(r chi.Router) {
		r.Get("/openapi.yaml", serveOpenAPI)
		r.Group(func(r chi.Router) {
			r.Use(s.authenticate, s.boundReads)
			r.With(s.require(ScopeSessionsRead)).Get("/sessions", s.listSessions)
			r.With(s.require(ScopeSessionsWrite)).Delete("/sessions/{id}", s.revokeSession)
			r.With(s.require(ScopeEventsRead), s.operatorOnly).Get("/events", s.listEvents)
			r.With(s.require(ScopeEventsRead), s.operatorOnly).Post("/events/search", s.searchEvents)
			r.With(s.require(ScopeEventsRead), s.operatorOnly).Get("/events/{provider}/{event_id}", s.getEvent)
			r.With(s.require(ScopeEventsReplay), s.operatorOnly).Post("/events/{provider}/{event_id}/replay", s.replayEvent)
			r.With(s.require(ScopeEventsRead), s.operatorOnly).Get("/issues", s.listIssues)
			r.With(s.require(ScopeEventsRead), s.operatorOnly).Get("/issues/{id}", s.getIssue)
			r.With(s.require(ScopeEventsReplay), s.operatorOnly).Post("/issues/{id}/status", s.setIssueStatus)
			r.With(s.require(ScopeEventsReplay), s.operatorOnly).Post("/issues/{id}/replay", s.replayIssue)
			r.With(s.require(ScopeEventsRead), s.operatorOnly).Get("/parked", s.listParked)
			r.With(s.require(ScopeEventsReplay), s.operatorOnly).Post("/parked/release", s.releaseParked)
			r.With(s.require(ScopeEventsErase), s.operatorOnly).Post("/erasures", s.erase)
			r.With(s.require(ScopeObjectsRead)).Get("/objects", s.listObjects)
			r.With(s.require(ScopeObjectsRead)).Get("/objects/{provider}/{object_id}", s.getObject)
		})
		r.NotFound(func(w http.ResponseWriter, r *http.Request) { s.fail(w, r, errNoRoute) })
		r.MethodNotAllowed(s.methodNotAllowed(r))
	})
}
