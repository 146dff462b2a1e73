// Package stripemock builds and runs stripe-mock, Stripe's official API
// mock, as its own process for tests and benchmarks.
package stripemock

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Module is the pinned stripe-mock release.
const Module = "github.com/stripe/stripe-mock@v0.203.0"

var buildMu sync.Mutex

// Binary returns the path of the stripe-mock binary, downloading the pinned
// module through the Go proxy and building it into the user cache directory
// on first use.
func Binary(ctx context.Context) (string, error) {
	buildMu.Lock()
	defer buildMu.Unlock()
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "gatehouse", strings.ReplaceAll(filepath.Base(Module), "@", "-"))
	bin := filepath.Join(dir, "stripe-mock")
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	dl := exec.CommandContext(ctx, "go", "mod", "download", "-json", Module)
	dl.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	dl.Dir = os.TempDir()
	out, err := dl.Output()
	if err != nil {
		return "", fmt.Errorf("go mod download %s: %w: %s", Module, err, stderrOf(err))
	}
	var mod struct{ Dir, Error string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		return "", fmt.Errorf("go mod download %s: %s", Module, mod.Error)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("stripe-mock cache dir: %w", err)
	}
	tmp := bin + ".tmp"
	build := exec.CommandContext(ctx, "go", "build", "-o", tmp, ".")
	build.Dir = mod.Dir
	build.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build stripe-mock: %w: %s", err, out)
	}
	if err := os.Rename(tmp, bin); err != nil {
		return "", fmt.Errorf("install stripe-mock: %w", err)
	}
	return bin, nil
}

func stderrOf(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return string(ee.Stderr)
	}
	return ""
}

// Server is a running stripe-mock.
type Server struct {
	URL string // http://127.0.0.1:port
	cmd *exec.Cmd
}

// Start runs stripe-mock on free loopback ports and returns once it listens.
func Start(ctx context.Context) (*Server, error) {
	bin, err := Binary(ctx)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "-http-addr", "127.0.0.1:0", "-https-addr", "127.0.0.1:0")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start stripe-mock: %w", err)
	}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		sent := false
		for sc.Scan() {
			const prefix = "Listening for HTTP at address: "
			if line := sc.Text(); !sent && strings.HasPrefix(line, prefix) {
				found <- strings.TrimSpace(strings.TrimPrefix(line, prefix))
				sent = true
			}
		}
		if !sent {
			close(found)
		}
	}()
	select {
	case addr, ok := <-found:
		if !ok {
			_ = cmd.Wait()
			return nil, errors.New("stripe-mock exited before listening")
		}
		return &Server{URL: "http://" + addr, cmd: cmd}, nil
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, errors.New("stripe-mock did not listen within 60s")
	}
}

// Stop ends the process.
func (s *Server) Stop() {
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
}
