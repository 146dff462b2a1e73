package testenv

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// StripeMockModule is the pinned release of stripe-mock, Stripe's official
// API mock.
const StripeMockModule = "github.com/stripe/stripe-mock@v0.203.0"

// stripeMockBinary downloads the pinned module through the Go proxy and
// builds it into the user cache on first use (goTool).
func stripeMockBinary(ctx context.Context) (string, error) {
	dir, err := stripeMockDir(ctx)
	if err != nil {
		return "", err
	}
	return goTool{name: "stripe-mock", key: "v0.203.0", dir: dir, pkg: ".",
		env: []string{"GOWORK=off", "GOFLAGS=-mod=mod"}}.build(ctx)
}

// stripeMockDir downloads the pinned module through the Go proxy (once)
// and returns its directory.
func stripeMockDir(ctx context.Context) (string, error) {
	dl := exec.CommandContext(ctx, "go", "mod", "download", "-json", StripeMockModule)
	dl.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	dl.Dir = os.TempDir()
	out, err := dl.Output()
	if err != nil {
		var ee *exec.ExitError
		stderr := ""
		if errors.As(err, &ee) {
			stderr = string(ee.Stderr)
		}
		return "", fmt.Errorf("go mod download %s: %w: %s", StripeMockModule, err, stderr)
	}
	var mod struct{ Dir, Error string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		return "", fmt.Errorf("go mod download %s: %s", StripeMockModule, mod.Error)
	}
	return mod.Dir, nil
}

// StripeMock is a running stripe-mock.
type StripeMock struct {
	URL string // http://127.0.0.1:port
	cmd *exec.Cmd
}

// StartStripeMock runs stripe-mock on free loopback ports and returns once
// it listens.
func StartStripeMock(ctx context.Context) (*StripeMock, error) {
	bin, err := stripeMockBinary(ctx)
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
		return &StripeMock{URL: "http://" + addr, cmd: cmd}, nil
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, errors.New("stripe-mock did not listen within 60s")
	}
}

// Stop ends the process.
func (s *StripeMock) Stop() {
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
}
