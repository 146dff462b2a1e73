package main

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/gatehouse/gatehouse/api"
	"github.com/gatehouse/gatehouse/api/console"
	"github.com/gatehouse/gatehouse/auth"
	"github.com/gatehouse/gatehouse/auth/bearer"
	"github.com/gatehouse/gatehouse/ingest"
	"github.com/gatehouse/gatehouse/ingest/inbox"
	"github.com/gatehouse/gatehouse/ingest/relay"
	"github.com/gatehouse/gatehouse/ingest/upkeep"
	"github.com/gatehouse/gatehouse/internal/config"
	"github.com/gatehouse/gatehouse/internal/httpx"
	"github.com/gatehouse/gatehouse/wiring"
)

// gatehouse's whole HTTP surface. Each stage defines its handlers; this
// file decides what is mounted, in which order, on which listener.
//
// Public listener (listen):
//
//	POST /webhooks/{provider}                    ingest: the webhook receiver (GET for the meta and dropbox
//	                                             handshakes; 405 with Allow otherwise)
//	GET  /  /signin  /login  /callback  /account  auth: browser sign-in and the account page (auth.issuer set)
//	POST /logout  /account/sessions/{id}/revoke  /account/sessions/revoke-all
//	                                             auth: CSRF-protected session actions
//	POST /backchannel-logout                     auth: OIDC back-channel logout from the OP
//	POST /operator/v1/revoke-user                auth: operator token (auth.operator_token)
//	GET  /api/v1/openapi.yaml                    api: the contract
//	GET  /api/v1/sessions  DELETE /api/v1/sessions/{id}
//	GET  /api/v1/events  /api/v1/events/{provider}/{event_id}
//	POST /api/v1/events/search  /api/v1/events/{provider}/{event_id}/replay
//	GET  /api/v1/issues  /api/v1/issues/{id}
//	POST /api/v1/issues/{id}/status  /api/v1/issues/{id}/replay
//	GET  /api/v1/parked  POST /api/v1/parked/release
//	POST /api/v1/erasures
//	GET  /api/v1/objects  /api/v1/objects/{provider}/{object_id}
//	                                             api: bearer tokens or the session cookie
//	GET  /console/  /console/overview.json  /console/events  /console/events/{provider}/{event_id}
//	GET  /console/dead  /console/parked  /console/issues  /console/issues/{id}  /console/charts  /console/static/*
//	POST /console/events                         console: operators' pages (session cookie, auth.issuer set;
//	                                             the events form posts its search)
//
// A test (routes_test.go) holds this map to the routes the router serves.
//
// Admin listener (admin_listen), every long-running subcommand:
//
//	GET /metrics  /healthz  /readyz              internal/obs (adminServer)

// surface is the public router with the work that runs behind it.
type surface struct {
	router chi.Router
	// background runs until ctx ends (the auth stage's token revocation
	// loop); the caller joins it.
	background []func(ctx context.Context) error
	close      func() // releases the receiver's Writer, after the server stopped
}

// publicSurface mounts every public stage: the webhook receiver always,
// login and the API when configured. One session store serves both.
func publicSurface(ctx context.Context, b *base) (*surface, error) {
	r := chi.NewRouter()
	r.Use(unknownMethods(r))
	// One Writer worker: one statement in flight, everything arriving
	// meanwhile goes into the next (up to 64 rows), taken one provider at a
	// time in turn. Measured on a quiet machine against four workers
	// (docs/BENCHMARKS.md, "Webhook receiver"): on a disk whose commit
	// takes 0.4 ms, PostgreSQL's CPU per statement, not the flush, is the
	// cost, and one worker acked 1.9 × the events at 4 connections and
	// 1.3–1.7 × at 16 (3 025 against 1 570/s, 5 883 against 4 387/s).
	w, err := inbox.NewWriter(b.pool, 1, 64)
	if err != nil {
		return nil, err
	}
	s := &surface{router: r, close: w.Close}
	// The open failure issues, read from the table: exported even when the
	// API is not mounted, so GatehouseFailureIssueOpen can fire.
	b.reg.MustRegister(api.NewIssuesOpenCollector(b.pool))
	fail := func(err error) (*surface, error) { w.Close(); return nil, err }
	w.SetTracer(b.tp)
	// Ingest's upkeep (docs/STORAGE.md): the console's charts
	// (pipeline_minutes), the replay guard's sweeper, the storage passes and
	// the key filters of sealed key partitions, one Run in the background.
	uc := wiring.IngestUpkeep(b.cfg)
	uc.Pool, uc.Logger, uc.Registerer = b.pool, b.log, b.reg
	uc.RelayOldest = func(ctx context.Context) (*time.Time, error) {
		_, oldest, err := relay.Backlog(ctx, b.pool)
		return oldest, err
	}
	up, err := upkeep.New(uc)
	if err != nil {
		return fail(err)
	}
	ic := wiring.Receiver(b.cfg)
	ic.Writer, ic.Logger, ic.Registerer, ic.Tracer, ic.Rollup = w, b.log, b.reg, b.tp, up.Rollup()
	rcv, err := ingest.New(ic)
	if err != nil {
		return fail(err)
	}
	rcv.Routes(r)
	// One storage pass before serving, so the current partitions exist
	// after a long stop. Bounded: a drop's detach waits for older
	// transactions, and serving must not wait for it (an interrupted
	// detach is finished later).
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	if err := up.Pass(pctx); err != nil {
		b.log.Warn("storage maintenance", "stage", "ingest", "err", err)
	}
	cancel()
	s.background = append(s.background, up.Run)
	// Reconciliation of the providers with reconcile.enabled (docs/PROVIDERS.md
	// "Reconciliation"), each pass under the provider's advisory lock.
	runs, err := scheduledReconcile(b, w)
	if err != nil {
		return fail(err)
	}
	s.background = append(s.background, runs...)
	var store *auth.Store
	if b.cfg.Auth.Enabled() {
		if store, err = auth.NewStore(auth.StoreConfig{Pool: b.pool, Auth: auth.SettingsOf(&b.cfg.Auth), Logger: b.log}); err != nil {
			return fail(err)
		}
		svc, err := auth.New(ctx, auth.Config{Auth: auth.SettingsOf(&b.cfg.Auth), Store: store, Logger: b.log, Registerer: b.reg, Home: operatorHome(b.cfg)})
		if err != nil {
			return fail(err)
		}
		svc.Routes(r)
		s.background = append(s.background, svc.Run)
	}
	if err := mountAPI(b, r, store); err != nil {
		return fail(err)
	}
	if store != nil {
		con, err := console.New(console.Config{Pool: b.pool, Sessions: api.AuthSessions(store), Operators: b.cfg.API.Operators,
			Logger: b.log.With("component", "console"), TraceURL: b.cfg.Tracing.UIURL, SearchIndexed: api.SearchIndexed(wiring.APIProviders(b.cfg))})
		if err != nil {
			return fail(err)
		}
		con.Routes(r)
	}
	return s, nil
}

// mountAPI mounts /api/v1 when bearer tokens are configured (api.audience
// and api.issuers) or browser login is (store not nil); otherwise it does
// nothing.
func mountAPI(b *base, r chi.Router, store *auth.Store) error {
	ac, targets := &b.cfg.API, wiring.ReplayTargets(b.cfg)
	cfg := api.Config{
		API: *ac, Pool: b.pool, Providers: wiring.APIProviders(b.cfg),
		Replayer: api.TracedIngestReplayer(b.pool, targets, b.tp),
		Eraser:   api.IngestEraser(b.pool, targets, erasureAuditKey(b.cfg)),
		Logger:   b.log.With("component", "api"), Registerer: b.reg,
	}
	if ac.BearerEnabled() {
		bc := bearer.ConfigOf(ac)
		bc.Logger, bc.Registerer = b.log.With("component", "bearer"), b.reg
		if b.cfg.Auth.ClientID != "" {
			bc.IDTokenAudiences = append(bc.IDTokenAudiences, b.cfg.Auth.ClientID)
		}
		v, err := bearer.New(bc)
		if err != nil {
			return fmt.Errorf("api: %w", err)
		}
		cfg.Verifier = v
	}
	if store != nil {
		cfg.Sessions = api.AuthSessions(store)
	}
	if cfg.Verifier == nil && cfg.Sessions == nil {
		return nil
	}
	srv, err := api.New(cfg)
	if err != nil {
		return err
	}
	srv.Routes(r)
	b.log.Info("api mounted", "prefix", api.Prefix, "bearer", cfg.Verifier != nil, "sessions", cfg.Sessions != nil)
	return nil
}

// unknownMethods answers a request method chi does not know (QUERY, FOO…)
// as RFC 9110 wants a 405 answered: with an Allow header listing the
// methods the path does serve (404 when it serves none). chi's own answer
// to such a method is a 405 without Allow.
func unknownMethods(mux chi.Router) func(http.Handler) http.Handler {
	all := len(httpx.Methods())
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if httpx.Standard(r.Method) {
				next.ServeHTTP(w, r)
				return
			}
			switch allow := httpx.Allowed(mux, r.URL.Path); len(allow) {
			case 0:
				http.NotFound(w, r)
			case all: // a handler of every method answers for itself (the receiver: 405, Allow: POST)
				next.ServeHTTP(w, r)
			default:
				httpx.MethodNotAllowed(w, allow...)
			}
		})
	}
}

// operatorHome sends a signed-in operator (api.operators) from / to the
// console; anyone else to the account page.
func operatorHome(cfg *config.Config) func(auth.User) string {
	return func(u auth.User) string {
		for _, op := range cfg.API.Operators {
			if op.Issuer == u.Issuer && op.Subject == u.Subject {
				return "/console/"
			}
		}
		return ""
	}
}
