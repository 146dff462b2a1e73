package main

import (
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/internal/testenv"
	"github.com/gatehouse/gatehouse/internal/testkit"
)

// Issue 45, finding 2, as reported: `gatehouse dev` with a forward entry
// whose transform backtracks in a regular expression for minutes hung at
// start-up (no listener, no log line). The real binary now refuses the
// configuration within the transform's time and grace, saying why.
func TestBinaryDevRefusesATransformThatCannotFinish(t *testing.T) {
	dbURL := testenv.Postgres(t)
	svc := testkit.NewTeamService(t, "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	cfgPath := writeConfigYAML(t, demoProvider+fmt.Sprintf(`    forward:
      - url: %s
        secret: whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw
        transform_timeout: 1s
        transform: |
          function handler(w) { /^(a|aa)+(?=b)$/.test('a'.repeat(64)); return w }
`, svc.URL()))
	p, r := startDev(t, dbURL, cfgPath)
	go func() { _, _ = io.Copy(io.Discard, r) }()
	exited := make(chan error, 1)
	start := time.Now()
	go func() { exited <- p.cmd.Wait() }()
	select {
	case err := <-exited:
		if err == nil || !strings.Contains(p.stderr.String(), "ran longer than 1s") {
			t.Errorf("dev exited (%v) with stderr %q, want the transform's reason", err, p.stderr.String())
		}
		t.Logf("refused after %v: %s", time.Since(start), strings.TrimSpace(p.stderr.String()))
	case <-time.After(30 * time.Second):
		t.Fatalf("dev still starting after 30s; stderr: %s", p.stderr.String())
	}
}
