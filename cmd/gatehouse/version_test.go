package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/gatehouse/gatehouse/internal/version"
)

// `gatehouse version` and `gatehouse --version` print the release (0.1.0,
// from internal/version, the one place it is written) and the build
// information: the revision, the module version and the Go version.
func TestVersionPrintsTheRelease(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		var out, errOut bytes.Buffer
		if err := run(context.Background(), args, func(string) string { return "" }, &out, &errOut); err != nil {
			t.Fatalf("%v: %v %s", args, err, errOut.String())
		}
		line := out.String()
		if !strings.HasPrefix(line, "gatehouse 0.1.0 revision ") || version.Release != "0.1.0" {
			t.Errorf("%v: %q, want it to start with \"gatehouse 0.1.0 revision \"", args, line)
		}
		if !strings.Contains(line, "(module ") || !strings.HasSuffix(line, ")\n") {
			t.Errorf("%v: %q lacks the build information", args, line)
		}
	}
}
