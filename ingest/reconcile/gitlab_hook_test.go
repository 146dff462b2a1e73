package reconcile_test

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

	"github.com/go-chi/chi/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gatehouse/gatehouse/ingest"
	"github.com/gatehouse/gatehouse/ingest/inbox"
	"github.com/gatehouse/gatehouse/internal/config"
	"github.com/gatehouse/gatehouse/wiring"
)

const gitlabToken = "glwht-test-hook-token"

// gitlabHook plays a GitLab project hook (my-group/my-project, hook 7): it
// records each delivery it attempts as a hook event, lists them as GET
// /api/v4/projects/:id/hooks/:hook_id/events does (newest first, page and
// per_page, X-Next-Page empty on the last page), and on POST
// …/events/:hook_event_id/resend sends that event again with the hook's
// token and the same Idempotency-Key to the hook's URL, recording the
// attempt. It sits behind Prism proxying with the transcribed description
// (testdata/gitlab-hook-events.openapi.yaml).
type gitlabHook struct {
	mu       sync.Mutex
	url      string           // the hook's configured URL
	items    []map[string]any // newest first
	bodies   map[string][]byte
	uuids    map[string]string // per Idempotency-Key, the event's X-Gitlab-Event-UUID
	nextID   int64
	resent   []int64  // hook event ids resent
	tokens   []string // each API call's PRIVATE-TOKEN
	tooMany  bool     // answer 429 to a resend
	perCalls int
}

const gitlabHookPath = "/api/v4/projects/my-group%2Fmy-project/hooks/7/events"

var resendPath = regexp.MustCompile(`^/api/v4/projects/my-group(?:%2F|/)my-project/hooks/7/events/(\d+)/resend$`)

func newGitLabHook() *gitlabHook {
	return &gitlabHook{bodies: map[string][]byte{}, uuids: map[string]string{}, nextID: 1000}
}

// event adds an issue event of key to the hook's project.
func (h *gitlabHook) event(key string) {
	body, _ := json.Marshal(map[string]any{"object_kind": "issue", "event_type": "issue",
		"project":           map[string]any{"id": 15, "path_with_namespace": "my-group/my-project"},
		"object_attributes": map[string]any{"id": 301, "iid": 23, "action": "open", "updated_at": "2026-12-07 10:00:00 UTC"}})
	h.mu.Lock()
	h.bodies[key], h.uuids[key] = body, "uuid-"+key
	h.mu.Unlock()
}

// deliver attempts the delivery of key's event to target with token and
// records the attempt as GitLab lists it: the receiver's status, or the
// error text when it could not be reached.
func (h *gitlabHook) deliver(key, target, token string) int {
	h.mu.Lock()
	body, uuid := h.bodies[key], h.uuids[key]
	h.mu.Unlock()
	hdr := map[string]string{"Content-Type": "application/json", "X-Gitlab-Event": "Issue Hook", "X-Gitlab-Token": token,
		"Idempotency-Key": key, "X-Gitlab-Event-UUID": uuid, "X-Gitlab-Webhook-UUID": "hook-7-uuid",
		"X-Gitlab-Instance": "https://gitlab.example.com", "User-Agent": "GitLab/17.6.0"}
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
	h.nextID++
	h.items = append([]map[string]any{{"id": h.nextID, "url": target, "trigger": "issue_hooks", "request_headers": hdr,
		"request_data": data, "response_headers": map[string]string{}, "response_body": "", "execution_duration": 0.05,
		"response_status": status}}, h.items...)
	return code
}

func (h *gitlabHook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	h.tokens = append(h.tokens, r.Header.Get("PRIVATE-TOKEN"))
	h.mu.Unlock()
	if m := resendPath.FindStringSubmatch(r.URL.EscapedPath()); m != nil && r.Method == http.MethodPost {
		h.resend(w, m[1])
		return
	}
	if r.Method != http.MethodGet || (r.URL.EscapedPath() != gitlabHookPath && r.URL.Path != "/api/v4/projects/my-group/my-project/hooks/7/events") {
		http.NotFound(w, r)
		return
	}
	page, _ := strconv.Atoi(r.URL.Query().Get("page"))
	per, _ := strconv.Atoi(r.URL.Query().Get("per_page"))
	page, per = max(page, 1), min(max(per, 1), 100)
	h.mu.Lock()
	h.perCalls++
	items := h.items[min((page-1)*per, len(h.items)):]
	next := ""
	if len(items) > per {
		items, next = items[:per], strconv.Itoa(page+1)
	}
	out, _ := json.Marshal(append([]map[string]any{}, items...))
	h.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Next-Page", next)
	w.Header().Set("X-Page", strconv.Itoa(page))
	w.Header().Set("X-Per-Page", strconv.Itoa(per))
	_, _ = w.Write(out)
}

func (h *gitlabHook) resend(w http.ResponseWriter, id string) {
	n, _ := strconv.ParseInt(id, 10, 64)
	h.mu.Lock()
	if h.tooMany {
		h.mu.Unlock()
		w.Header().Set("Retry-After", "60")
		w.WriteHeader(http.StatusTooManyRequests)
		return
	}
	var key string
	for _, it := range h.items {
		if it["id"].(int64) == n {
			key = it["request_headers"].(map[string]string)["Idempotency-Key"]
		}
	}
	h.resent = append(h.resent, n)
	target := h.url
	h.mu.Unlock()
	if key == "" {
		http.NotFound(w, nil)
		return
	}
	code := h.deliver(key, target, gitlabToken)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_, _ = fmt.Fprintf(w, `{"response_status":%d}`, code)
}

// gitlabReceiver is the real receiver for provider "gitlab" (token
// gitlabToken) writing through w; its URL is the hook's.
func gitlabReceiver(t *testing.T, w *inbox.Writer) string {
	t.Helper()
	cfg, err := config.Parse([]byte("providers:\n  gitlab:\n    scheme: gitlab\n    dedupe_window: 192h\n    secrets: [{id: s1, value: \""+
		gitlabToken+"\"}]\n"), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	icfg := wiring.Receiver(cfg)
	icfg.Writer = w
	rcv, err := ingest.New(icfg)
	if err != nil {
		t.Fatal(err)
	}
	r := chi.NewRouter()
	rcv.Routes(r)
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	return srv.URL + "/webhooks/gitlab"
}

// storedOnce fails the test unless each key is stored once in the inbox
// of provider gitlab.
func storedOnce(t *testing.T, pool *pgxpool.Pool, keys ...string) {
	t.Helper()
	for _, k := range keys {
		var n int
		if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM inbox WHERE provider = 'gitlab' AND event_id = $1`, k).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 1 {
			t.Errorf("event %s stored %d times, want once", k, n)
		}
	}
}
