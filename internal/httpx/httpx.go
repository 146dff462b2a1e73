// Package httpx holds the HTTP answers several surfaces share: the 405
// Method Not Allowed with the Allow header RFC 9110 §15.5.6 requires, and
// the methods a chi router serves at a path.
package httpx

import (
	"net/http"
	"slices"
	"strings"

	"github.com/go-chi/chi/v5"
)

// standard are the request methods of RFC 9110 §9 and PATCH (RFC 5789), in
// the order an Allow header lists them.
var standard = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
	http.MethodDelete, http.MethodConnect, http.MethodOptions, http.MethodTrace}

// Standard reports whether method is one of the standard request methods
// (an unknown one, QUERY or FOO, is not).
func Standard(method string) bool { return slices.Contains(standard, method) }

// Methods returns the standard request methods, in Allow header order.
func Methods() []string { return slices.Clone(standard) }

// Allowed lists the standard methods routes has an endpoint for at path (a
// path relative to routes, as chi's RoutePath holds it inside a
// sub-router), in Allow header order; nil when it serves none.
func Allowed(routes chi.Routes, path string) []string {
	var out []string
	for _, m := range standard {
		if routes.Match(chi.NewRouteContext(), m, path) {
			out = append(out, m)
		}
	}
	return out
}

// SetAllow sets the Allow header to the methods given, comma-separated.
func SetAllow(w http.ResponseWriter, allow ...string) {
	w.Header().Set("Allow", strings.Join(allow, ", "))
}

// MethodNotAllowed answers 405 with the Allow header listing allow and a
// plain-text body "method not allowed". A surface whose errors have a body
// of their own (the API's JSON) calls SetAllow and writes its own.
func MethodNotAllowed(w http.ResponseWriter, allow ...string) {
	SetAllow(w, allow...)
	http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
}
