package fetch

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/gatehouse/gatehouse/consumers/event"
)

// Stripe events of two collections under one pattern ("customer.*" serves
// customer.updated and customer.subscription.updated) handled at once, as
// the consumer does: each fetches its own collection. The handler used to
// assign the collection to a variable shared by every call of its pattern;
// under `go test -race` this test reported that race, and without the
// detector a subscription could be fetched from /v1/customers.
func TestStripeHandlerConcurrentCollections(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.URL.Path[strings.LastIndexByte(r.URL.Path, '/')+1:]
		want := "/v1/customers/"
		if strings.HasPrefix(id, "sub_") {
			want = "/v1/subscriptions/"
		}
		if !strings.HasPrefix(r.URL.Path, want) {
			http.Error(w, `{"error":"wrong collection"}`, http.StatusNotFound)
			return
		}
		fmt.Fprintf(w, `{"id":%q}`, id)
	}))
	defer srv.Close()
	api, err := NewAPIClient(APIClientConfig{BaseURL: srv.URL, VersionHeader: "Stripe-Version"})
	if err != nil {
		t.Fatal(err)
	}
	f := Catalogue("stripe", api)
	var wg sync.WaitGroup
	errs := make(chan error, 200)
	for i := range 100 {
		for _, ev := range []*event.Event{
			{Provider: "stripe", ID: fmt.Sprintf("evt_c%d", i), Type: "customer.updated",
				Data: []byte(fmt.Sprintf(`{"object":{"id":"cus_%d","object":"customer"}}`, i))},
			{Provider: "stripe", ID: fmt.Sprintf("evt_s%d", i), Type: "customer.subscription.updated",
				Data: []byte(fmt.Sprintf(`{"object":{"id":"sub_%d","object":"subscription"}}`, i))},
		} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				eff, err := f.Handle(context.Background(), ev, batch())
				if err != nil {
					errs <- fmt.Errorf("%s: %w", ev.Type, err)
					return
				}
				if want := strings.TrimSuffix(strings.TrimPrefix(ev.Type, "customer."), ".updated"); want != "updated" && eff.ObjectType != want {
					errs <- fmt.Errorf("%s: object type %s", ev.Type, eff.ObjectType)
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
