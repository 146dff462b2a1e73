package forward

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/consumers/event"
)

// TestForwardErrorsRedactTheURL: every error a delivery returns (and so
// inbox.last_error, the API, the console, the logs and the dead-letter
// headers, which all render it) names the destination without its
// credentials: no user info, no query, no path (an incoming webhook's path
// is its token: Slack, Discord, Teams), whether the destination
// answered 5xx, refused the request with 4xx, timed out, or could not be
// reached at all.
func TestForwardErrorsRedactTheURL(t *testing.T) {
	const secrets = "s3cr3t-token|hunter2|alice|frag-secret|path-secret|token="
	var status atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("token") != "s3cr3t-token" || r.URL.Path != "/services/T0/B0/path-secret" {
			t.Errorf("the destination got %q, want the configured path and query", r.URL)
		}
		if status.Load() == 0 {
			time.Sleep(300 * time.Millisecond)
			return
		}
		w.WriteHeader(int(status.Load()))
	}))
	defer srv.Close()
	withSecrets := func(base string) string {
		return strings.Replace(base, "http://", "http://alice:hunter2@", 1) + "/services/T0/B0/path-secret?token=s3cr3t-token&v=1#frag-secret"
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	ln.Close() // nothing listens there: connection refused
	ev := &event.Event{Provider: "ref", ID: "e1", Type: "payment.succeeded", Envelope: []byte(`{"id":"e1"}`)}
	for _, tc := range []struct {
		name   string
		base   string
		status int
	}{
		{"5xx", srv.URL, http.StatusInternalServerError},
		{"4xx", srv.URL, http.StatusBadRequest},
		{"timeout", srv.URL, 0},
		{"refused", closed, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status.Store(int32(tc.status))
			fw, err := NewForwarder(Config{Provider: "ref", URL: withSecrets(tc.base), Secret: forwardSecret,
				Timeout: 100 * time.Millisecond, BreakerFailures: 100})
			if err != nil {
				t.Fatal(err)
			}
			err = fw.Deliver(context.Background(), ev, nil)
			if err == nil {
				t.Fatal("delivered, want an error")
			}
			for _, s := range strings.Split(secrets, "|") {
				if strings.Contains(err.Error(), s) {
					t.Errorf("error %q contains %q", err, s)
				}
			}
			if !strings.Contains(err.Error(), fw.Destination()) || !strings.Contains(fw.Destination(), "/…#") {
				t.Errorf("error %q does not name the destination %s", err, fw.Destination())
			}
		})
	}
}
