package ingest

import (
	"strings"
	"testing"
)

// New with only the required settings (no logger, no registerer, no
// providers) does not panic: nil Logger means slog.Default(), nil
// Registerer means unregistered metrics. A setting left zero is a clear
// error, not a default of its own: the defaults live in the
// configuration's schema (wiring.Receiver).
func TestNewZeroConfig(t *testing.T) {
	if _, err := New(Config{MaxInFlight: 1, MinBodyRate: 1, BodyGrace: 1, MaxUnverifiedBytes: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := New(Config{}); err == nil || !strings.Contains(err.Error(), "MaxInFlight") {
		t.Fatalf("a zero Config: %v, want an error naming what is missing", err)
	}
}
