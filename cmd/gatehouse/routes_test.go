package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gatehouse/gatehouse/internal/config"
	"github.com/gatehouse/gatehouse/internal/httpx"
	"github.com/gatehouse/gatehouse/internal/obs"
	"github.com/gatehouse/gatehouse/internal/tracing"
)

// routeMap reads the route map of routes.go's comment: the public
// listener's lines, each a method followed by paths ("GET  /a  /b"), a
// line of paths alone continuing the method above it; the text after the
// paths (what serves them) is not read. It returns the methods of each
// path.
func routeMap(t *testing.T) map[string][]string {
	t.Helper()
	src, err := os.ReadFile("routes.go")
	if err != nil {
		t.Fatal(err)
	}
	text := string(src)
	start := strings.Index(text, "// Public listener")
	end := strings.Index(text, "// Admin listener")
	if start < 0 || end < start {
		t.Fatal("routes.go has no \"Public listener\" ... \"Admin listener\" route map")
	}
	out := map[string][]string{}
	method := ""
	for _, line := range strings.Split(text[start:end], "\n") {
		line = strings.TrimPrefix(strings.TrimPrefix(line, "//"), "\t")
		for _, f := range strings.Fields(line) {
			switch {
			case strings.HasPrefix(f, "/"):
				if method == "" {
					t.Fatalf("route map: %s has no method before it", f)
				}
				out[f] = append(out[f], method)
				continue
			case httpx.Standard(f):
				method = f
				continue
			}
			break // the description column
		}
	}
	return out
}

// TestRouteMapMatchesTheRouter builds the public router with every stage
// mounted (a provider with a GET handshake, browser login against a
// stand-in OP's discovery document, the operator token, bearer tokens) and
// holds routes.go's route map to what chi really serves: every served
// pattern in the map with its methods, and nothing in the map that is not
// served. A pattern served for every method (the receiver answers 405 to
// the others itself) needs to be in the map under any method.
func TestRouteMapMatchesTheRouter(t *testing.T) {
	op := discoveryOnly(t)
	key := base64.StdEncoding.EncodeToString(make([]byte, 32))
	cfg, err := config.Parse([]byte(fmt.Sprintf(`
database_url: postgres://gatehouse@127.0.0.1:1/gatehouse
providers:
  fb:
    scheme: meta
    secrets: [{value: app-secret-0123456789}]
    verify_token: verify-0123456789
auth:
  issuer: %q
  client_id: gatehouse
  client_secret: secret
  redirect_url: https://gatehouse.example.com/callback
  operator_token: operator-token-0123456789abcdef
  encryption_keys: [{id: k1, value: %q}]
api:
  audience: https://gatehouse.example.com/api
  issuers: [{issuer: %q}]
`, op, key, op)), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	// A pool that never connects (nothing listens on port 1): mounting
	// routes reads no row, and the maintenance pass before serving only
	// logs its failure.
	pool, err := pgxpool.New(t.Context(), cfg.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	tp, err := tracing.Setup(t.Context(), cfg.Tracing, "gatehouse-test", func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	b := &base{cfg: cfg, log: slog.New(slog.NewTextHandler(io.Discard, nil)), reg: obs.NewRegistry(), pool: pool, tp: tp}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	sf, err := publicSurface(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	defer sf.close()

	served := map[string][]string{}
	err = chi.Walk(sf.router, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		route = strings.Replace(route, "/webhooks/fb", "/webhooks/{provider}", 1)
		route = strings.ReplaceAll(route, "/*/", "/") // chi's mark of a sub-router
		if !slices.Contains(served[route], method) {
			served[route] = append(served[route], method)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	documented := routeMap(t)
	all := len(httpx.Methods())
	for route, methods := range served {
		doc, ok := documented[route]
		switch {
		case !ok:
			t.Errorf("routes.go's route map misses %s %s", strings.Join(sorted(methods), ","), route)
		case len(methods) >= all:
			// every method: the handler answers the others itself
		case !slices.Equal(sorted(methods), sorted(doc)):
			t.Errorf("route map: %s is %s, the router serves %s", route, strings.Join(sorted(doc), ","), strings.Join(sorted(methods), ","))
		}
	}
	for route, methods := range documented {
		if _, ok := served[route]; !ok {
			t.Errorf("route map: %s %s is not served", strings.Join(methods, ","), route)
		}
	}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	sort.Strings(s)
	return s
}

// discoveryOnly serves an OpenID Provider's discovery document and nothing
// else: enough for auth.New, which reads it at start.
func discoveryOnly(t *testing.T) string {
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/.well-known/openid-configuration" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"issuer": srv.URL, "authorization_endpoint": srv.URL + "/authorize", "token_endpoint": srv.URL + "/token",
			"jwks_uri": srv.URL + "/keys", "end_session_endpoint": srv.URL + "/end_session",
			"revocation_endpoint": srv.URL + "/revoke", "code_challenge_methods_supported": []string{"S256"},
			"id_token_signing_alg_values_supported": []string{"RS256"},
		})
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}
