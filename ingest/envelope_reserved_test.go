package ingest_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestEnvelopeRefusesErasureNoticeIDs: an erasure notice's ce_id is
// "erasure:<erasure id>:<event id>", so a provider event id of that form
// stored first would pre-empt the notice at every consumer deduplicating
// by ce_id. Such an id is refused with 400 naming the reserved prefix,
// stored nowhere, from a header (GitHub's delivery id) and from the body
// (the reference scheme); an id merely containing "erasure:" is stored.
func TestEnvelopeRefusesErasureNoticeIDs(t *testing.T) {
	h := newHarness(t)
	gh := []byte(`{"action":"opened","pull_request":{"node_id":"PR_1","updated_at":"2026-11-20T10:15:00Z"}}`)
	hdr := h.sign("github", githubSecret, gh, h.now, "guid-reserved")
	hdr.Del("X-GitHub-Hook-ID")
	hdr.Set("X-GitHub-Delivery", "erasure:1:victim")
	hdr.Set("X-GitHub-Event", "pull_request")
	if r := h.post("github", hdr, gh); r.status != http.StatusBadRequest || !strings.Contains(r.body, `"erasure:"`) {
		t.Errorf("X-GitHub-Delivery: erasure:1:victim: %d %q, want 400 naming the reserved prefix", r.status, r.body)
	}
	body := envelope("erasure:7:evt_victim", "payment.succeeded", map[string]any{"payment_id": "p"})
	if r := h.post("demo", h.sign("demo", demoSecret, body, h.now, ""), body); r.status != http.StatusBadRequest || !strings.Contains(r.body, "reserved") {
		t.Errorf("a reference event id erasure:7:evt_victim: %d %q, want 400", r.status, r.body)
	}
	if n := h.count("inbox", "event_id LIKE 'erasure:%'"); n != 0 {
		t.Errorf("%d inbox rows with a reserved id", n)
	}
	if n := h.count("dedupe_keys", "event_id LIKE 'erasure:%'"); n != 0 {
		t.Errorf("%d dedupe keys with a reserved id", n)
	}
	expectStatus(t, h.send("evt_not_erasure:1", map[string]any{"payment_id": "p"}), http.StatusNoContent)
}
