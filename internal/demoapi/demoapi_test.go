package demoapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

func TestObjects(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)
	srv := httptest.NewServer(Handler(func() time.Time { return at }))
	defer srv.Close()
	for path, kind := range map[string]string{"/v1/payments/pay_1": "payment", "/v1/invoices/in_1": "invoice"} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		var obj map[string]any
		err = json.NewDecoder(resp.Body).Decode(&obj)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 || obj["object"] != kind || obj["updated_at"] != "2026-01-02T03:04:05.000006Z" {
			t.Fatalf("%s: %d %v %v", path, resp.StatusCode, obj, err)
		}
	}
	for _, path := range []string{"/v1/customers/c_1", "/v1/payments/"} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Fatalf("%s: %d, want 404", path, resp.StatusCode)
		}
	}
}
