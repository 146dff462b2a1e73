package reconcile_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/ingest/inbox/inboxtest"
	"github.com/gatehouse/gatehouse/ingest/reconcile"
	"github.com/gatehouse/gatehouse/internal/settings"
	"github.com/gatehouse/gatehouse/internal/testenv"
	"github.com/gatehouse/gatehouse/schemas/providers"
)

// The description's example deliveries (components/examples/hook-delivery-items):
// one guid, delivered and then redelivered a day later (id 123456789).
const exampleGUID = "0b989ba4-242f-11e5-81e1-c7b6966d2516"

// GitHub is reconciled by redelivery, for the three hook kinds, against
// Stoplight Prism serving GitHub's published REST description
// (@octokit/openapi): Prism checks every request against the description
// (path, parameters) and answers its documented examples. A hook whose
// delivery gatehouse stored asks for nothing; one whose delivery it never
// stored asks for one redelivery of its latest attempt; a dry run asks
// for none.
func TestGitHubRedeliveryAgainstPrism(t *testing.T) {
	spec, err := testenv.GitHubSpec(t.TempDir(),
		"/repos/{owner}/{repo}/hooks/{hook_id}/deliveries", "/repos/{owner}/{repo}/hooks/{hook_id}/deliveries/{delivery_id}/attempts",
		"/orgs/{org}/hooks/{hook_id}/deliveries", "/orgs/{org}/hooks/{hook_id}/deliveries/{delivery_id}/attempts",
		"/app/hook/deliveries", "/app/hook/deliveries/{delivery_id}/attempts")
	if err != nil {
		t.Fatal(err)
	}
	prism, err := testenv.StartPrism(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(prism.Stop)
	target, _ := url.Parse(prism.URL)
	rp := httputil.NewSingleHostReverseProxy(target)
	var mu sync.Mutex
	var posts []string
	var answers []int
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			mu.Lock()
			posts = append(posts, r.URL.Path)
			mu.Unlock()
		}
		rec := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		rp.ServeHTTP(rec, r)
		mu.Lock()
		answers = append(answers, rec.status)
		mu.Unlock()
	}))
	t.Cleanup(api.Close)

	pool, w := inboxtest.NewWriter(t, 0)
	// the repository hook's delivery was stored (event id <hook id>:<guid>)
	stored := inboxtest.Record("42:"+exampleGUID, 72*time.Hour)
	stored.Provider = "gh-repo"
	inboxtest.WriteOne(t, w, stored)

	kind, _ := providers.Lookup("github")
	now := time.Date(2019, 6, 4, 1, 57, 16, 0, time.UTC) // an hour after the example's redelivery
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		hook settings.Reconcile
		want string // the redelivery asked for; "" none
	}{
		{"gh-repo", settings.Reconcile{Hook: settings.HookRepository, Owner: "octocat", Repo: "hello-world", HookID: 42}, ""},
		{"gh-org", settings.Reconcile{Hook: settings.HookOrganization, Org: "octo-org", HookID: 7},
			"/orgs/octo-org/hooks/7/deliveries/123456789/attempts"},
		{"gh-app", settings.Reconcile{Hook: settings.HookApp}, "/app/hook/deliveries/123456789/attempts"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.hook.Enabled = true
			r, err := reconcile.New(reconcile.Config{Provider: tc.name, Kind: kind, Settings: tc.hook,
				APIURL: api.URL, APIKey: []byte("ghp_test"), APIVersion: "2022-11-28", VersionHeader: "X-GitHub-Api-Version",
				DedupeWindow: 72 * time.Hour, Pool: pool, Now: func() time.Time { return now }})
			if err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			posts = nil
			mu.Unlock()
			dry, err := r.Pass(ctx, reconcile.Options{DryRun: true})
			if err != nil {
				t.Fatal(err)
			}
			res, err := r.Pass(ctx, reconcile.Options{})
			if err != nil {
				t.Fatalf("%v (prism answered %v)", err, answers)
			}
			if res.Listed != 2 || dry.Listed != 2 {
				t.Fatalf("listed %d (dry run %d), want the description's 2 deliveries", res.Listed, dry.Listed)
			}
			mu.Lock()
			got := strings.Join(posts, ",")
			mu.Unlock()
			if got != tc.want {
				t.Fatalf("redeliveries asked: %q, want %q", got, tc.want)
			}
			if tc.want == "" && (len(res.Missing) != 0 || res.Closed != 0) {
				t.Fatalf("stored delivery reconciled: %+v", res)
			}
			if tc.want != "" && (res.Closed != 1 || len(res.Missing) != 1 || res.Missing[0] != exampleGUID || len(dry.Missing) != 1) {
				t.Fatalf("pass %+v, dry run %+v: want %s missing, one redelivery", res, dry, exampleGUID)
			}
		})
	}
	for _, s := range answers {
		if s < 200 || s > 299 {
			t.Errorf("Prism refused a request: %d (the description says the call is wrong)", s)
		}
	}
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}
