package ingest_test

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	envlimit "github.com/gatehouse/gatehouse/ingest/envelope"
)

func randomHex(n int) string {
	b := make([]byte, n/2)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// TestOversizedIDAmongConcurrentDeliveries is finding 2 of issue 25: in five
// rounds of one delivery with a 4000-character id beside 8 valid ones sent
// at the same time, every valid delivery is answered 204 and stored, and
// the bad one gets 400 naming the field (on main the coalesced statement
// failed with SQLSTATE 54000 and most of its neighbours got 503).
func TestOversizedIDAmongConcurrentDeliveries(t *testing.T) {
	h := newHarness(t)
	for round := range 5 {
		var wg sync.WaitGroup
		got := make([]response, 9)
		for i := range got {
			id := fmt.Sprintf("evt_r%d_%d", round, i)
			if i == 4 {
				id = randomHex(4000)
			}
			wg.Add(1)
			go func() { defer wg.Done(); got[i] = h.send(id, map[string]any{"payment_id": "p"}) }()
		}
		wg.Wait()
		for i, r := range got {
			if i == 4 {
				if r.status != http.StatusBadRequest || !strings.Contains(r.body, "event id") {
					t.Errorf("round %d: oversized id answered %d %q, want 400 naming the event id", round, r.status, r.body)
				}
				continue
			}
			if r.status != http.StatusNoContent {
				t.Errorf("round %d: valid delivery %d answered %d %q", round, i, r.status, r.body)
			}
		}
	}
	if n := h.count("inbox", ""); n != 40 {
		t.Errorf("inbox rows = %d, want the 40 valid deliveries", n)
	}
}

// Every length cap answers 400 naming its field, from any source: the
// body's id and type, a header id, the aggregate id at its path.
func TestLengthCapsNameTheField(t *testing.T) {
	h := newHarness(t)
	long := func(n int) string { return strings.Repeat("a", n) }
	for _, c := range []struct {
		name, provider, field string
		body                  []byte
		eventID               string
	}{
		{"body id", "demo", "event id", envelope(long(envlimit.MaxEventIDBytes+1), "t", nil), ""},
		{"body type", "demo", "event type", envelope("evt_t", long(envlimit.MaxEventTypeBytes+1), nil), ""},
		{"aggregate id", "demo", "aggregate id", envelope("evt_a", "t", map[string]any{"payment_id": long(envlimit.MaxAggregateIDBytes + 1)}), ""},
		{"shopify topic", "shopify", "event type", []byte(`{"id":1}`), "shop-1"},
	} {
		hdr := h.sign(c.provider, map[string]string{"demo": demoSecret, "shopify": shopSecret}[c.provider], c.body, h.now, c.eventID)
		if c.name == "shopify topic" {
			hdr.Set("X-Shopify-Topic", long(300))
		}
		r := h.post(c.provider, hdr, c.body)
		if r.status != http.StatusBadRequest || !strings.Contains(r.body, c.field) {
			t.Errorf("%s: %d %q, want 400 naming %q", c.name, r.status, r.body, c.field)
		}
	}
	// At the caps, everything is stored.
	body := envelope(long(envlimit.MaxEventIDBytes), long(envlimit.MaxEventTypeBytes), map[string]any{"payment_id": long(envlimit.MaxAggregateIDBytes)})
	expectStatus(t, h.post("demo", h.sign("demo", demoSecret, body, h.now, ""), body), http.StatusNoContent)
	if n := h.count("inbox", ""); n != 1 {
		t.Errorf("inbox rows = %d, want 1", n)
	}
}

// gatehouse.erasure is the type of gatehouse's own erasure notices: the
// consumers skip such a record and data teams erase what it names, so a
// provider's genuine delivery of that type is refused (400 naming the
// type), stored nowhere, and its neighbours are unharmed — from the body
// (reference scheme) and from a header (shopify's topic).
func TestReservedEventTypeIsRefused(t *testing.T) {
	h := newHarness(t)
	body := envelope("evt_forged_notice", "gatehouse.erasure", map[string]any{"payment_id": "p"})
	r := h.post("demo", h.sign("demo", demoSecret, body, h.now, ""), body)
	if r.status != http.StatusBadRequest || !strings.Contains(r.body, "reserved") {
		t.Errorf("a gatehouse.erasure event: %d %q, want 400 saying the type is reserved", r.status, r.body)
	}
	shop := []byte(`{"id":1}`)
	hdr := h.sign("shopify", shopSecret, shop, h.now, "shop-forged")
	hdr.Set("X-Shopify-Topic", "gatehouse.erasure")
	if r := h.post("shopify", hdr, shop); r.status != http.StatusBadRequest || !strings.Contains(r.body, "reserved") {
		t.Errorf("a shopify topic gatehouse.erasure: %d %q, want 400", r.status, r.body)
	}
	expectStatus(t, h.send("evt_neighbour", map[string]any{"payment_id": "p"}), http.StatusNoContent)
	if n := h.count("inbox", "event_type = 'gatehouse.erasure'"); n != 0 {
		t.Errorf("%d inbox rows of the reserved type", n)
	}
	if n := h.count("outbox", "type = 'gatehouse.erasure'"); n != 0 {
		t.Errorf("%d outbox rows of the reserved type", n)
	}
}
