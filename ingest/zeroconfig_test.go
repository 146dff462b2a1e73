package ingest

import "testing"

// New with a zero Config (no logger, no registerer, no providers) does not
// panic: nil Logger means slog.Default(), nil Registerer means unregistered
// metrics.
func TestNewZeroConfig(t *testing.T) {
	if _, err := New(Config{}); err != nil {
		t.Fatal(err)
	}
}
