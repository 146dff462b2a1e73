package layout

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const module = "github.com/gatehouse/gatehouse/"

// stages are the roots that talk only through PostgreSQL rows and Kafka
// records, never by importing each other.
var stages = []string{"ingest", "consumers", "auth"}

// room is the top-level folder of a package of this module ("" when
// outside it), with ingest/relay counted as ingest.
func room(pkg string) string {
	if !strings.HasPrefix(pkg, module) {
		return ""
	}
	return strings.SplitN(strings.TrimPrefix(pkg, module), "/", 2)[0]
}

// configFree are the rooms that never depend on internal/config: each
// stage and the API take their own small Config, which package wiring
// builds from the configuration (the issue-36 rule).
var configFree = []string{"ingest", "auth", "api"}

func isConfigFree(r string) bool {
	for _, s := range configFree {
		if r == s {
			return true
		}
	}
	return false
}

func isStage(r string) bool {
	for _, s := range stages {
		if r == s {
			return true
		}
	}
	return false
}

// violations lists the broken rules of pkg, given every package it
// depends on (go list -deps).
func violations(pkg string, deps []string) []string {
	var out []string
	from := room(pkg)
	for _, d := range deps {
		to := room(d)
		if to == "" || to == from {
			continue
		}
		switch {
		case to == "cmd":
			out = append(out, pkg+" imports "+d+": nothing imports cmd")
		case isStage(from) && isStage(to):
			out = append(out, pkg+" imports "+d+": stages never import each other")
		case (from == "internal" || from == "schemas") && (isStage(to) || to == "api"):
			out = append(out, pkg+" imports "+d+": "+from+" imports no stage")
		case isStage(from) && to == "api":
			out = append(out, pkg+" imports "+d+": a stage never imports the API")
		case to == "wiring" && from != "cmd" && from != "deploy":
			out = append(out, pkg+" imports "+d+": only cmd and the benchmarks build stages from the configuration")
		case isConfigFree(from) && d == module+"internal/config":
			out = append(out, pkg+" imports "+d+": a stage takes its own Config, built by package wiring")
		}
	}
	return out
}

// TestRulesCatchAViolation: the rules refuse what they should (a check
// that could never fail would prove nothing).
func TestRulesCatchAViolation(t *testing.T) {
	bad := map[string][]string{
		module + "ingest":            {module + "consumers"},
		module + "ingest/relay":      {module + "auth/bearer"},
		module + "internal/config":   {module + "ingest/signature"},
		module + "schemas/providers": {module + "api"},
		module + "consumers":         {module + "cmd/gatehouse"},
		module + "ingest/relay/x":    {module + "internal/config"},
		module + "auth":              {module + "internal/kafka", module + "internal/config"},
		module + "api/console":       {module + "wiring"},
	}
	for pkg, deps := range bad {
		if len(violations(pkg, deps)) == 0 {
			t.Errorf("%s -> %v not refused", pkg, deps)
		}
	}
	ok := map[string][]string{
		module + "ingest/relay":     {module + "ingest", module + "internal/kafka", module + "schemas"},
		module + "api":              {module + "auth", module + "ingest", module + "schemas/providers"},
		module + "consumers":        {module + "schemas/providers", module + "internal/config"},
		module + "cmd/gatehouse":    {module + "api/console", module + "consumers", module + "ingest"},
		module + "internal/testenv": {module + "migrations"},
		module + "wiring":           {module + "ingest", module + "auth", module + "api", module + "internal/config"},
		module + "deploy/bench/x":   {module + "wiring", module + "internal/config"},
	}
	for pkg, deps := range ok {
		if v := violations(pkg, deps); len(v) > 0 {
			t.Errorf("%s refused: %v", pkg, v)
		}
	}
}

// TestImportRules checks every package of the module with go list -deps
// (tests excluded: a test may drive several stages).
func TestImportRules(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "list", "-deps=false", "-f", `{{.ImportPath}}`, "./...")
	cmd.Dir = root
	list, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	pkgs := strings.Fields(string(list))
	if len(pkgs) < 20 {
		t.Fatalf("go list found %d packages", len(pkgs))
	}
	for _, pkg := range pkgs {
		cmd := exec.Command("go", "list", "-deps", pkg)
		cmd.Dir = root
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		for _, v := range violations(pkg, strings.Fields(string(out))) {
			t.Error(v)
		}
	}
}
