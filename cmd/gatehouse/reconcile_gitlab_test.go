package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gatehouse/gatehouse/internal/testenv"
)

// gitlabProjectHook plays a GitLab project hook (my-group/my-project, hook
// 7): it records each delivery it attempts as a hook event, lists them as
// GET /api/v4/projects/:id/hooks/:hook_id/events does (newest first, one
// page: X-Next-Page empty), and on POST …/events/:hook_event_id/resend
// sends the event again to the hook's URL with the hook's token and the
// same Idempotency-Key, recording the attempt. It sits behind Prism
// proxying with the description transcribed from GitLab's documentation
// (ingest/reconcile/testdata/gitlab-hook-events.openapi.yaml).
type gitlabProjectHook struct {
	token  string
	mu     sync.Mutex
	url    string // the hook's configured URL
	items  []map[string]any
	bodies map[string][]byte // per Idempotency-Key, the event's body
	posts  int               // resend requests that reached the hook
}

var gitlabResend = regexp.MustCompile(`^/api/v4/projects/my-group(?:%2F|/)my-project/hooks/7/events/(\d+)/resend$`)

// deliver attempts the delivery of key's event and records the attempt.
func (h *gitlabProjectHook) deliver(key string) int {
	h.mu.Lock()
	body, target := h.bodies[key], h.url
	h.mu.Unlock()
	hdr := map[string]string{"Content-Type": "application/json", "X-Gitlab-Event": "Issue Hook", "X-Gitlab-Token": h.token,
		"Idempotency-Key": key, "X-Gitlab-Event-UUID": "uuid-" + key, "X-Gitlab-Instance": "https://gitlab.example.com"}
	req, _ := http.NewRequest(http.MethodPost, target, bytes.NewReader(body))
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	code, status := 0, "Failed to open TCP connection: Connection refused"
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		code, status = resp.StatusCode, strconv.Itoa(resp.StatusCode)
	}
	hdr["X-Gitlab-Token"] = "[REDACTED]"
	var data map[string]any
	_ = json.Unmarshal(body, &data)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.items = append(h.items, map[string]any{"id": 2000 + len(h.items), "url": target, "trigger": "issue_hooks",
		"request_headers": hdr, "request_data": data, "response_headers": map[string]string{}, "response_body": "",
		"execution_duration": 0.02, "response_status": status})
	return code
}

func (h *gitlabProjectHook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	if m := gitlabResend.FindStringSubmatch(r.URL.EscapedPath()); m != nil && r.Method == http.MethodPost {
		id, _ := strconv.Atoi(m[1])
		h.mu.Lock()
		h.posts++
		key := ""
		for _, it := range h.items {
			if it["id"] == id {
				key = it["request_headers"].(map[string]string)["Idempotency-Key"]
			}
		}
		h.mu.Unlock()
		if key == "" {
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"message":"404 Not found"}`))
			return
		}
		code := h.deliver(key)
		w.WriteHeader(http.StatusCreated)
		_, _ = fmt.Fprintf(w, `{"response_status":%d}`, code)
		return
	}
	if r.Method != http.MethodGet {
		w.WriteHeader(http.StatusNotFound)
		return
	}
	h.mu.Lock()
	list := make([]map[string]any, 0, len(h.items))
	for i := len(h.items) - 1; i >= 0; i-- {
		list = append(list, h.items[i])
	}
	h.mu.Unlock()
	w.Header().Set("X-Next-Page", "")
	_ = json.NewEncoder(w).Encode(list)
}

// A GitLab resend arrives with the hook's token at the receiver, end to
// end through the real binary: the hook's three events were sent while
// the receiver was down. serve's pass lists them through Prism (the
// description transcribed from GitLab's documentation) and asks GitLab to
// resend each; the hook sends each again, the receiver verifies and
// stores each once, as a webhook, and later passes ask for nothing more.
// A second resend of one of them, asked for through Prism, is a
// duplicate.
func TestReconcileGitLabResendArrivesThroughTheReceiver(t *testing.T) {
	const token = "glwht_e2e_hook_token"
	hook := &gitlabProjectHook{token: token, url: refusingURL(t), bodies: map[string][]byte{}}
	up := httptest.NewServer(hook)
	t.Cleanup(up.Close)
	prism, err := testenv.StartPrismProxy(context.Background(),
		filepath.Join("..", "..", "ingest", "reconcile", "testdata", "gitlab-hook-events.openapi.yaml"), up.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(prism.Stop)
	keys := []string{"0f8e3c2a-0001-4a10-9000-000000000001", "0f8e3c2a-0001-4a10-9000-000000000002", "0f8e3c2a-0001-4a10-9000-000000000003"}
	for i, k := range keys {
		hook.bodies[k] = []byte(fmt.Sprintf(`{"object_kind":"issue","event_type":"issue","project":{"id":15,"path_with_namespace":"my-group/my-project"},"object_attributes":{"id":%d,"iid":%d,"action":"open","updated_at":"2026-12-07 10:00:00 UTC"}}`, 300+i, i+1))
		if code := hook.deliver(k); code != 0 {
			t.Fatalf("the receiver that is down answered %d", code)
		}
	}

	dbURL := testenv.Postgres(t)
	cfgPath := writeConfigYAML(t, fmt.Sprintf(`providers:
  gitlab:
    scheme: gitlab
    secrets: [{id: s1, value: %s}]
    api_url: %s
    api_key: glpat-e2e-token
    dedupe_window: 192h
    reconcile:
      enabled: true
      interval: 1s
      hook: project
      project: my-group/my-project
      hook_id: 7
`, token, prism.URL))
	srv := startServe(t, dbURL, cfgPath)
	hook.mu.Lock()
	hook.url = srv.public + "/webhooks/gitlab" // the receiver is up again at the hook's URL
	hook.mu.Unlock()

	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	got := redelivered{t: t, conn: conn, provider: "gitlab", ids: keys}
	got.wait(srv.stderr)
	time.Sleep(2500 * time.Millisecond) // two more passes: nothing is resent again
	hook.mu.Lock()
	posts, first := hook.posts, hook.items[0]["id"].(int)
	hook.mu.Unlock()
	if posts != len(keys) {
		t.Fatalf("%d resends asked for, want one per missed event (%d)", posts, len(keys))
	}

	req, _ := http.NewRequest(http.MethodPost, prism.URL+"/api/v4/projects/my-group%2Fmy-project/hooks/7/events/"+strconv.Itoa(first)+"/resend", nil)
	req.Header.Set("PRIVATE-TOKEN", "glpat-e2e-token")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var answer struct {
		ResponseStatus int `json:"response_status"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&answer)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated || answer.ResponseStatus < 200 || answer.ResponseStatus > 299 {
		t.Fatalf("second resend: Prism answered %d, the receiver %d: want 201 and a 2xx (a duplicate)", resp.StatusCode, answer.ResponseStatus)
	}
	var all int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM inbox WHERE provider = 'gitlab'`).Scan(&all); err != nil {
		t.Fatal(err)
	}
	if rows, verified := got.count(); rows != len(keys) || verified != len(keys) || all != len(keys) {
		t.Fatalf("after the second resend: %d rows (%d verified, %d in all): want each event once", rows, verified, all)
	}
}
