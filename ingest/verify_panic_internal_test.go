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
	if used := r.bodies.Used(); used != 0 {
		t.Errorf("unverified bytes held after three panics in Verify: %d, want 0", used)
	}
	if held, shared, clients := r.bodies.Held(r.endpoints["p"].bytes); held != 0 || shared != 0 || clients != 0 {
		t.Errorf("provider holds %d, shared pool %d, clients %d; want nothing", held, shared, clients)
	}
}
