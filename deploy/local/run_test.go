// Package local_test checks the scripts of `make run` (deploy/local).
package local_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestRunWritesTheDatabaseURLPrivately is finding 6 of issue 25: `make run`
// wrote .data/database-url (which may hold a password) world-readable. The
// script runs here with go and gatehouse stubbed; the file must be 0600 and
// .data 0700, also when an earlier run left them readable.
func TestRunWritesTheDatabaseURLPrivately(t *testing.T) {
	root := t.TempDir()
	script, err := os.ReadFile("run.sh")
	if err != nil {
		t.Fatal(err)
	}
	for dir, files := range map[string]map[string]string{
		"deploy/local": {"run.sh": string(script)},
		"stubs":        {"go": "#!/bin/sh\nif [ \"$1\" = build ]; then printf '#!/bin/sh\\nexit 0\\n' >\"$3\"; chmod +x \"$3\"; fi\n"},
	} {
		if err := os.MkdirAll(filepath.Join(root, dir), 0o755); err != nil {
			t.Fatal(err)
		}
		for name, text := range files {
			if err := os.WriteFile(filepath.Join(root, dir, name), []byte(text), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	// An earlier run's world-readable leftovers.
	if err := os.MkdirAll(filepath.Join(root, ".data"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, ".data", "database-url"), []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", filepath.Join(root, "deploy/local/run.sh"))
	cmd.Env = append(os.Environ(), "PATH="+filepath.Join(root, "stubs")+":"+os.Getenv("PATH"),
		"GATEHOUSE_DATABASE_URL=postgres://gatehouse:s3cret@127.0.0.1:5432/gatehouse",
		"GATEHOUSE_AUTH_ISSUER=http://127.0.0.1:1/")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("run.sh: %v\n%s", err, out)
	}
	for path, want := range map[string]os.FileMode{".data": 0o700, ".data/database-url": 0o600} {
		fi, err := os.Stat(filepath.Join(root, path))
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != want {
			t.Errorf("%s: mode %o, want %o", path, got, want)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(root, ".data", "database-url")); string(b) != "postgres://gatehouse:s3cret@127.0.0.1:5432/gatehouse\n" {
		t.Errorf(".data/database-url = %q", b)
	}
}
