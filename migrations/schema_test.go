package migrations_test

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/gatehouse/gatehouse/internal/testenv"
	"github.com/gatehouse/gatehouse/migrations"
)

func TestMain(m *testing.M) { testenv.Main(m) }

var update = flag.Bool("update", false, "rewrite testdata/schema.sql from what the migrations produce")

// TestBaselineIsTheSchema: the migrations produce exactly testdata/schema.sql
// (pg_dump --schema-only, with the moment of migration normalised away).
// The file was first written from the development history's 66
// migrations, before they were squashed into 00001_baseline.sql: this test
// is the proof that the baseline is that schema. A new migration changes
// the schema on purpose: rewrite the file with
//
//	go test ./migrations -run TestBaselineIsTheSchema -update
//
// and review its diff with the migration.
func TestBaselineIsTheSchema(t *testing.T) {
	url := testenv.PostgresUnmigrated(t)
	if err := migrations.Up(context.Background(), url); err != nil {
		t.Fatal(err)
	}
	got := normalizeDump(pgDump(t, url))
	path := filepath.Join("testdata", "schema.sql")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := string(b); got != want {
		g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
		for i := 0; i < len(g) || i < len(w); i++ {
			var gl, wl string
			if i < len(g) {
				gl = g[i]
			}
			if i < len(w) {
				wl = w[i]
			}
			if gl != wl {
				t.Fatalf("the migrations' schema differs from testdata/schema.sql at line %d:\n got: %q\nwant: %q\n(a new migration: rewrite it with -update and review the diff)", i+1, gl, wl)
			}
		}
	}
}

func pgDump(t *testing.T, url string) string {
	t.Helper()
	dir, err := testenv.PGBinDir()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(filepath.Join(dir, "pg_dump"), "--schema-only", "--no-owner", "--no-privileges", "--dbname", url).Output()
	if err != nil {
		t.Fatalf("pg_dump: %v", err)
	}
	return string(out)
}

var (
	dumpMeta       = regexp.MustCompile(`(?m)^(\\(un)?restrict .*|-- Dumped (from|by) .*)\n`)
	dumpTimestamp  = regexp.MustCompile(`'\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d+)?\+00'`)
	dumpPartition  = regexp.MustCompile(`_p\d{8}t\d{6}`)
	dumpBlankLines = regexp.MustCompile(`\n{3,}`)
)

// normalizeDump removes what differs between two dumps of one schema: the
// dump's own metadata, and the moment of migration (the first partitions'
// bounds and names).
func normalizeDump(s string) string {
	s = dumpMeta.ReplaceAllString(s, "")
	s = dumpTimestamp.ReplaceAllString(s, "'<migrated at>'")
	s = dumpPartition.ReplaceAllString(s, "_p<time>")
	return dumpBlankLines.ReplaceAllString(s, "\n\n")
}

// Migrations are numbered 1, 2, 3, … with no gap (the baseline is 1).
func TestMigrationsAreNumberedInSequence(t *testing.T) {
	names, err := filepath.Glob("*.sql")
	if err != nil || len(names) == 0 {
		t.Fatalf("no migrations: %v", err)
	}
	for i, n := range names {
		if want := fmt.Sprintf("%05d_", i+1); !strings.HasPrefix(n, want) {
			t.Errorf("migration %d is %s, want a name starting %s", i+1, n, want)
		}
	}
}

// A migration numbered below a version the database already has is
// refused, not applied out of order.
func TestOutOfOrderMigrationIsRefused(t *testing.T) {
	url := testenv.PostgresUnmigrated(t)
	ctx := context.Background()
	first := fstest.MapFS{
		"00001_a.sql": {Data: []byte("-- +goose Up\nCREATE TABLE a (x int);\n")},
		"00003_c.sql": {Data: []byte("-- +goose Up\nCREATE TABLE c (x int);\n")},
	}
	if err := migrations.UpFS(ctx, url, first); err != nil {
		t.Fatal(err)
	}
	later := fstest.MapFS{"00002_b.sql": {Data: []byte("-- +goose Up\nCREATE TABLE b (x int);\n")}}
	maps.Copy(later, first)
	err := migrations.UpFS(ctx, url, later)
	if err == nil {
		t.Fatal("00002 applied after 00003: out-of-order migrations must be refused")
	}
	t.Logf("refused: %v", err)
}
