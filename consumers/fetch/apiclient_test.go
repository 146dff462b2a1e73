package fetch

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/consumers/event"
)

// Finding 7 of issue 25: an object id is escaped exactly once ("a/b" is
// requested as a%2Fb, not a%252Fb), an id or path that would climb or
// name the collection ("..", ".", empty) is refused without a request,
// and a redirect is never followed with the API key: it is a permanent
// failure (on main the key went to the redirect's host and its answer was
// applied as the provider's).
func TestAPIClientPathsAndRedirects(t *testing.T) {
	var elsewhere atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.Add(1)
		if r.Header.Get("Authorization") != "" {
			t.Errorf("the API key reached the redirect's host")
		}
		_, _ = w.Write([]byte(`{"id":"forged","version":99}`))
	}))
	defer other.Close()
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, r.RequestURI)
		if strings.Contains(r.URL.Path, "/v1/redirect") {
			http.Redirect(w, r, other.URL+"/v1/payments/x", http.StatusFound)
			return
		}
		_, _ = w.Write([]byte(`{"id":"x","version":1}`))
	}))
	defer srv.Close()
	c, err := NewAPIClient(APIClientConfig{BaseURL: srv.URL + "/api/", Key: []byte("k")})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	path, err := ObjectPath("payments", "a/b c")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(ctx, path); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 1 || seen[0] != "/api/v1/payments/a%2Fb%20c" {
		t.Errorf("requested %q, want /api/v1/payments/a%%2Fb%%20c", seen)
	}
	for _, id := range []string{"..", ".", ""} {
		if _, err := ObjectPath("payments", id); event.Classify(err) != event.ClassPermanent {
			t.Errorf("ObjectPath(%q): %v, want a permanent error", id, err)
		}
	}
	for _, p := range []string{"/v1/payments/..", "/v1/payments/.", "/v1/payments/", "/v1//x", "/v1/payments/%2e%2e", "v1/x"} {
		if _, err := c.Get(ctx, p); event.Classify(err) != event.ClassPermanent {
			t.Errorf("Get(%q): %v, want a permanent error", p, err)
		}
	}
	if len(seen) != 1 {
		t.Errorf("refused paths were requested: %q", seen)
	}

	_, err = c.Get(ctx, "/v1/redirect/x")
	var ae *APIError
	if event.Classify(err) != event.ClassPermanent || !errors.As(err, &ae) || ae.Status != http.StatusFound || !strings.Contains(ae.Body, "redirected to") {
		t.Errorf("redirect: %v, want a permanent APIError 302 naming the redirect", err)
	}
	if elsewhere.Load() != 0 {
		t.Errorf("the redirect was followed %d times", elsewhere.Load())
	}
}

func TestAPIClientClassifiesFailures(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok":
			if r.Header.Get("Authorization") != "Bearer k" || r.Header.Get("Api-Version") != "v1" {
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			_, _ = w.Write([]byte(`{"id":"x","version":3}`))
		case "/slow":
			time.Sleep(300 * time.Millisecond)
		case "/html":
			_, _ = w.Write([]byte(`<html>`))
		default:
			code := map[string]int{"/429": 429, "/500": 500, "/503": 503, "/404": 404, "/400": 400, "/401": 401, "/408": 408}[r.URL.Path]
			w.WriteHeader(code)
		}
	}))
	defer srv.Close()
	c, err := NewAPIClient(APIClientConfig{BaseURL: srv.URL, Key: []byte("k"), Version: "v1", Timeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if obj, err := c.Get(context.Background(), "/ok"); err != nil || !strings.Contains(string(obj), `"x"`) {
		t.Fatalf("ok: %s %v", obj, err)
	}
	want := map[string]string{"/429": event.ClassTransient, "/500": event.ClassTransient, "/503": event.ClassTransient, "/408": event.ClassTransient,
		"/slow": event.ClassTransient, "/html": event.ClassTransient, "/404": event.ClassPermanent, "/400": event.ClassPermanent, "/401": event.ClassPermanent}
	for path, class := range want {
		_, err := c.Get(context.Background(), path)
		if err == nil || event.Classify(err) != class {
			t.Errorf("%s: %v classified %s, want %s", path, err, event.Classify(err), class)
		}
	}
	down, _ := NewAPIClient(APIClientConfig{BaseURL: "http://127.0.0.1:1"})
	if _, err := down.Get(context.Background(), "/x"); err == nil || event.Classify(err) != event.ClassTransient {
		t.Errorf("connection refused: %v, want transient", err)
	}
	if _, err := NewAPIClient(APIClientConfig{BaseURL: "/relative"}); err == nil {
		t.Error("relative api url accepted")
	}
}
