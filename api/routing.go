package api

import (
	"net/http"
	"net/url"

	"github.com/go-chi/chi/v5"

	"github.com/gatehouse/gatehouse/internal/httpx"
)

// pathParam is chi.URLParam decoded. chi routes on r.URL.RawPath when the
// path has escapes the default encoding would not produce (an event id
// "e/1" arrives as "e%2F1" and must stay one segment), and then its
// parameters are still escaped; when RawPath is empty chi routed on the
// decoded r.URL.Path and the value is already final (decoding it again
// would turn a literal "%41" into "A").
func pathParam(r *http.Request, name string) string {
	v := chi.URLParam(r, name)
	if r.URL.RawPath == "" {
		return v
	}
	if u, err := url.PathUnescape(v); err == nil {
		return u
	}
	return v
}

// methodNotAllowed answers 405 with the Allow header RFC 9110 §15.5.6
// requires, computed from routes; a path no method serves is 404.
func (s *Server) methodNotAllowed(routes chi.Routes) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		path := "/"
		if rctx := chi.RouteContext(r.Context()); rctx != nil && rctx.RoutePath != "" {
			path = rctx.RoutePath
		}
		allow := httpx.Allowed(routes, path)
		if len(allow) == 0 {
			s.fail(w, r, errNoRoute)
			return
		}
		httpx.SetAllow(w, allow...) // the body is the API's own (errMethod)
		s.fail(w, r, errMethod)
	}
}
