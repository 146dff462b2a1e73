package api

import (
	"context"
	"errors"
	"net/http"
	"slices"

	"github.com/gatehouse/gatehouse/auth/bearer"
)

// Caller is the authenticated party of one API request.
type Caller struct {
	// User is the person: (issuer, subject).
	User User
	// Via is "bearer" or "session".
	Via string
	// Scopes are what the client may do (all scopes for the browser session).
	Scopes []string
	// Operator is true for configured operators and holders of the operator role.
	Operator bool
	// SessionID is the browser session's public id (Via "session" only).
	SessionID string
	// ClientID is the OAuth client the token was issued to (Via "bearer").
	ClientID string
}

type callerKey struct{}

// CallerFrom returns the request's caller, nil before authentication.
func CallerFrom(ctx context.Context) *Caller {
	c, _ := ctx.Value(callerKey{}).(*Caller)
	return c
}

// CSRFHeader must be "1" on unsafe cookie-authenticated requests.
const CSRFHeader = "X-CSRF"

// errCSRF refuses a cookie-authenticated unsafe request without X-CSRF: 1.
var errCSRF = errors.New("csrf header required")

// authenticate establishes the Caller. An Authorization header (or a token
// in the query or a form body, which is refused) means bearer
// authentication and nothing else: a cookie sent along is ignored. Without
// one, the browser's session cookie is used; unsafe methods then need the
// header "X-CSRF: 1". Neither → 401 with the bare Bearer challenge.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, err := bearer.TokenFromRequest(r)
		switch {
		case err == nil:
			s.serveBearer(w, r, token, next)
			return
		case !errors.Is(err, bearer.ErrNoCredentials):
			s.m.auth.WithLabelValues("bearer", "invalid_request").Inc()
			s.fail(w, r, err)
			return
		case len(r.Header.Values("Authorization")) > 0:
			// Another scheme (Basic, DPoP…): not credentials this API accepts.
			s.m.auth.WithLabelValues("bearer", "no_credentials").Inc()
			s.fail(w, r, err)
			return
		}
		if s.cfg.Sessions != nil {
			sid, user, serr := s.cfg.Sessions.SessionFromRequest(r)
			if serr == nil {
				if !safeMethod(r.Method) && r.Header.Get(CSRFHeader) != "1" {
					s.m.auth.WithLabelValues("session", "csrf").Inc()
					s.fail(w, r, errCSRF)
					return
				}
				c := &Caller{
					User: user, Via: "session", Scopes: AllScopes, SessionID: sid,
					Operator: s.operators[[2]string{user.Issuer, user.Subject}],
				}
				s.m.auth.WithLabelValues("session", "ok").Inc()
				next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), callerKey{}, c)))
				return
			}
			if !errors.Is(serr, ErrNoSession) {
				s.fail(w, r, serr)
				return
			}
		}
		s.m.auth.WithLabelValues("none", "no_credentials").Inc()
		s.fail(w, r, bearer.ErrNoCredentials)
	})
}

func (s *Server) serveBearer(w http.ResponseWriter, r *http.Request, token string, next http.Handler) {
	if s.cfg.Verifier == nil {
		s.m.auth.WithLabelValues("bearer", "invalid_token").Inc()
		s.fail(w, r, &bearer.Error{Status: http.StatusUnauthorized, Code: bearer.CodeInvalidToken, Description: "bearer tokens are not accepted by this server"})
		return
	}
	p, err := s.cfg.Verifier.Verify(r.Context(), token)
	if err != nil {
		var e *bearer.Error
		code := "invalid_token"
		if errors.As(err, &e) && e.Code != "" {
			code = e.Code
		}
		s.m.auth.WithLabelValues("bearer", code).Inc()
		s.cfg.Logger.Info("bearer token refused", "reason", errDescription(err), "path", r.URL.Path)
		s.fail(w, r, err)
		return
	}
	c := &Caller{
		User: User{Issuer: p.Issuer, Subject: p.Subject}, Via: "bearer",
		Scopes: p.Scopes, ClientID: p.ClientID,
		Operator: s.operators[[2]string{p.Issuer, p.Subject}] || p.HasRole(s.cfg.OperatorRole),
	}
	s.m.auth.WithLabelValues("bearer", "ok").Inc()
	next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), callerKey{}, c)))
}

func errDescription(err error) string {
	var e *bearer.Error
	if errors.As(err, &e) {
		return e.Description
	}
	return "token rejected"
}

func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

// require refuses a caller whose scopes lack scope: 403 insufficient_scope
// with the scope named (RFC 6750 §3.1).
func (s *Server) require(scope string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			c := CallerFrom(r.Context())
			if c == nil || !slices.Contains(c.Scopes, scope) {
				s.m.denied.WithLabelValues("scope").Inc()
				s.fail(w, r, bearer.InsufficientScope(scope))
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// errNotOperator refuses a caller that is not an operator (403).
var errNotOperator = errors.New("operator role required")

// operatorOnly refuses callers that are not operators.
func (s *Server) operatorOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c := CallerFrom(r.Context()); c == nil || !c.Operator {
			s.m.denied.WithLabelValues("role").Inc()
			s.fail(w, r, errNotOperator)
			return
		}
		next.ServeHTTP(w, r)
	})
}
