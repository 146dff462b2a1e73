package layout

import (
	"os/exec"
	"path/filepath"
	"slices"
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

// runnerParts are the consumers' packages that the runner (consumers, the
// parent) is joined to by small interfaces: they import neither the parent
// nor each other (the vocabulary they share is consumers/event, their
// throttle consumers/throttle).
var runnerParts = []string{"consumers/fetch", "consumers/forward"}

// ingestRooms are the receiver's rooms below its edge (package ingest):
// none imports the edge, and among them each imports only ingest/inbox,
// the atomic write, which imports none of them.
var ingestRooms = []string{"ingest/inbox", "ingest/envelope", "ingest/admission", "ingest/upkeep", "ingest/admin"}

// configFree are the rooms that never depend on internal/config, not even
// through another package: each stage and the API take a small Config of
// their own, which package wiring (or cmd/gatehouse) builds from the
// configuration.
var configFree = []string{"ingest", "consumers", "auth", "api"}

// under reports whether pkg is the package dir of this module or one below it.
func under(pkg, dir string) bool {
	p := strings.TrimPrefix(pkg, module)
	return strings.HasPrefix(pkg, module) && (p == dir || strings.HasPrefix(p, dir+"/"))
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
	for _, part := range runnerParts {
		if !under(pkg, part) {
			continue
		}
		for _, d := range deps {
			if d == module+"consumers" {
				out = append(out, pkg+" imports "+d+": the runner's parts never import the runner")
			}
			for _, other := range runnerParts {
				if other != part && under(d, other) {
					out = append(out, pkg+" imports "+d+": the runner's parts never import each other")
				}
			}
		}
	}
	if under(pkg, "internal/settings") {
		for _, d := range deps {
			if strings.HasPrefix(d, module) && !under(d, "internal/settings") && !under(d, "schemas") && d != module+"internal/jws" {
				out = append(out, pkg+" imports "+d+": the stages' settings depend only on the shared vocabulary (schemas) and internal/jws (the safe algorithms, a leaf), so every stage may import them")
			}
		}
	}
	for _, r := range ingestRooms {
		if !under(pkg, r) {
			continue
		}
		for _, d := range deps {
			if d == module+"ingest" {
				out = append(out, pkg+" imports "+d+": ingest's rooms never import its edge")
			}
			for _, other := range ingestRooms {
				if other != r && (other != "ingest/inbox" || r == "ingest/inbox") && under(d, other) {
					out = append(out, pkg+" imports "+d+": among ingest's rooms, each imports only ingest/inbox")
				}
			}
		}
	}
	if under(pkg, "ingest/reconcile") && slices.Contains(deps, module+"ingest") {
		out = append(out, pkg+" imports "+module+"ingest: reconciliation writes through ingest/inbox, never the edge")
	}
	if from == "api" && slices.Contains(deps, module+"ingest") {
		out = append(out, pkg+" imports "+module+"ingest: the API reaches replay and erasure through ingest/admin, never the edge")
	}
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
		case from == "schemas" && to == "internal":
			out = append(out, pkg+" imports "+d+": the shared vocabulary imports no plumbing")
		case (from == "internal" || from == "schemas") && (isStage(to) || to == "api"):
			out = append(out, pkg+" imports "+d+": "+from+" imports no stage")
		case isStage(from) && to == "api":
			out = append(out, pkg+" imports "+d+": a stage never imports the API")
		case to == "wiring" && from != "cmd" && from != "deploy":
			out = append(out, pkg+" imports "+d+": only cmd and the benchmarks build stages from the configuration")
		case slices.Contains(configFree, from) && d == module+"internal/config":
			out = append(out, pkg+" depends on "+d+": a stage takes its own Config, built by package wiring")
		}
	}
	return out
}

// TestRulesCatchAViolation: the rules refuse what they should (a check
// that could never fail would prove nothing).
func TestRulesCatchAViolation(t *testing.T) {
	bad := map[string][]string{
		module + "ingest":             {module + "consumers"},
		module + "ingest/relay":       {module + "auth/bearer"},
		module + "internal/config":    {module + "ingest/signature"},
		module + "schemas/providers":  {module + "api"},
		module + "consumers":          {module + "cmd/gatehouse"},
		module + "consumers/fetch":    {module + "consumers/event", module + "consumers"},
		module + "ingest/relay/x":     {module + "internal/config"},
		module + "consumers/throttle": {module + "internal/redact", module + "internal/config"},
		module + "auth":               {module + "internal/kafka", module + "internal/config"},
		module + "api/console":        {module + "wiring"},
		module + "consumers/forward":  {module + "consumers/fetch"},
		module + "internal/settings":  {module + "internal/redact"},
		module + "schemas":            {module + "internal/settings"},
		module + "ingest/admin":       {module + "ingest/inbox", module + "ingest"},
		module + "ingest/upkeep":      {module + "ingest/admin"},
		module + "ingest/inbox":       {module + "ingest/upkeep"},
		module + "ingest/admission":   {module + "ingest/envelope"},
		module + "ingest/reconcile":   {module + "ingest"},
		module + "api":                {module + "ingest/admin", module + "ingest"},
	}
	for pkg, deps := range bad {
		if len(violations(pkg, deps)) == 0 {
			t.Errorf("%s -> %v not refused", pkg, deps)
		}
	}
	ok := map[string][]string{
		module + "ingest/relay":      {module + "ingest", module + "internal/kafka", module + "schemas"},
		module + "api":               {module + "auth", module + "ingest/admin", module + "ingest/inbox", module + "schemas/providers"},
		module + "ingest/admin":      {module + "ingest/inbox", module + "schemas"},
		module + "ingest":            {module + "ingest/inbox", module + "ingest/upkeep", module + "ingest/signature"},
		module + "consumers":         {module + "schemas/providers", module + "internal/redact"},
		module + "wiring":            {module + "ingest", module + "consumers/fetch", module + "internal/config"},
		module + "deploy/bench/x":    {module + "wiring", module + "internal/config"},
		module + "internal/doctor":   {module + "internal/config"},
		module + "cmd/gatehouse":     {module + "api/console", module + "consumers", module + "ingest"},
		module + "internal/testenv":  {module + "migrations"},
		module + "consumers/forward": {module + "consumers/event", module + "consumers/throttle", module + "internal/redact"},
		module + "consumers/fetch":   {module + "consumers/event", module + "consumers/throttle"},
		module + "consumers/event":   {module + "schemas"},
		module + "consumers/x":       {module + "internal/settings"},
		module + "internal/config":   {module + "internal/settings"},
		module + "internal/settings": {module + "schemas/providers"},
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
