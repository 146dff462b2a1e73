package console

import (
	"strings"
	"testing"
)

// The event page shows what each forward destination took: the body and
// headers a transform sent (escaped), a dropped delivery, and a delivery
// sent as built.
func TestEventPageShowsWhatWasForwarded(t *testing.T) {
	srv, pool := newServer(t)
	insertEvent(t, pool, "demo", "evt_fwd", "succeeded", `{"id":"evt_fwd","data":{"amount":12}}`)
	if _, err := pool.Exec(t.Context(), `INSERT INTO forward_deliveries (provider, event_id, destination, body, headers, dropped) VALUES
 ('demo', 'evt_fwd', 'https://billing.example:443/hook', '{"cents":1200,"note":"<script>x</script>"}', '{"X-Team-Route":"billing"}', false),
 ('demo', 'evt_fwd', 'https://audit.example:443/in', NULL, NULL, true),
 ('demo', 'evt_fwd', 'https://plain.example:443/in', NULL, NULL, false)`); err != nil {
		t.Fatal(err)
	}
	code, _, body := get(t, srv, "/console/events/demo/evt_fwd", operator.Subject)
	if code != 200 {
		t.Fatalf("event page: %d", code)
	}
	for _, want := range []string{
		`id="forwards"`, "https://billing.example:443/hook", `&#34;cents&#34;: 1200`, "X-Team-Route: billing",
		"&lt;script&gt;x&lt;/script&gt;", "https://audit.example:443/in", "the transform dropped the event",
		"https://plain.example:443/in", "the event as stored",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the event page lacks %q", want)
		}
	}
	if strings.Contains(body, "<script>x</script>") {
		t.Error("the forwarded body is not escaped")
	}
}
