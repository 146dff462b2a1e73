package testkit

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// TeamService is a team's own receiving service for forward tests: it
// verifies every delivery with the official Standard Webhooks Go library
// and answers as the test scripts it.
type TeamService struct {
	t      *testing.T
	Addr   string // host:port it listens on
	srv    *httptest.Server
	wh     *standardwebhooks.Webhook
	Answer atomic.Int64 // status to answer; 0: 204
	Fails  atomic.Int64 // answer 500 to this many more deliveries first
	Seen   atomic.Int64 // requests received

	Mu       sync.Mutex                 // guards Accepted, Bodies and Invalid
	Accepted map[string]int             // webhook-id → deliveries answered 2xx
	Bodies   map[string]json.RawMessage // webhook-id → last body
	Invalid  int                        // deliveries that failed verification
}

// NewTeamService starts a service verifying with secret (whsec_…) on a
// loopback port; it stops when t ends.
func NewTeamService(t *testing.T, secret string) *TeamService {
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	s := &TeamService{t: t, wh: wh, Accepted: map[string]int{}, Bodies: map[string]json.RawMessage{}}
	s.Start("127.0.0.1:0")
	t.Cleanup(s.Stop)
	return s
}

// Start listens on addr (again, after Stop: the same address).
func (s *TeamService) Start(addr string) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		s.t.Fatal(err)
	}
	s.Addr = l.Addr().String()
	s.srv = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	s.srv.Listener = l
	s.srv.Start()
}

// Stop closes the listener and the connections.
func (s *TeamService) Stop() { s.srv.Close() }

// URL is the address deliveries are sent to.
func (s *TeamService) URL() string { return "http://" + s.Addr + "/hooks" }

func (s *TeamService) serve(w http.ResponseWriter, r *http.Request) {
	s.Seen.Add(1)
	body, _ := io.ReadAll(r.Body)
	if err := s.wh.Verify(body, r.Header); err != nil {
		s.Mu.Lock()
		s.Invalid++
		s.Mu.Unlock()
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	if s.Fails.Add(-1) >= 0 {
		http.Error(w, "not yet", http.StatusInternalServerError)
		return
	}
	if st := int(s.Answer.Load()); st != 0 {
		http.Error(w, "refused by the team", st)
		return
	}
	s.Mu.Lock()
	s.Accepted[r.Header.Get("webhook-id")]++
	s.Bodies[r.Header.Get("webhook-id")] = body
	s.Mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// Counts returns a copy of the deliveries answered 2xx per webhook-id, and
// the number that failed verification.
func (s *TeamService) Counts() (map[string]int, int) {
	s.Mu.Lock()
	defer s.Mu.Unlock()
	out := map[string]int{}
	for k, v := range s.Accepted {
		out[k] = v
	}
	return out, s.Invalid
}

// Micros is an RFC 3339 (or RFC 1123 with numeric zone) time as Unix
// microseconds; it fails t on any other text.
func Micros(t *testing.T, rfc string) int64 {
	t.Helper()
	for _, layout := range []string{time.RFC3339Nano, time.RFC1123Z} {
		if ts, err := time.Parse(layout, rfc); err == nil {
			return ts.UnixMicro()
		}
	}
	t.Fatalf("bad time %q", rfc)
	return 0
}
