package config

import (
	"strings"
	"testing"
)

// TestForwardURLErrorsRedacted: configuration errors name a forward URL
// redacted (internal/redact).
func TestForwardURLErrorsRedacted(t *testing.T) {
	err := (&Forward{URL: "ftp://alice:pw@host/in?token=abc", Secret: "x"}).validate()
	if err == nil || strings.Contains(err.Error(), "abc") || strings.Contains(err.Error(), "alice") {
		t.Errorf("validate: %v", err)
	}
}
