package auth

import (
	"net/http"
	"net/url"
	"strings"
)

// CSRFHeader is the custom request header a script sets on state-changing
// calls ("X-CSRF: 1"); a cross-site form cannot set it without a CORS
// preflight, which gatehouse never grants.
const CSRFHeader = "X-CSRF"

// CheckCSRF reports whether a state-changing browser request may proceed: it
// carries "X-CSRF: 1", or its Origin header equals origin (scheme://host[:port],
// e.g. "https://app.example.com"), or - when a browser sent no Origin -
// Sec-Fetch-Site is "same-origin". This is on top of the session cookie's
// SameSite=Lax.
func CheckCSRF(r *http.Request, origin string) bool {
	if r.Header.Get(CSRFHeader) == "1" {
		return true
	}
	if o := r.Header.Get("Origin"); o != "" {
		return o != "null" && strings.EqualFold(o, origin)
	}
	return r.Header.Get("Sec-Fetch-Site") == "same-origin"
}

// RequireCSRF wraps next with CheckCSRF for every method except GET, HEAD and
// OPTIONS; a refused request gets 403.
func RequireCSRF(origin string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
		default:
			if !CheckCSRF(r, origin) {
				http.Error(w, "cross-site request refused: send the header X-CSRF: 1 or use a same-origin form", http.StatusForbidden)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// OriginOf returns scheme://host[:port] of an absolute URL ("" if invalid).
func OriginOf(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return ""
	}
	return u.Scheme + "://" + u.Host
}
