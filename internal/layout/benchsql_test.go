package layout

import (
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// A benchmark's ceiling must run the statements production runs: a
// function of the schema that a benchmark calls with another number of
// arguments than the product's code does is a leftover of an older
// signature (consumerbench once measured the 2-argument
// consumers_claim_many and the 7-argument consumers_apply long after the
// consumer moved to 3 and 8).
func TestBenchSQLCallsProductionSignatures(t *testing.T) {
	prod := map[string]map[int]bool{} // function -> argument counts the product calls it with
	bench := map[string][]sqlCall{}   // function -> each benchmark call, with its file
	err := filepath.WalkDir(repoRoot, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if skipDirs[d.Name()] || d.Name() == "migrations" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		inBench := strings.Contains(filepath.ToSlash(path), "deploy/bench/")
		for _, c := range sqlCalls(string(src)) {
			switch {
			case inBench:
				c.file = filepath.ToSlash(path)
				bench[c.fn] = append(bench[c.fn], c)
			case prod[c.fn] == nil:
				prod[c.fn] = map[int]bool{c.args: true}
			default:
				prod[c.fn][c.args] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(bench["consumers_apply"]) == 0 || len(prod["consumers_apply"]) == 0 {
		t.Fatalf("the scan found no consumers_apply call (benchmarks %v, product %v): the test no longer sees the code", bench["consumers_apply"], prod["consumers_apply"])
	}
	for fn, calls := range bench {
		counts, ok := prod[fn]
		if !ok {
			continue // a benchmark's own helper, or a function the product calls nowhere in Go
		}
		for _, c := range calls {
			if !counts[c.args] {
				t.Errorf("%s calls %s with %d arguments; the product calls it with %v", c.file, fn, c.args, slices.Sorted(maps.Keys(counts)))
			}
		}
	}
}

type sqlCall struct {
	fn, file string
	args     int
}

var callStart = regexp.MustCompile(`\b((?:consumers|ingest|relay|storage|outbox|inbox|auth)_[a-z_]+)\(`)

// sqlCalls finds calls of the schema's functions in src and counts each
// one's top-level arguments.
func sqlCalls(src string) []sqlCall {
	var out []sqlCall
	for _, m := range callStart.FindAllStringSubmatchIndex(src, -1) {
		fn := src[m[2]:m[3]]
		depth, args, empty, quoted := 1, 1, true, false
		for i := m[1]; i < len(src) && depth > 0; i++ {
			if src[i] == '\'' { // an SQL string literal: its commas are not separators
				quoted, empty = !quoted, false
				continue
			}
			if quoted {
				continue
			}
			switch src[i] {
			case '(':
				depth++
			case ')':
				depth--
			case ',':
				if depth == 1 {
					args++
				}
			case ' ', '\n', '\t':
			default:
				if depth == 1 {
					empty = false
				}
			}
		}
		if empty {
			args = 0
		}
		out = append(out, sqlCall{fn: fn, args: args})
	}
	return out
}
