// Package demoapi is the demo provider's API for the local stack (`gatehouse
// dev --demo-api`, started by `make run`): the consumers fetch the objects
// the demo events are about from it, so a sent event ends `succeeded` as it
// would against a real provider. It serves GET /v1/payments/{id} and GET
// /v1/invoices/{id} — the reference scheme's built-in handlers — answering
// every id with an object whose updated_at is the time of the request (a
// newer version on every fetch). It is a development aid, not a mock used
// by the tests of the consumers.
package demoapi

import (
	"encoding/json"
	"net/http"
	"time"
)

// Handler serves the demo objects; now is the clock (nil: time.Now).
func Handler(now func() time.Time) http.Handler {
	if now == nil {
		now = time.Now
	}
	mux := http.NewServeMux()
	object := func(kind, status string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(map[string]any{
				"id": r.PathValue("id"), "object": kind, "status": status, "livemode": false,
				"updated_at": now().UTC().Format(time.RFC3339Nano),
			})
		}
	}
	mux.HandleFunc("GET /v1/payments/{id}", object("payment", "succeeded"))
	mux.HandleFunc("GET /v1/invoices/{id}", object("invoice", "paid"))
	return mux
}
