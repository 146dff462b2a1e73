package consumers

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/consumers/event"
	"github.com/gatehouse/gatehouse/internal/testenv"
	"github.com/gatehouse/gatehouse/internal/testkit"
	"github.com/gatehouse/gatehouse/schemas"
)

// GitHub's catalogue rules against Stoplight Prism serving GitHub's own
// published REST description (@octokit/openapi): signed issues,
// pull_request, check_run and release webhooks go through the receiver,
// the relay and the consumer, and each lands in provider_objects as the
// description's example object with the version it carries (updated_at;
// check runs and releases have none: the fetch time). An issue the API
// answers 404 (Prism's documented 404, asked for with Prefer: code=404)
// is dead-lettered; a redirect is not followed; a push (no rule) is
// skipped, as the catalogue says.
func TestGitHubFetchAgainstPrism(t *testing.T) {
	spec, err := testenv.GitHubSpec(t.TempDir(),
		"/repos/{owner}/{repo}/issues/{issue_number}", "/repos/{owner}/{repo}/pulls/{pull_number}",
		"/repos/{owner}/{repo}/check-runs/{check_run_id}", "/repos/{owner}/{repo}/releases/{release_id}")
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
	var moved, authOK, requests atomic.Int64
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		if r.Header.Get("Authorization") == "Bearer ghp_test" && r.Header.Get("X-GitHub-Api-Version") == "2022-11-28" {
			authOK.Add(1)
		}
		switch {
		case strings.HasPrefix(r.URL.Path, "/moved/"):
			moved.Add(1)
			rp.ServeHTTP(w, r)
		case strings.HasSuffix(r.URL.Path, "/issues/404"):
			r.Header.Set("Prefer", "code=404") // the description's documented 404
			rp.ServeHTTP(w, r)
		case strings.HasSuffix(r.URL.Path, "/issues/301"):
			http.Redirect(w, r, "/moved/repos/octocat/Hello-World/issues/1347", http.StatusFound)
		default:
			rp.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(api.Close)

	pl := newPipeline(t, "github", fmt.Sprintf(`    scheme: github
    secrets: [{id: s1, value: gh-test-secret}]
    api_url: %s
    api_key: ghp_test
    api_version: "2022-11-28"
`, api.URL))
	repo := `"repository":{"name":"Hello-World","full_name":"octocat/Hello-World","owner":{"login":"octocat"}}`
	send := func(id, event, body string) {
		pl.send("1:"+id, []byte(body), "", http.Header{"X-Github-Event": {event}})
	}
	before := time.Now()
	send("d-issue", "issues", `{"action":"opened","issue":{"number":1347,"node_id":"MDU6SXNzdWUx","title":"from the webhook"},`+repo+`}`)
	send("d-pull", "pull_request", `{"action":"opened","number":1347,"pull_request":{"number":1347,"node_id":"MDExOlB1bGxSZXF1ZXN0MQ=="},`+repo+`}`)
	send("d-check", "check_run", `{"action":"completed","check_run":{"id":4,"node_id":"MDg6Q2hlY2tSdW40"},`+repo+`}`)
	send("d-release", "release", `{"action":"published","release":{"id":1,"node_id":"MDc6UmVsZWFzZTE="},`+repo+`}`)
	send("d-push", "push", `{"ref":"refs/heads/main",`+repo+`}`)
	send("d-gone", "issues", `{"action":"edited","issue":{"number":404,"node_id":"I_gone"},`+repo+`}`)
	send("d-moved", "issues", `{"action":"edited","issue":{"number":301,"node_id":"I_moved"},`+repo+`}`)

	pl.waitState(schemas.StateSucceeded, 60*time.Second, "1:d-issue", "1:d-pull", "1:d-check", "1:d-release")
	pl.waitState(schemas.StateSkipped, 30*time.Second, "1:d-push")
	pl.waitState(schemas.StateDead, 30*time.Second, "1:d-gone", "1:d-moved")
	after := time.Now()

	for key, want := range map[string]struct {
		typ     string
		version string // "" : the fetch time
		has     string
	}{
		"MDU6SXNzdWUx":             {"issue", "2011-04-22T13:33:48Z", `"number": 1347`},
		"MDExOlB1bGxSZXF1ZXN0MQ==": {"pull_request", "2011-01-26T19:01:12Z", `"number": 1347`},
		"MDg6Q2hlY2tSdW40":         {"check_run", "", `"completed_at": "2018-05-04T01:14:52Z"`},
		"MDc6UmVsZWFzZTE=":         {"release", "", `"tag_name": "v1.0.0"`},
	} {
		typ, v, data := pl.object(key)
		if typ != want.typ {
			t.Errorf("%s: type %s, want %s", key, typ, want.typ)
		}
		if want.version != "" && v != testkit.Micros(t, want.version) {
			t.Errorf("%s: version %d, want %s = %d", key, v, want.version, testkit.Micros(t, want.version))
		}
		if want.version == "" && (v < before.UnixMicro() || v > after.UnixMicro()) {
			t.Errorf("%s: version %d is not the fetch time", key, v)
		}
		mustContain(t, key+" data", data, want.has)
		if strings.Contains(data, "from the webhook") {
			t.Errorf("%s: the projection holds the webhook body, not the API's object", key)
		}
	}
	gone := pl.inbox("1:d-gone")
	if gone.LastErrorClass != event.ClassPermanent || !strings.Contains(gone.LastError, "status 404") {
		t.Errorf("404: %+v", gone)
	}
	mv := pl.inbox("1:d-moved")
	if mv.LastErrorClass != event.ClassPermanent || !strings.Contains(mv.LastError, "redirect") {
		t.Errorf("redirect: %+v", mv)
	}
	if moved.Load() != 0 {
		t.Errorf("the redirect was followed %d times", moved.Load())
	}
	if authOK.Load() != requests.Load() {
		t.Errorf("%d of %d requests carried the bearer token and X-GitHub-Api-Version", authOK.Load(), requests.Load())
	}
}
