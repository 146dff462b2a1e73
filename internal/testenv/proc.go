package testenv

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"
)

// BuildGatehouse compiles cmd/gatehouse into dir and returns the binary's
// path (for tests and tools that run the real processes).
func BuildGatehouse(ctx context.Context, dir string) (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "gatehouse")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/gatehouse")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build gatehouse: %w: %s", err, out)
	}
	return bin, nil
}

// FreeAddr returns a loopback address with a port nothing listens on now.
func FreeAddr() (string, error) {
	port, err := freePort()
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("127.0.0.1:%d", port), nil
}

// Proc is one gatehouse process (serve, relay, consume…) that a test may
// kill and start again on the same addresses; its output is appended to
// LogPath. Admin is its admin listener (GATEHOUSE_ADMIN_LISTEN in Env).
type Proc struct {
	Name, Bin     string
	Args, Env     []string
	Public, Admin string
	LogPath       string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

// NewProc returns `bin sub --config config` as the Proc name, not started,
// on free loopback ports (GATEHOUSE_LISTEN and GATEHOUSE_ADMIN_LISTEN added
// to env), its output appended to logPath.
func NewProc(name, bin, sub, config string, env []string, logPath string) (*Proc, error) {
	public, err := FreeAddr()
	if err != nil {
		return nil, err
	}
	admin, err := FreeAddr()
	if err != nil {
		return nil, err
	}
	return &Proc{Name: name, Bin: bin, Args: []string{sub, "--config", config}, Public: public, Admin: admin, LogPath: logPath,
		Env: append(slices.Clone(env), "GATEHOUSE_LISTEN="+public, "GATEHOUSE_ADMIN_LISTEN="+admin)}, nil
}

// Start launches the process and waits until its admin listener answers
// /healthz (serve: /readyz).
func (p *Proc) Start(ctx context.Context) error {
	f, err := os.OpenFile(p.LogPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(p.Bin, p.Args...)
	cmd.Env, cmd.Stdout, cmd.Stderr = p.Env, f, f
	if err := cmd.Start(); err != nil {
		f.Close()
		return fmt.Errorf("start %s: %w", p.Name, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); f.Close(); close(done) }()
	p.mu.Lock()
	p.cmd, p.done = cmd, done
	p.mu.Unlock()
	path := "/healthz"
	if p.Name == "serve" {
		path = "/readyz"
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		resp, err := http.Get("http://" + p.Admin + path)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-done:
			return fmt.Errorf("%s exited during start (log %s)", p.Name, p.LogPath)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready after 2 minutes (log %s)", p.Name, p.LogPath)
		}
	}
}

func (p *Proc) signal(sig syscall.Signal, wait time.Duration) {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(sig)
	select {
	case <-done:
	case <-time.After(wait):
		_ = cmd.Process.Kill()
		<-done
	}
}

// Pid is the process's id (0 before Start).
func (p *Proc) Pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// Done is closed when the process started last has ended.
func (p *Proc) Done() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.done
}

// Kill SIGKILLs the process and waits for it to be gone.
func (p *Proc) Kill() { p.signal(syscall.SIGKILL, time.Minute) }

// Stop asks the process to stop (SIGTERM), then kills it after 15 s.
func (p *Proc) Stop() { p.signal(syscall.SIGTERM, 15*time.Second) }
