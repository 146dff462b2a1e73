package consumers

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/gatehouse/gatehouse/api"
	"github.com/gatehouse/gatehouse/api/console"
	"github.com/gatehouse/gatehouse/internal/config"
	"github.com/gatehouse/gatehouse/internal/testkit"
	"github.com/gatehouse/gatehouse/schemas"
)

// runSecrets are the credentials the run below puts in forward URLs (user
// info, an incoming webhook's path token, a query token) and in the
// headers a transform sets.
var runSecrets = []string{"fwd-user-9a9a", "fwd-pass-1a1a", "path-token-4c4c", "query-token-5d5d", "in-token-6e6e", "team-token-7f7f"}

// A full run with credentials in the forward URLs and a transform's
// Authorization header: one destination refuses (dead event, failure
// issue, logged errors), the other takes the transformed delivery. Every
// output of the run — the consumer's logs, the metrics page, what `config
// check` prints, the console's pages, the stored error texts, issues and
// recorded deliveries — names the destinations by scheme, host and a
// digest of the path, and holds none of the credentials.
func TestNoForwardCredentialInAnyOutput(t *testing.T) {
	refusing, taking := newTeamService(t), newTeamService(t)
	refusing.Answer.Store(http.StatusUnprocessableEntity)
	withCreds := func(svc *testkit.TeamService, path string) string {
		return strings.Replace(svc.URL(), "http://", "http://fwd-user-9a9a:fwd-pass-1a1a@", 1) + path
	}
	providerYAML := fmt.Sprintf(`    scheme: reference
    timestamp_header: X-Ts
    signature_header: X-Sig
    secrets: [{id: s1, value: ref-secret}]
    aggregate_id_path: [data.payment_id]
    forward:
      - url: %q
        secret: env:FWD_SECRET
      - url: %q
        secret: env:FWD_SECRET
        transform: |
          function handler(webhook) {
            webhook.headers["Authorization"] = "Bearer team-token-7f7f";
            return webhook;
          }
`, withCreds(refusing, "/services/T0/B0/path-token-4c4c?token=query-token-5d5d"), withCreds(taking, "/hooks/in-token-6e6e"))
	var logs testkit.SyncBuffer
	pl := newPipelineLogging(t, "ref", providerYAML, slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	pl.sendRef("cred_1", "pay_cred_1")
	pl.waitState(schemas.StateDead, 60*time.Second, "cred_1")

	var out strings.Builder
	section := func(name, text string) { fmt.Fprintf(&out, "=== %s\n%s\n", name, text) }
	section("logs", logs.String())

	metrics := httptest.NewServer(promhttp.HandlerFor(pl.reg, promhttp.HandlerOpts{}))
	defer metrics.Close()
	section("metrics", httpGet(t, metrics.URL))

	cfg, err := config.Parse([]byte("providers:\n  ref:\n"+providerYAML), func(k string) string {
		return map[string]string{"FWD_SECRET": forwardSecret}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	checked, err := config.Redacted(cfg)
	if err != nil {
		t.Fatal(err)
	}
	section("config check", string(checked))

	operator := api.User{Issuer: "https://op.test/", Subject: "olga"}
	con, err := console.New(console.Config{Pool: pl.pool, Sessions: headerSession{operator}, Operators: []api.User{operator}})
	if err != nil {
		t.Fatal(err)
	}
	r := chi.NewRouter()
	con.Routes(r)
	srv := httptest.NewServer(r)
	defer srv.Close()
	var issueID int64
	if err := pl.pool.QueryRow(t.Context(), `SELECT id FROM failure_issues WHERE provider = 'ref'`).Scan(&issueID); err != nil {
		t.Fatalf("no failure issue: %v", err)
	}
	for _, page := range []string{"/console/events", "/console/events/ref/cred_1", "/console/dead", "/console/issues", fmt.Sprintf("/console/issues/%d", issueID)} {
		section("console "+page, httpGet(t, srv.URL+page))
	}

	var stored string
	if err := pl.pool.QueryRow(t.Context(), `SELECT concat_ws(E'\n',
  (SELECT string_agg(concat_ws(' ', stage, message), E'\n') FROM failure_issues),
  (SELECT string_agg(coalesce(last_error, ''), E'\n') FROM inbox),
  (SELECT string_agg(concat_ws(' ', destination, headers::text), E'\n') FROM forward_deliveries))`).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	section("stored", stored)

	all := out.String()
	for _, s := range append(runSecrets, forwardSecret) {
		if strings.Contains(all, s) {
			for _, line := range strings.Split(all, "\n") {
				if strings.Contains(line, s) || strings.HasPrefix(line, "=== ") {
					t.Logf("%s", line)
				}
			}
			t.Errorf("%q appears in the run's output", s)
		}
	}
	// The destinations are still named: scheme, host and the path's digest.
	for _, svc := range []*testkit.TeamService{refusing, taking} {
		u, err := url.Parse(svc.URL())
		if err != nil {
			t.Fatal(err)
		}
		host := u.Host
		if !strings.Contains(all, "http://"+host+"/…#") {
			t.Errorf("no output names the destination %s", host)
		}
	}
	for _, want := range []string{"=== metrics", `destination="http://`, "=== console /console/events/ref/cred_1", "Authorization: REDACTED"} {
		if !strings.Contains(all, want) {
			t.Errorf("the output lacks %q", want)
		}
	}
	if t.Failed() {
		t.Logf("the run's output:\n%s", all)
	}
}

// headerSession is the console's session store in this test: every
// request is the operator's.
type headerSession struct{ u api.User }

func (h headerSession) SessionFromRequest(*http.Request) (string, api.User, error) {
	return "sid", h.u, nil
}
func (headerSession) ListSessions(ctx context.Context, u api.User) ([]api.Session, error) {
	return nil, nil
}
func (headerSession) RevokeSession(ctx context.Context, u api.User, id, reason string) error {
	return nil
}

func httpGet(t *testing.T, u string) string {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET %s: %d %s", u, resp.StatusCode, b)
	}
	return string(b)
}
