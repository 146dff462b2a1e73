package ingest

import (
	"bytes"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/gatehouse/gatehouse/ingest/signature"
	"github.com/gatehouse/gatehouse/internal/settings"
	"github.com/gatehouse/gatehouse/schemas/providers"
)

// panicVerifier panics in Verify, as a verifier's bug would.
type panicVerifier struct{}

func (panicVerifier) Verify(*signature.Request, time.Time) (signature.Result, error) {
	panic("verifier bug")
}

// Issue 45, finding 1: the handler gave the unverified bytes back after
// Verify without defer, so a panic in a verifier (net/http recovers it
// and closes the connection) leaked the body's charge for good. The
// charge is released whatever happens.
func TestBudgetReleasedWhenVerifyPanics(t *testing.T) {
	k, ok := providers.Lookup("github")
	if !ok {
		t.Fatal("no github kind")
	}
	r, err := New(Config{
		Providers: map[string]*Provider{"p": {Kind: k, MaxBodyBytes: 1 << 20,
			Signature: signature.Config{Scheme: k.Scheme, Secrets: []signature.Secret{{ID: "s", Value: []byte("secret")}}}}},
		Ingest: settings.Ingest{MaxInFlight: 4, MinBodyRate: 1 << 10, BodyGrace: time.Second,
			MaxUnverifiedBytes: 1 << 20, ReservedUnverifiedBytes: 64 << 10, MaxUnverifiedBytesPerClient: 512 << 10},
	})
	if err != nil {
		t.Fatal(err)
	}
	r.endpoints["p"].verifier = panicVerifier{}
	mux := chi.NewRouter()
	r.Routes(mux)
	srv := httptest.NewUnstartedServer(mux)
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // net/http logs the recovered panic
	srv.Start()
	defer srv.Close()
	for range 3 {
		resp, err := http.Post(srv.URL+"/webhooks/p", "application/json", bytes.NewReader(bytes.Repeat([]byte("x"), 40<<10)))
		if err == nil { // net/http closes the connection without an answer
			resp.Body.Close()
			t.Fatalf("a panicking verifier answered %d", resp.StatusCode)
		}
	}
	if used := r.bodies.used.Load(); used != 0 {
		t.Errorf("unverified bytes held after three panics in Verify: %d, want 0", used)
	}
	r.bodies.mu.Lock()
	defer r.bodies.mu.Unlock()
	if s := r.endpoints["p"].bytes; s.used != 0 || r.bodies.shared != 0 || len(r.bodies.clients) != 0 {
		t.Errorf("provider holds %d, shared pool %d, clients %v; want nothing", s.used, r.bodies.shared, r.bodies.clients)
	}
}

// The budget's accounting: a provider's bodies draw on its reserve, then
// on the shared pool; a client address past its bound is refused before
// the pool is looked at; give returns both, and the client's entry goes.
func TestBudgetReserveSharedAndClientAccounting(t *testing.T) {
	var b bodyBudget
	a, c := &bodyShare{reserved: 100}, &bodyShare{reserved: 100}
	b.setLimits(400, 250, []*bodyShare{a, c})
	h1, h2 := b.hold(a, "x"), b.hold(a, "y")
	if err := h1.take(150); err != nil { // 100 of a's reserve, 50 shared
		t.Fatal(err)
	}
	if err := h2.take(150); err != nil { // 150 shared: the pool (200) is full
		t.Fatal(err)
	}
	if err := b.hold(a, "z").take(1); err != errBodyBudget {
		t.Errorf("past a's reserve and the pool: %v, want errBodyBudget", err)
	}
	if err := h1.take(101); err != errClientBytes {
		t.Errorf("x past its 250: %v, want errClientBytes", err)
	}
	hc := b.hold(c, "x")
	if err := hc.take(100); err != nil { // c's reserve, though x holds 150 and the pool is full
		t.Fatalf("c's reserve: %v", err)
	}
	if err := hc.take(1); err != errClientBytes { // x at 250
		t.Errorf("x at 250: %v, want errClientBytes", err)
	}
	h2.release()
	h2.release() // twice: nothing more
	if b.shared != 50 || a.used != 150 || b.used.Load() != 250 {
		t.Errorf("after release: shared %d, a %d, used %d; want 50 150 250", b.shared, a.used, b.used.Load())
	}
	h1.give(120) // a keeps 30, all of it within its reserve
	if b.shared != 0 || a.used != 30 || b.clients["x"] != 130 {
		t.Errorf("after give: shared %d, a %d, x %d; want 0 30 130", b.shared, a.used, b.clients["x"])
	}
	h1.release()
	hc.release()
	if len(b.clients) != 0 || b.used.Load() != 0 || a.used != 0 || c.used != 0 {
		t.Errorf("all released: clients %v, used %d", b.clients, b.used.Load())
	}
}

func TestClientKey(t *testing.T) {
	for in, want := range map[string]string{
		"192.0.2.7:4431":             "192.0.2.7",
		"[::ffff:192.0.2.7]:4431":    "192.0.2.7",
		"[2001:db8:1:2:3:4:5:6]:443": "2001:db8:1:2::/64",
		"[2001:db8:1:2:ff::1]:443":   "2001:db8:1:2::/64",
		"[fe80::1%eth0]:443":         "fe80::/64",
		"not an address":             "not an address",
	} {
		if got := clientKey(in); got != want {
			t.Errorf("clientKey(%q) = %q, want %q", in, got, want)
		}
	}
}
