package benchenv

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/gatehouse/gatehouse/internal/testenv"
)

// Gatehouse says how to launch one `gatehouse <Sub> --config <Config>`.
type Gatehouse struct {
	Bin, Sub, Config string
	Log              string   // receives the process's output (appended)
	Env              []string // added to this process's environment
}

// Proc is a running gatehouse process: the tests' testenv.Proc.
type Proc = testenv.Proc

// Start launches the process on free ports and waits for /healthz (/readyz).
func (g Gatehouse) Start(ctx context.Context) (*Proc, error) {
	p, err := testenv.NewProc(g.Sub, g.Bin, g.Sub, g.Config, append(os.Environ(), g.Env...), g.Log)
	if err != nil {
		return nil, err
	}
	if err := p.Start(ctx); err != nil {
		p.Stop()
		return nil, fmt.Errorf("gatehouse %s: %w", g.Sub, err)
	}
	return p, nil
}

// WriteConfig writes dir/name, a gatehouse.yaml of dbURL, extra top-level
// keys and providers (ProviderYAML's entries), and returns its path.
func WriteConfig(dir, name, dbURL, extra, providers string) (string, error) {
	text := fmt.Sprintf("database_url: %q\nlog_level: info\n%sproviders:\n%s", dbURL, extra, providers)
	path := filepath.Join(dir, name)
	return path, os.WriteFile(path, []byte(text), 0o600)
}

// Serve serves h on a loopback port and returns its base URL and its stop.
func Serve(h http.Handler) (url string, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String(), func() { _ = srv.Close() }, nil
}
