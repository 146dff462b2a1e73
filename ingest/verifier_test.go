package ingest_test

import (
	"strings"
	"testing"

	"github.com/gatehouse/gatehouse/ingest"
	"github.com/gatehouse/gatehouse/internal/config"
	"github.com/gatehouse/gatehouse/wiring"
)

// A secret or key the provider's scheme cannot use is refused where the
// verifier is built (once per provider, at start), naming the provider's
// secrets and never the value.
func TestNewRefusesUnusableSecret(t *testing.T) {
	cases := map[string]string{
		"discord key not hex":          "discord",
		"sendgrid key not a P-256 key": "sendgrid",
	}
	for name, scheme := range cases {
		t.Run(name, func(t *testing.T) {
			y := "providers:\n  demo:\n    scheme: " + scheme + "\n    secrets: [{id: a, value: \"env:DEMO\"}]\n"
			cfg, err := config.Parse([]byte(y), func(k string) string { return map[string]string{"DEMO": "s3cret-not-a-key"}[k] })
			if err != nil {
				t.Fatalf("config refused what only the verifier can judge: %v", err)
			}
			_, err = ingest.New(wiring.Receiver(cfg))
			if err == nil {
				t.Fatal("accepted")
			}
			if !strings.Contains(err.Error(), "providers.demo.secrets") {
				t.Fatalf("error %q does not name providers.demo.secrets", err)
			}
			if strings.Contains(err.Error(), "s3cret") {
				t.Fatal("error leaks the secret")
			}
		})
	}
}
