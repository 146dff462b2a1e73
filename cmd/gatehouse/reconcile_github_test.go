package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gatehouse/gatehouse/ingest/signature"
	"github.com/gatehouse/gatehouse/internal/testenv"
)

// githubHook plays a GitHub repository hook (octocat/hello-world, hook
// 42): it records each delivery it attempts, lists them as GET
// /repos/{owner}/{repo}/hooks/{hook_id}/deliveries does (newest first, one
// page), and on POST …/deliveries/{delivery_id}/attempts sends the
// delivery's event again, signed with the hook's secret
// (X-Hub-Signature-256, X-GitHub-Delivery, X-GitHub-Hook-ID), to the
// hook's URL, recording the attempt as a redelivery. It sits behind Prism
// proxying with GitHub's published description (@octokit/openapi), which
// checks every call the pass makes.
type githubHook struct {
	secret []byte
	mu     sync.Mutex
	url    string // the hook's configured URL
	items  []map[string]any
	bodies map[string][]byte // per guid, the event's payload
	posts  int               // redelivery requests that reached the hook
}

const githubHookPath = "/repos/octocat/hello-world/hooks/42/deliveries"

var attemptsPath = regexp.MustCompile(`^` + githubHookPath + `/(\d+)/attempts$`)

// deliver attempts the delivery of guid's event (a new delivery id) to the
// hook's URL and records the attempt as GitHub lists it.
func (h *githubHook) deliver(guid string, redelivery bool) (int, error) {
	h.mu.Lock()
	body, target := h.bodies[guid], h.url
	h.mu.Unlock()
	hdr, err := signature.Sign(signature.Config{Scheme: "github"}, h.secret, body, time.Now(), "42:"+guid)
	if err != nil {
		return 0, err
	}
	req, _ := http.NewRequest(http.MethodPost, target, bytes.NewReader(body))
	req.Header = hdr
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", "issues")
	code, status := 0, "failed to connect"
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		code, status = resp.StatusCode, "OK"
		if code > 299 {
			status = "Invalid HTTP Response: " + strconv.Itoa(code)
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.items = append(h.items, map[string]any{"id": 1000 + len(h.items), "guid": guid,
		"delivered_at": time.Now().UTC().Format(time.RFC3339), "redelivery": redelivery, "duration": 0.01,
		"status": status, "status_code": code, "event": "issues", "action": "opened",
		"installation_id": nil, "repository_id": 1296269})
	return code, nil
}

func (h *githubHook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	if r.Method == http.MethodGet && r.URL.Path == githubHookPath {
		h.mu.Lock()
		list := make([]map[string]any, 0, len(h.items))
		for i := len(h.items) - 1; i >= 0; i-- {
			list = append(list, h.items[i])
		}
		h.mu.Unlock()
		_ = json.NewEncoder(w).Encode(list)
		return
	}
	m := attemptsPath.FindStringSubmatch(r.URL.Path)
	if r.Method != http.MethodPost || m == nil {
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"message":"Not Found"}`))
		return
	}
	id, _ := strconv.Atoi(m[1])
	h.mu.Lock()
	h.posts++
	guid := ""
	for _, it := range h.items {
		if it["id"] == id {
			guid, _ = it["guid"].(string)
		}
	}
	h.mu.Unlock()
	if guid == "" {
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"message":"Not Found"}`))
		return
	}
	// GitHub accepts the request and sends the redelivery
	w.WriteHeader(http.StatusAccepted)
	_, _ = w.Write([]byte(`{}`))
	go func() { _, _ = h.deliver(guid, true) }() // signing cannot fail: the secret is set
}

// A GitHub redelivery arrives signed at the receiver, end to end through
// the real binary: the hook's three deliveries were attempted while the
// receiver was down (failed to connect). serve's pass lists them through
// Prism (GitHub's published description) and asks for each to be
// redelivered; the hook sends each again, signed with its secret, and the
// receiver verifies and stores each once, as a webhook. A second
// redelivery of one of them, asked for through Prism too, is a duplicate.
func TestReconcileGitHubRedeliveryArrivesSigned(t *testing.T) {
	const secret = "gh_hook_secret_e2e"
	hook := &githubHook{secret: []byte(secret), url: refusingURL(t), bodies: map[string][]byte{}}
	up := httptest.NewServer(hook)
	t.Cleanup(up.Close)
	spec, err := testenv.GitHubSpec(t.TempDir(), "/repos/{owner}/{repo}/hooks/{hook_id}/deliveries",
		"/repos/{owner}/{repo}/hooks/{hook_id}/deliveries/{delivery_id}/attempts")
	if err != nil {
		t.Fatal(err)
	}
	prism, err := testenv.StartPrismProxy(context.Background(), spec, up.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(prism.Stop)

	guids := []string{"9a1f7c00-0001-11f0-8000-000000000001", "9a1f7c00-0001-11f0-8000-000000000002", "9a1f7c00-0001-11f0-8000-000000000003"}
	ids := make([]string, len(guids))
	for i, g := range guids {
		hook.bodies[g] = []byte(fmt.Sprintf(`{"action":"opened","issue":{"id":%d,"number":%d,"title":"outage %d","updated_at":"2026-12-07T10:00:00Z"},"repository":{"id":1296269,"full_name":"octocat/hello-world"}}`, 5000+i, i+1, i))
		ids[i] = "42:" + g
		if code, err := hook.deliver(g, false); err != nil || code != 0 {
			t.Fatalf("the receiver that is down answered %d (%v)", code, err)
		}
	}

	dbURL := testenv.Postgres(t)
	cfgPath := writeConfigYAML(t, fmt.Sprintf(`providers:
  github:
    scheme: github
    secrets: [{id: s1, value: %s}]
    api_url: %s
    api_key: ghp_e2e_token
    reconcile:
      enabled: true
      interval: 1s
      hook: repository
      owner: octocat
      repo: hello-world
      hook_id: 42
`, secret, prism.URL))
	srv := startServe(t, dbURL, cfgPath)
	hook.mu.Lock()
	hook.url = srv.public + "/webhooks/github" // the receiver is up again at the hook's URL
	hook.mu.Unlock()

	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	got := redelivered{t: t, conn: conn, provider: "github", ids: ids}
	got.wait(srv.stderr)
	// let two more passes run: the stored deliveries are not asked for again
	time.Sleep(2500 * time.Millisecond)
	hook.mu.Lock()
	posts := hook.posts
	var first int
	for _, it := range hook.items {
		if it["guid"] == guids[0] {
			first = it["id"].(int)
			break
		}
	}
	hook.mu.Unlock()
	if posts != len(guids) {
		t.Fatalf("%d redeliveries asked for, want one per missed delivery (%d)", posts, len(guids))
	}

	// a second redelivery of the first, asked for through Prism: a duplicate
	req, _ := http.NewRequest(http.MethodPost, prism.URL+githubHookPath+"/"+strconv.Itoa(first)+"/attempts", nil)
	req.Header.Set("Accept", "application/vnd.github+json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("second redelivery: Prism answered %d", resp.StatusCode)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		hook.mu.Lock()
		last := hook.items[len(hook.items)-1]
		n := len(hook.items)
		hook.mu.Unlock()
		if n == 2*len(guids)+1 {
			if code, _ := last["status_code"].(int); last["guid"] != guids[0] || code < 200 || code > 299 {
				t.Fatalf("second redelivery: %v, want %s answered 2xx (a duplicate)", last, guids[0])
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the second redelivery was not sent (%d deliveries)", n)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if rows, verified := got.count(); rows != len(ids) || verified != len(ids) {
		t.Fatalf("after the second redelivery: %d rows (%d verified): want each delivery once", rows, verified)
	}
	var dupes int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM inbox WHERE provider = 'github'`).Scan(&dupes); err != nil {
		t.Fatal(err)
	}
	if dupes != len(ids) {
		t.Fatalf("%d inbox rows of github, want %d", dupes, len(ids))
	}
}
