package config

import (
	"fmt"
	"strings"
	"testing"
)

// The unverified-bytes budget's shares (issue 45): each provider's
// reserve defaults to a sixteenth of ingest.max_unverified_bytes, lowered
// so the reserves take at most half of it; the bound per client address to
// an eighth; values that cannot hold are refused naming the key.
func TestUnverifiedBytesShares(t *testing.T) {
	provider := func(name string) string {
		return fmt.Sprintf("  %s:\n    scheme: github\n    secrets: [{id: a, value: x}]\n", name)
	}
	parse := func(ingest string, n int) (*Config, error) {
		y := "database_url: postgres://localhost/x\ningest: {" + ingest + "}\nproviders:\n"
		for i := range n {
			y += provider(fmt.Sprintf("p%d", i))
		}
		return Parse([]byte(y), noEnv)
	}
	for _, c := range []struct {
		ingest             string
		providers          int
		reserve, perClient int64
	}{
		{"max_unverified_bytes: 67108864", 2, 4 << 20, 8 << 20},
		{"max_unverified_bytes: 67108864", 16, 2 << 20, 8 << 20}, // 16 × 4 MiB would be all of it
		{"max_unverified_bytes: 1048576", 1, 64 << 10, 128 << 10},
		{"max_unverified_bytes: 1048576, reserved_unverified_bytes: 1, max_unverified_bytes_per_client: 1048576", 3, 1, 1 << 20},
	} {
		cfg, err := parse(c.ingest, c.providers)
		if err != nil {
			t.Fatalf("%s, %d providers: %v", c.ingest, c.providers, err)
		}
		if in := cfg.Ingest; in.ReservedUnverifiedBytes != c.reserve || in.MaxUnverifiedBytesPerClient != c.perClient {
			t.Errorf("%s, %d providers: reserve %d per client %d, want %d %d", c.ingest, c.providers,
				in.ReservedUnverifiedBytes, in.MaxUnverifiedBytesPerClient, c.reserve, c.perClient)
		}
	}
	for _, c := range []struct {
		ingest    string
		providers int
		key       string
	}{
		{"max_unverified_bytes: 1048576, max_unverified_bytes_per_client: 2097152", 1, "ingest.max_unverified_bytes_per_client"},
		{"max_unverified_bytes_per_client: 1000", 1, "ingest.max_unverified_bytes_per_client"},
		{"max_unverified_bytes: 1048576, reserved_unverified_bytes: 524288", 3, "ingest.reserved_unverified_bytes"},
		{"reserved_unverified_bytes: -1", 1, "ingest.reserved_unverified_bytes"},
	} {
		if _, err := parse(c.ingest, c.providers); err == nil || !strings.Contains(err.Error(), c.key) {
			t.Errorf("%s, %d providers: %v, want an error naming %s", c.ingest, c.providers, err, c.key)
		}
	}
}
