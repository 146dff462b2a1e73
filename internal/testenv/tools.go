package testenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

// lastLines returns the last n lines of b: the tail of a component's log
// in a failure message.
func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// tailFile returns the last 40 lines of the file at path.
func tailFile(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(read %s: %v)", path, err)
	}
	return lastLines(b, 40)
}

// goTool is a Go main package built once into the user cache and reused by
// every later test binary.
type goTool struct {
	name string   // cache subdirectory and binary name
	key  string   // what the binary depends on (a version, a hash of go.sum…)
	dir  string   // directory the build runs in
	pkg  string   // package to build, relative to dir
	env  []string // extra environment of the build
}

// build returns the tool's binary, building it when the cache has none for
// its key. Concurrent test binaries are serialised by a lock file in the
// cache directory, and the binary appears by an atomic rename, so a reader
// never runs a half-written file. When the cache is not writable the tool
// is built into a temporary directory.
func (g goTool) build(ctx context.Context) (string, error) {
	dir := ""
	if cache, err := os.UserCacheDir(); err == nil {
		dir = filepath.Join(cache, "gatehouse", g.name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			dir = ""
		}
	}
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "gatehouse-"+g.name+"-"); err != nil {
			return "", fmt.Errorf("%s: temp dir: %w", g.name, err)
		}
	}
	bin := filepath.Join(dir, g.name+"-"+g.key)
	if ready(bin) {
		return bin, nil
	}
	lock, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", fmt.Errorf("%s: lock: %w", g.name, err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", fmt.Errorf("%s: lock: %w", g.name, err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) //nolint:errcheck // released on close too
	if ready(bin) {                                      // built by another test binary while this one waited
		return bin, nil
	}
	goCmd, err := exec.LookPath("go")
	if err != nil {
		if goroot := os.Getenv("GOROOT"); goroot != "" {
			goCmd = filepath.Join(goroot, "bin", "go")
		} else {
			return "", fmt.Errorf("%s: go toolchain not found: %w", g.name, err)
		}
	}
	tmp := fmt.Sprintf("%s.tmp-%d", bin, os.Getpid())
	cmd := exec.CommandContext(ctx, goCmd, "build", "-o", tmp, g.pkg)
	cmd.Dir = g.dir
	cmd.Env = append(os.Environ(), g.env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("go build %s: %w\n%s", g.pkg, err, lastLines(out, 40))
	}
	if err := os.Rename(tmp, bin); err != nil {
		return "", fmt.Errorf("%s: install: %w", g.name, err)
	}
	return bin, nil
}

func ready(bin string) bool {
	fi, err := os.Stat(bin)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}
