package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
)

// providerAPI is the provider's API the consumers fetch objects from. An
// object's authoritative version is the highest version of the events sent
// for it so far (the state moves as the provider emits events); the API
// remembers the newest version it ever served per object, which the stored
// object must at least reach.
type providerAPI struct {
	srv *httptest.Server
	url string

	mu      sync.Mutex
	current map[string]int
	served  map[string]int
	calls   int
}

func newProviderAPI() *providerAPI {
	a := &providerAPI{current: map[string]int{}, served: map[string]int{}}
	a.srv = httptest.NewServer(http.HandlerFunc(a.serveHTTP))
	a.url = a.srv.URL
	return a
}

func (a *providerAPI) close() { a.srv.Close() }

// advance records that the provider emitted version v of obj.
func (a *providerAPI) advance(obj string, v int) {
	a.mu.Lock()
	a.current[obj] = max(a.current[obj], v)
	a.mu.Unlock()
}

func (a *providerAPI) serveHTTP(w http.ResponseWriter, r *http.Request) {
	id, ok := strings.CutPrefix(r.URL.Path, "/v1/payments/")
	if !ok || id == "" {
		http.NotFound(w, r)
		return
	}
	a.mu.Lock()
	v, known := a.current[id]
	if known {
		a.served[id] = max(a.served[id], v)
	}
	a.calls++
	a.mu.Unlock()
	if !known {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"id":%q,"object":"payment","version":%d}`, id, v)
}

// newestServed returns a copy of the newest version served per object.
func (a *providerAPI) newestServed() (map[string]int, int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make(map[string]int, len(a.served))
	for k, v := range a.served {
		out[k] = v
	}
	return out, a.calls
}
