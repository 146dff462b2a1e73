package ingest

import (
	"testing"

	"github.com/gatehouse/gatehouse/ingest/signature"
	"github.com/gatehouse/gatehouse/internal/config"
	"github.com/gatehouse/gatehouse/schemas/providers"
)

// Finding 3 of issue 39: an hmac definition whose event id joins a header
// its signature does not cover got no replay guard (only top-level header
// fields were checked), so a captured delivery resent under another value
// of that header was a new event.
func TestGuardOfSeesUnsignedHeadersInsideJoins(t *testing.T) {
	for _, c := range []struct {
		name, eventID, want string
	}{
		{"top-level unsigned header", `[{header: X-Id}]`, providers.GuardContent},
		{"join holding an unsigned header", `[{join: [{path: type}, {header: X-Id}]}]`, providers.GuardContent},
		{"nested join holding an unsigned header", `[{path: id}, {join: [{path: type}, {join: [{value: x}, {header: X-Id}]}]}]`, providers.GuardContent},
		{"signed id header inside a join", `[{join: [{path: type}, {header: X-Signed-Id}]}]`, ""},
		{"body fields only", `[{join: [{path: type}, {path: id}]}]`, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			y := "providers:\n  custom:\n    scheme: hmac\n    secrets: [{id: s1, value: x}]\n" +
				"    hmac: {header: X-Sig, content: \"{id}.{body}\", id_header: X-Signed-Id}\n" +
				"    event_id: " + c.eventID + "\n    event_type: [{path: type}]\n"
			cfg, err := config.Parse([]byte(y), func(string) string { return "" })
			if err != nil {
				t.Fatal(err)
			}
			p := cfg.Providers["custom"]
			if got, _ := guardOf(&Provider{Signature: signature.Config{HMAC: p.HMAC}}, p.Kind()); got != c.want {
				t.Errorf("guard %q, want %q", got, c.want)
			}
		})
	}
}
