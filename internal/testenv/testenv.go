// Package testenv starts the real components integration tests need
// (PostgreSQL, Kafka, an OpenID Provider, Chromium) as private throwaway
// processes, or uses shared ones named by environment variables.
package testenv

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
)

var (
	exitMu    sync.Mutex
	exitHooks []func()
)

// atExit registers f to run when Main finishes.
func atExit(f func()) {
	exitMu.Lock()
	defer exitMu.Unlock()
	exitHooks = append(exitHooks, f)
}

// Main runs the tests of a package and then stops every component this
// package started lazily. Use it from TestMain: func TestMain(m *testing.M) { testenv.Main(m) }.
func Main(m *testing.M) {
	code := m.Run()
	exitMu.Lock()
	hooks := exitHooks
	exitHooks = nil
	exitMu.Unlock()
	for i := len(hooks) - 1; i >= 0; i-- {
		hooks[i]()
	}
	KafkaCleanup()
	os.Exit(code)
}

// RepoRoot walks up from the working directory to the directory holding go.mod.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", os.ErrNotExist
		}
		dir = parent
	}
}
