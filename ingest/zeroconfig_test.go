package ingest

import (
	"strings"
	"testing"

	"github.com/gatehouse/gatehouse/internal/settings"
)

// New with a zero Config (no logger, no registerer, no providers) does not
// panic: nil Logger means slog.Default(), nil Registerer means
// unregistered metrics. The ingest section's settings left zero take the
// defaults declared once in internal/settings (the ones the
// configuration's schema prints), and a setting out of range is an error
// naming its key.
func TestNewZeroConfig(t *testing.T) {
	r, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	var want settings.Ingest
	want.ApplyDefaults()
	if r.cfg.Ingest != want {
		t.Errorf("zero settings became %+v, want the defaults %+v", r.cfg.Ingest, want)
	}
	if _, err := New(Config{Ingest: settings.Ingest{MaxUnverifiedBytes: 1}}); err == nil || !strings.Contains(err.Error(), "ingest.max_unverified_bytes") {
		t.Fatalf("a 1-byte unverified budget: %v, want an error naming ingest.max_unverified_bytes", err)
	}
}
