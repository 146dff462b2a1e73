package main

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gatehouse/gatehouse/auth/bearer/bearertest"
	"github.com/gatehouse/gatehouse/internal/testenv"
)

// TestServeMountsAPI drives the real binary with an api section: the
// OpenAPI document is served, a request without credentials gets the bare
// Bearer challenge, a token from the configured issuer is accepted, and
// the API's metrics and the open failure issues are on the admin listener.
func TestServeMountsAPI(t *testing.T) {
	is := bearertest.NewIssuer(t)
	cfgPath := writeConfigYAML(t, `api:
  audience: https://gatehouse.test/api
  issuers: [{issuer: "`+is.URL+`"}]
`+demoProvider)
	dbURL := testenv.Postgres(t)
	p := startServe(t, dbURL, cfgPath)
	get := func(url, auth string) (int, string, string) {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("WWW-Authenticate"), string(b)
	}
	if code, _, body := get(p.public+"/api/v1/openapi.yaml", ""); code != 200 || !strings.HasPrefix(body, "openapi: 3.1.0") {
		t.Fatalf("openapi: %d %.40q", code, body)
	}
	if code, ch, _ := get(p.public+"/api/v1/sessions", ""); code != 401 || ch != `Bearer realm="gatehouse"` {
		t.Fatalf("no credentials: %d %q", code, ch)
	}
	tok := is.Mint(is.Claims(time.Now(), "alice", "https://gatehouse.test/api", "sessions:read"), bearertest.Options{})
	if code, ch, body := get(p.public+"/api/v1/sessions", "Bearer "+tok); code != 200 || !strings.Contains(body, `"sessions":[]`) {
		t.Fatalf("valid token: %d %q %s", code, ch, body)
	}
	if code, _, body := get(p.admin+"/metrics", ""); code != 200 || !strings.Contains(body, `gatehouse_api_authentications_total{method="bearer",result="ok"} 1`) {
		t.Fatalf("metrics: %d, api counters missing", code)
	}
	// An open failure issue is exported from the table (serve exports it
	// with or without the API).
	conn, err := pgx.Connect(t.Context(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	if _, err := conn.Exec(t.Context(), `INSERT INTO failure_issues (provider, stage, fingerprint, error_class, message, last_error)
VALUES ('demo', 'fetch', 'f00d', 'transient', 'm', 'm')`); err != nil {
		t.Fatal(err)
	}
	if _, _, body := get(p.admin+"/metrics", ""); !strings.Contains(body, `gatehouse_issues_open{provider="demo",stage="fetch"} 1`) {
		t.Error("metrics: gatehouse_issues_open of the open issue missing")
	}
	// A method chi does not know: 405 with the path's methods in Allow
	// (RFC 9110 §15.5.6), 404 where nothing is served.
	for path, allow := range map[string]string{"/api/v1/events": "GET", "/webhooks/demo": "POST", "/nowhere": ""} {
		req, _ := http.NewRequest("QUERY", p.public+path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		want := http.StatusMethodNotAllowed
		if allow == "" {
			want = http.StatusNotFound
		}
		if resp.StatusCode != want || resp.Header.Get("Allow") != allow {
			t.Errorf("QUERY %s: %d Allow %q, want %d %q", path, resp.StatusCode, resp.Header.Get("Allow"), want, allow)
		}
	}
}
