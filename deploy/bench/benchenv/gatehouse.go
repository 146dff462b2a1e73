package benchenv

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/gatehouse/gatehouse/ingest"
	"github.com/gatehouse/gatehouse/ingest/relay"
	"github.com/gatehouse/gatehouse/internal/config"
	"github.com/gatehouse/gatehouse/wiring"
)

// Gatehouse says how to launch one `gatehouse <Sub> --config <Config>`.
type Gatehouse struct {
	Bin, Sub, Config string
	// Log receives the process's stderr (its JSON log); it is created or truncated.
	Log string
	// Env is added to this process's environment.
	Env []string
	// Ready waits for the admin listener's /readyz to answer 200.
	Ready bool
	// Exited is called once, from another goroutine, when the process
	// ends before Stop.
	Exited func(*Proc)
}

// Proc is a running gatehouse process.
type Proc struct {
	Name          string // the subcommand
	Log           string
	Public, Admin string // host:port of its listeners ("" when it has none)
	Cmd           *exec.Cmd
	done          chan struct{}
	err           error // after done
	stopping      atomic.Bool
}

// listenLine is the line a subcommand prints once listening: the
// public (serve only) and admin addresses.
var listenLine = regexp.MustCompile(`(?:public=http://(\S+) )?admin=http://(\S+)`)

// Start launches the process, waits for the addresses it prints on
// stdout (and, with Ready, for /readyz).
func (g Gatehouse) Start(ctx context.Context) (*Proc, error) {
	p := &Proc{Name: g.Sub, Log: g.Log, done: make(chan struct{})}
	logf, err := os.OpenFile(g.Log, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("gatehouse %s log: %w", g.Sub, err)
	}
	p.Cmd = exec.Command(g.Bin, g.Sub, "--config", g.Config)
	p.Cmd.Env = append(os.Environ(), g.Env...)
	p.Cmd.Stderr = logf
	out, err := p.Cmd.StdoutPipe()
	if err != nil {
		logf.Close()
		return nil, err
	}
	if err := p.Cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s %s: %w", g.Bin, g.Sub, err)
	}
	addrs := make(chan []string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sent := false; sc.Scan(); {
			if m := listenLine.FindStringSubmatch(sc.Text()); m != nil && !sent {
				addrs <- m
				sent = true
			}
		}
	}()
	go func() {
		p.err = p.Cmd.Wait()
		logf.Close()
		close(p.done)
		if !p.stopping.Load() && g.Exited != nil {
			g.Exited(p)
		}
	}()
	select {
	case m := <-addrs:
		p.Public, p.Admin = m[1], m[2]
	case <-p.done:
		return nil, fmt.Errorf("gatehouse %s exited before listening (%v): %s", g.Sub, p.err, Tail(p.Log))
	case <-time.After(60 * time.Second):
		p.Stop()
		return nil, fmt.Errorf("gatehouse %s printed no admin address within 60s: %s", g.Sub, Tail(p.Log))
	case <-ctx.Done():
		p.Stop()
		return nil, ctx.Err()
	}
	if g.Ready {
		if err := p.waitReady(ctx, 90*time.Second); err != nil {
			p.Stop()
			return nil, err
		}
	}
	return p, nil
}

// Pid is the process's id.
func (p *Proc) Pid() int { return p.Cmd.Process.Pid }

// Err is how the process ended (after Done).
func (p *Proc) Err() error { return p.err }

func (p *Proc) waitReady(ctx context.Context, limit time.Duration) error {
	last := ""
	err := Until(ctx, 500*time.Millisecond, limit, func() (bool, error) {
		select {
		case <-p.done:
			return false, fmt.Errorf("gatehouse %s exited before ready (%v): %s", p.Name, p.err, Tail(p.Log))
		default:
		}
		resp, err := http.Get("http://" + p.Admin + "/readyz")
		if err != nil {
			last = err.Error()
			return false, nil
		}
		resp.Body.Close()
		last = resp.Status
		return resp.StatusCode == http.StatusOK, nil
	})
	if errors.Is(err, ErrNotWithin) {
		return fmt.Errorf("gatehouse %s not ready within %s (last /readyz: %s): %s", p.Name, limit, last, Tail(p.Log))
	}
	return err
}

// Stop interrupts the process and waits for it (killing it after 30 s).
func (p *Proc) Stop() {
	if p == nil {
		return
	}
	p.stopping.Store(true)
	_ = p.Cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		_ = p.Cmd.Process.Kill()
		<-p.done
	}
}

// ErrExited is a process's end during a run.
var ErrExited = errors.New("a gatehouse process exited during the run")

// Tail returns the last lines of a log file, for an error message.
func Tail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(no log)"
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > 5 {
		lines = lines[len(lines)-5:]
	}
	return strings.Join(lines, "\n")
}

// WriteConfig writes dir/name, a gatehouse.yaml on loopback ports (public
// and admin) with dbURL, the top-level keys of extra (YAML, each line
// ending in a newline) and providers (the entries of the providers: map,
// as ProviderYAML writes them), and returns its path.
func WriteConfig(dir, name, dbURL, extra, providers string) (string, error) {
	text := fmt.Sprintf("listen: \"127.0.0.1:0\"\nadmin_listen: \"127.0.0.1:0\"\ndatabase_url: %q\nlog_level: info\n%sproviders:\n%s", dbURL, extra, providers)
	path := filepath.Join(dir, name)
	return path, os.WriteFile(path, []byte(text), 0o600)
}

// InProcess composes the webhook receiver in this process as `gatehouse
// serve` does (ingest.New over an ingest.Writer of workers and batch, a
// chi router, net/http with serve's timeouts) on a loopback port, for a
// section that sets the Writer's parameters or runs the receiver beside
// its other stages. stop shuts it down and closes the Writer (not pool).
func InProcess(pool *pgxpool.Pool, cfg *config.Config, workers, batch int, log *slog.Logger, reg prometheus.Registerer) (addr string, stop func(), err error) {
	w, err := ingest.NewWriter(pool, workers, batch)
	if err != nil {
		return "", nil, err
	}
	ic := wiring.Receiver(cfg)
	ic.Writer, ic.Logger, ic.Registerer = w, log, reg
	rcv, err := ingest.New(ic)
	if err != nil {
		w.Close()
		return "", nil, err
	}
	r := chi.NewRouter()
	rcv.Routes(r)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		w.Close()
		return "", nil, err
	}
	srv := &http.Server{Handler: r, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second, IdleTimeout: 2 * time.Minute}
	go func() { _ = srv.Serve(ln) }()
	return ln.Addr().String(), func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		w.Close()
	}, nil
}

// Relay runs the outbox relay of cfg in this process (the code of
// `gatehouse relay`) until the returned stop is called, once it is ready.
func Relay(ctx context.Context, cfg relay.Config) (stop func(), err error) {
	rl, err := relay.New(cfg)
	if err != nil {
		return nil, err
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- rl.Run(rctx) }()
	select {
	case <-rl.Ready():
		return func() { cancel(); <-done; rl.Close() }, nil
	case err := <-done:
		err = fmt.Errorf("relay stopped: %w", err)
		cancel()
		rl.Close()
		return nil, err
	case <-time.After(time.Minute):
		cancel()
		<-done
		rl.Close()
		return nil, errors.New("relay not ready after a minute")
	}
}

// Serve serves h on a loopback port (a provider's API, a forward
// destination) and returns its base URL and what stops it.
func Serve(h http.Handler) (url string, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String(), func() { _ = srv.Close() }, nil
}
