package consumers

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/consumers/fetch"
)

// refAPI is the reference provider's API for tests: GET /v1/<collection>/<id>
// answers the stored object, after failing with a scripted status a given
// number of times.
type refAPI struct {
	srv      *httptest.Server
	mu       sync.Mutex
	objects  map[string]map[string]any // path → object
	failures map[string][]int          // path → statuses to answer first
	bump     map[string]bool           // path → each fetch sees the next version
	delay    time.Duration
	calls    atomic.Int64
	log      map[string][]time.Time // path → request times
	key      string
	// retryAfter, when set, is sent with scripted failures.
	retryAfter string
}

func newRefAPI(t *testing.T) *refAPI {
	a := &refAPI{objects: map[string]map[string]any{}, failures: map[string][]int{}, bump: map[string]bool{}, log: map[string][]time.Time{}, key: "ref_test_key"}
	a.srv = httptest.NewServer(http.HandlerFunc(a.serve))
	t.Cleanup(a.srv.Close)
	return a
}

func (a *refAPI) serve(w http.ResponseWriter, r *http.Request) {
	a.calls.Add(1)
	a.mu.Lock()
	a.log[r.URL.Path] = append(a.log[r.URL.Path], time.Now())
	delay := a.delay
	var status int
	if fs := a.failures[r.URL.Path]; len(fs) > 0 {
		status, a.failures[r.URL.Path] = fs[0], fs[1:]
	}
	obj, ok := a.objects[r.URL.Path]
	if ok && a.bump[r.URL.Path] {
		obj["version"] = obj["version"].(int) + 1 // the object changes between fetches
	}
	var body []byte
	if ok {
		body, _ = json.Marshal(obj)
	}
	a.mu.Unlock()
	if delay > 0 {
		time.Sleep(delay)
	}
	switch {
	case r.Header.Get("Authorization") != "Bearer "+a.key:
		http.Error(w, `{"error":"unauthorized"}`, http.StatusUnauthorized)
	case r.Header.Get("Api-Version") != "2026-01-01":
		http.Error(w, `{"error":"unpinned api version"}`, http.StatusBadRequest)
	case status != 0:
		if ra := a.retryAfterValue(); ra != "" {
			w.Header().Set("Retry-After", ra)
		}
		http.Error(w, `{"error":"scripted failure"}`, status)
	case !ok:
		http.Error(w, `{"error":"no such object"}`, http.StatusNotFound)
	default:
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}
}

func (a *refAPI) setPayment(id string, version int, status string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.objects["/v1/payments/"+id] = map[string]any{"id": id, "object": "payment", "version": version, "status": status}
}

func (a *refAPI) fail(path string, statuses ...int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.failures[path] = append(a.failures[path], statuses...)
}

func (a *refAPI) requests(path string) []time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]time.Time(nil), a.log[path]...)
}

func (a *refAPI) client(t *testing.T) *fetch.APIClient {
	c, err := fetch.NewAPIClient(fetch.APIClientConfig{BaseURL: a.srv.URL, Key: []byte(a.key), Version: "2026-01-01", Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (a *refAPI) retryAfterValue() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.retryAfter
}
