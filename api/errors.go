package api

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gatehouse/gatehouse/auth/bearer"
)

var (
	// errNotFound answers a resource that does not exist OR belongs to
	// someone else: the API never reveals another person's resources, so
	// both are 404.
	errNotFound = errors.New("not found")
	errNoRoute  = errors.New("no such route")
	errMethod   = errors.New("method not allowed")
	// errParkedNotHeld: a release of a parked key that is not held.
	errParkedNotHeld = errors.New("parked key not held")
)

// badRequest is a 400 invalid_request with a description for the caller.
type badRequest string

func (b badRequest) Error() string { return string(b) }

// writeError is the one table mapping domain errors to HTTP answers:
//
//	*bearer.Error                → its status (400 invalid_request, 401 invalid_token
//	                               or no credentials, 403 insufficient_scope, 503)
//	                               with the RFC 6750 WWW-Authenticate challenge
//	errCSRF                      → 403 csrf_required
//	errNotOperator               → 403 forbidden
//	badRequest                   → 400 invalid_request
//	errNotFound, errNoRoute      → 404 not_found
//	errConflict                  → 409 conflict
//	errUnconfigured              → 409 conflict (the event's provider is not configured)
//	errParkedNotHeld             → 409 conflict (the parked key is not held)
//	errMethod                    → 405 method_not_allowed
//	errNoReplayer                → 503 temporarily_unavailable
//	a read past its ReadTimeout  → 503 temporarily_unavailable with Retry-After
//	anything else                → 500 server_error (logged)
func writeError(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) {
	var (
		be *bearer.Error
		br badRequest
	)
	switch {
	case errors.As(err, &be):
		bearer.WriteError(w, be)
	case errors.Is(err, errCSRF):
		writeJSONError(w, http.StatusForbidden, "csrf_required", `state-changing browser requests must send the header "X-CSRF: 1"`)
	case errors.Is(err, errNotOperator):
		writeJSONError(w, http.StatusForbidden, "forbidden", "the operator role is required")
	case errors.As(err, &br):
		writeJSONError(w, http.StatusBadRequest, bearer.CodeInvalidRequest, string(br))
	case errors.Is(err, errNotFound), errors.Is(err, errNoRoute):
		writeJSONError(w, http.StatusNotFound, "not_found", "no such resource")
	case errors.Is(err, errUnconfigured):
		writeJSONError(w, http.StatusConflict, "conflict", "the event's provider is not configured: nothing would consume its topic")
	case errors.Is(err, errParkedNotHeld):
		writeJSONError(w, http.StatusConflict, "conflict", "the parked key is not held: its head event is still being retried, or its events are going out")
	case errors.Is(err, errConflict):
		writeJSONError(w, http.StatusConflict, "conflict", "the event is final, in processing or unverified; replay with force=true to process it again")
	case errors.Is(err, errNoReplayer):
		writeJSONError(w, http.StatusServiceUnavailable, "temporarily_unavailable", "replay is not available on this server")
	case errors.Is(err, errMethod):
		writeJSONError(w, http.StatusMethodNotAllowed, "method_not_allowed", "method not allowed on this resource")
	case readTimeoutOf(r, err) > 0:
		d := readTimeoutOf(r, err)
		log.Warn("api read timed out", "path", r.URL.Path, "timeout", d)
		writeReadTimeout(w, d)
	default:
		log.Error("api internal error", "path", r.URL.Path, "error", err)
		writeJSONError(w, http.StatusInternalServerError, "server_error", "internal error")
	}
}

// fail answers err through writeError, logging internal errors.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	writeError(w, r, s.cfg.Logger, err)
}

func writeJSONError(w http.ResponseWriter, status int, code, desc string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": code, "error_description": desc})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

type metrics struct {
	auth   *prometheus.CounterVec
	denied *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		auth: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gatehouse_api_authentications_total",
			Help: "API authentications by method (bearer, session, none) and result.",
		}, []string{"method", "result"}),
		denied: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gatehouse_api_denied_total",
			Help: "Authenticated API calls refused, by reason (scope, role).",
		}, []string{"reason"}),
	}
	if reg != nil {
		reg.MustRegister(m.auth, m.denied)
	}
	return m
}
