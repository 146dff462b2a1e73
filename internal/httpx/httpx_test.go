package httpx

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/go-chi/chi/v5"
)

func TestAllowedAndMethodNotAllowed(t *testing.T) {
	r := chi.NewRouter()
	r.Get("/a", func(http.ResponseWriter, *http.Request) {})
	r.Post("/a", func(http.ResponseWriter, *http.Request) {})
	if got := Allowed(r, "/a"); !slices.Equal(got, []string{"GET", "POST"}) {
		t.Errorf("Allowed(/a) = %v", got)
	}
	if got := Allowed(r, "/b"); got != nil {
		t.Errorf("Allowed(/b) = %v", got)
	}
	w := httptest.NewRecorder()
	MethodNotAllowed(w, "GET", "POST")
	if w.Code != http.StatusMethodNotAllowed || w.Header().Get("Allow") != "GET, POST" || w.Body.String() != "method not allowed\n" {
		t.Errorf("MethodNotAllowed: %d Allow %q body %q", w.Code, w.Header().Get("Allow"), w.Body.String())
	}
	if !Standard("PATCH") || Standard("QUERY") || len(Methods()) != 9 {
		t.Error("Standard/Methods")
	}
}
