package bearer

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
)

// Realm is the realm of every WWW-Authenticate challenge gatehouse sends.
const Realm = "gatehouse"

// RFC 6750 error codes.
const (
	CodeInvalidRequest    = "invalid_request"
	CodeInvalidToken      = "invalid_token"
	CodeInsufficientScope = "insufficient_scope"
)

// Error is an RFC 6750 answer: the HTTP status, the error code (empty when
// the request carried no credentials at all), a description safe to show
// (it never contains the token) and, for insufficient_scope, the scope needed.
type Error struct {
	Status      int
	Code        string
	Description string
	Scope       string
	cause       error
}

func (e *Error) Error() string {
	if e.Code == "" {
		return "no bearer credentials"
	}
	if e.cause != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Description, e.cause)
	}
	return e.Code + ": " + e.Description
}

func (e *Error) Unwrap() error { return e.cause }

// ErrNoCredentials is returned by TokenFromRequest when the request carries
// no Authorization header or one with another scheme (401, no error code).
var ErrNoCredentials = &Error{Status: http.StatusUnauthorized}

// ErrUnavailable-style errors (503) are returned when keys or introspection
// cannot be reached; the token was neither accepted nor found bad.
func unavailable(desc string, cause error) *Error {
	return &Error{Status: http.StatusServiceUnavailable, Code: "temporarily_unavailable", Description: desc, cause: cause}
}

func invalidToken(desc string) *Error {
	return &Error{Status: http.StatusUnauthorized, Code: CodeInvalidToken, Description: desc}
}

func invalidRequest(desc string) *Error {
	return &Error{Status: http.StatusBadRequest, Code: CodeInvalidRequest, Description: desc}
}

// InsufficientScope is the 403 answer for a valid token lacking scope.
func InsufficientScope(scope string) *Error {
	return &Error{Status: http.StatusForbidden, Code: CodeInsufficientScope,
		Description: "the token lacks the scope " + scope, Scope: scope}
}

// maxFormBytes bounds how much of a form body is read to look for a token.
const maxFormBytes = 64 << 10

// TokenFromRequest extracts the bearer token from "Authorization: Bearer
// <token>", the only accepted form. The scheme name is matched
// case-insensitively (RFC 9110 §11.1), followed by exactly one space and one
// RFC 6750 b64token. It returns ErrNoCredentials when there is no
// Authorization header or it names another scheme, and an invalid_request
// *Error for two Authorization headers, a malformed value (no token, two
// tokens, illegal characters), or an access_token in the query string or in
// a form-encoded body (RFC 6750 §2.2/§2.3 methods are refused). A form body
// is restored after inspection.
func TokenFromRequest(r *http.Request) (string, error) {
	if r.URL.Query().Has("access_token") {
		return "", invalidRequest("access tokens in the query string are not accepted; use the Authorization header")
	}
	if err := refuseFormToken(r); err != nil {
		return "", err
	}
	vals := r.Header.Values("Authorization")
	if len(vals) == 0 {
		return "", ErrNoCredentials
	}
	if len(vals) > 1 {
		return "", invalidRequest("more than one Authorization header")
	}
	scheme, rest, _ := strings.Cut(vals[0], " ")
	if !strings.EqualFold(scheme, "Bearer") {
		return "", ErrNoCredentials
	}
	if rest == "" {
		return "", invalidRequest("the Bearer credentials are empty")
	}
	if !isB64Token(rest) {
		return "", invalidRequest(`the Authorization header must be exactly "Bearer <token>"`)
	}
	return rest, nil
}

func refuseFormToken(r *http.Request) error {
	if r.Body == nil || r.Body == http.NoBody {
		return nil
	}
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mt != "application/x-www-form-urlencoded" {
		return nil
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, maxFormBytes+1))
	if err != nil {
		return invalidRequest("unreadable request body")
	}
	r.Body = io.NopCloser(io.MultiReader(strings.NewReader(string(b)), r.Body))
	if len(b) > maxFormBytes {
		return invalidRequest("form body too large")
	}
	form, err := url.ParseQuery(string(b))
	if err != nil {
		return invalidRequest("malformed form body")
	}
	if form.Has("access_token") {
		return invalidRequest("access tokens in the request body are not accepted; use the Authorization header")
	}
	return nil
}

// isB64Token matches RFC 6750's b64token: 1*( ALPHA / DIGIT / "-" / "." /
// "_" / "~" / "+" / "/" ) *"=".
func isB64Token(s string) bool {
	i := 0
	for i < len(s) {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '-' || c == '.' || c == '_' || c == '~' || c == '+' || c == '/' {
			i++
			continue
		}
		break
	}
	if i == 0 {
		return false
	}
	for ; i < len(s); i++ {
		if s[i] != '=' {
			return false
		}
	}
	return true
}

// Challenge returns the WWW-Authenticate value for err (RFC 6750 §3).
func Challenge(err *Error) string {
	var b strings.Builder
	b.WriteString(`Bearer realm="` + Realm + `"`)
	if err == nil || err.Code == "" || err.Status == http.StatusServiceUnavailable {
		return b.String()
	}
	fmt.Fprintf(&b, `, error="%s"`, err.Code)
	if err.Description != "" {
		fmt.Fprintf(&b, `, error_description="%s"`, quoteSafe(err.Description))
	}
	if err.Scope != "" {
		fmt.Fprintf(&b, `, scope="%s"`, quoteSafe(err.Scope))
	}
	return b.String()
}

// quoteSafe keeps only the characters RFC 6750 allows inside
// error_description and scope (%x20-21 / %x23-5B / %x5D-7E).
func quoteSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if r == 0x20 || r == 0x21 || (r >= 0x23 && r <= 0x5B) || (r >= 0x5D && r <= 0x7E) {
			return r
		}
		return -1
	}, s)
}

// WriteError answers err per RFC 6750: the status, a WWW-Authenticate
// challenge (on 401 and on 403 insufficient_scope; 503 carries none besides
// the realm) and a JSON body {"error", "error_description"[, "scope"]}. Any
// error that is not an *Error is answered as invalid_token.
func WriteError(w http.ResponseWriter, err error) {
	var e *Error
	if !errors.As(err, &e) {
		e = invalidToken("token rejected")
	}
	if e.Status == http.StatusUnauthorized || e.Code == CodeInsufficientScope || e.Code == CodeInvalidRequest {
		w.Header().Set("WWW-Authenticate", Challenge(e))
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(e.Status)
	body := map[string]string{}
	if e.Code == "" {
		body["error"] = "unauthorized"
		body["error_description"] = "bearer token or session required"
	} else {
		body["error"] = e.Code
		body["error_description"] = e.Description
	}
	if e.Scope != "" {
		body["scope"] = e.Scope
	}
	_ = json.NewEncoder(w).Encode(body)
}
