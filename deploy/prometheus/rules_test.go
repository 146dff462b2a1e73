// Package promrules holds gatehouse's Prometheus alert rules; its test
// checks and unit-tests them with promtool (Debian package prometheus).
package promrules

import (
	"os/exec"
	"path/filepath"
	"testing"
)

func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatalf("promtool not found (run deploy/local/deps.sh, which installs Debian's prometheus package): %v", err)
	}
	return p
}

func TestRulesAreValid(t *testing.T) {
	files, _ := filepath.Glob("*.rules.yml")
	if len(files) == 0 {
		t.Fatal("no *.rules.yml files")
	}
	out, err := exec.Command(promtool(t), append([]string{"check", "rules"}, files...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool check rules: %v\n%s", err, out)
	}
}

func TestRulesUnitTests(t *testing.T) {
	files, _ := filepath.Glob("*.rules_test.yml")
	if len(files) == 0 {
		t.Fatal("no *.rules_test.yml files")
	}
	out, err := exec.Command(promtool(t), append([]string{"test", "rules"}, files...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool test rules: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}
