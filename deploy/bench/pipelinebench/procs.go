package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gatehouse/gatehouse/deploy/bench/benchenv"
	"github.com/gatehouse/gatehouse/internal/demoapi"
)

// provider is the run's one provider (SPEC.md's reference scheme, which
// documents no redelivery window, so the dedupe window may be as short as
// one partition).
const provider = "bench"

// writeConfig writes the gatehouse.yaml every process of the run reads:
// the bench provider with the demo API as its api_url (the consumers fetch
// every payment from it and write its projection), and the short storage
// lifetimes of the options.
func writeConfig(dir string, o *options, st *benchenv.Stack, secret []byte, apiURL string) (string, error) {
	text := fmt.Sprintf(`listen: "127.0.0.1:0"
admin_listen: "127.0.0.1:0"
database_url: %[1]q
log_level: info
kafka:
  brokers: [%[2]s]
storage:
  partition_interval: %[3]s
  key_partition_interval: %[4]s
  outbox_partition_interval: %[3]s
  retention: %[5]s
  outbox_retention: %[5]s
  dedupe_window: %[3]s
  check_interval: %[6]s
providers:
%[7]s`, st.DBURL, st.Brokers(), o.interval, o.keyInterval, o.retention, o.check,
		benchenv.ProviderYAML(provider, secret, "    api_url: "+apiURL+"\n"))
	path := filepath.Join(dir, "gatehouse.yaml")
	return path, os.WriteFile(path, []byte(text), 0o600)
}

// startAPI serves the demo provider's API (internal/demoapi, what `gatehouse
// dev --demo-api` serves) on a loopback port.
func startAPI() (url string, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: demoapi.Handler(nil), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String(), func() { _ = srv.Close() }, nil
}

// resetPartitions drops the partitions the migration created (a day wide,
// up to the end of tomorrow) and forgets them, so the first maintenance
// pass of `serve` lays out partitions of the configured interval from now
// on, as a store that has run with that interval for longer than its
// retention would have them.
func resetPartitions(ctx context.Context, pool *pgxpool.Pool) error {
	_, err := pool.Exec(ctx, `DO $$ DECLARE r record; BEGIN
  FOR r IN SELECT name FROM storage_partitions LOOP EXECUTE format('DROP TABLE %I', r.name); END LOOP;
  DELETE FROM storage_partitions;
END $$`)
	if err != nil {
		return fmt.Errorf("reset partitions: %w", err)
	}
	return nil
}

// buildGatehouse builds ./cmd/gatehouse into dir (run from the repository root).
func buildGatehouse(ctx context.Context, dir string) (string, error) {
	out := filepath.Join(dir, "gatehouse")
	goCmd := os.Getenv("GO")
	if goCmd == "" {
		goCmd = "go"
	}
	cmd := exec.CommandContext(ctx, goCmd, "build", "-o", out, "./cmd/gatehouse")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("build gatehouse (run from the repository root): %w", err)
	}
	return out, nil
}

// proc is one gatehouse process of the pipeline.
type proc struct {
	name   string // subcommand
	cmd    *exec.Cmd
	log    string // its stderr (the JSON log)
	public string // serve only: host:port of the webhook listener
	admin  string // host:port of its admin listener (/metrics, /readyz)
	done   chan struct{}
	err    error // after done
	// stopping is set by stop, so the end is not reported as a failure.
	stopping atomic.Bool
}

var (
	adminAddr  = regexp.MustCompile(`admin=http://(\S+)`)
	publicAddr = regexp.MustCompile(`public=http://(\S+)`)
)

// startProc runs `gatehouse <sub> --config cfg`, waits for the admin
// address it prints on stdout and then for its /readyz to answer 200.
// exited is called (once, from another goroutine) when the process ends
// before stop was called.
func startProc(ctx context.Context, bin, sub, cfg, dir string, exited func(*proc)) (*proc, error) {
	p := &proc{name: sub, log: filepath.Join(dir, sub+".log"), done: make(chan struct{})}
	logf, err := os.Create(p.log)
	if err != nil {
		return nil, err
	}
	p.cmd = exec.Command(bin, sub, "--config", cfg)
	// Its PostgreSQL backends carry its name (cpu.go).
	p.cmd.Env = append(os.Environ(), "PGAPPNAME=gatehouse-"+sub)
	p.cmd.Stderr = logf
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		logf.Close()
		return nil, err
	}
	if err := p.cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start gatehouse %s: %w", sub, err)
	}
	addrs := make(chan [2]string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		sent := false
		for sc.Scan() {
			if m := adminAddr.FindStringSubmatch(sc.Text()); m != nil && !sent {
				pub := ""
				if n := publicAddr.FindStringSubmatch(sc.Text()); n != nil {
					pub = n[1]
				}
				addrs <- [2]string{pub, m[1]}
				sent = true
			}
		}
	}()
	go func() {
		p.err = p.cmd.Wait()
		logf.Close()
		close(p.done)
		if !p.stopping.Load() && exited != nil {
			exited(p)
		}
	}()
	select {
	case a := <-addrs:
		p.public, p.admin = a[0], a[1]
	case <-p.done:
		return nil, fmt.Errorf("gatehouse %s exited before listening (%v): %s", sub, p.err, tail(p.log))
	case <-time.After(60 * time.Second):
		p.stop()
		return nil, fmt.Errorf("gatehouse %s printed no admin address within 60s: %s", sub, tail(p.log))
	case <-ctx.Done():
		p.stop()
		return nil, ctx.Err()
	}
	if err := p.waitReady(ctx, 90*time.Second); err != nil {
		p.stop()
		return nil, err
	}
	return p, nil
}

func (p *proc) waitReady(ctx context.Context, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	last := ""
	for time.Now().Before(deadline) {
		resp, err := http.Get("http://" + p.admin + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-p.done:
			return fmt.Errorf("gatehouse %s exited before ready (%v): %s", p.name, p.err, tail(p.log))
		case <-time.After(500 * time.Millisecond):
		}
	}
	return fmt.Errorf("gatehouse %s not ready within %s (last /readyz: %s): %s", p.name, limit, last, tail(p.log))
}

// stop interrupts the process and waits for it (killing it after 30 s).
func (p *proc) stop() {
	if p == nil {
		return
	}
	p.stopping.Store(true)
	_ = p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// tail returns the last lines of a log file, for an error message.
func tail(path string) string {
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

var errExited = errors.New("a gatehouse process exited during the run")

// warnings counts the WARN and ERROR lines of the process's JSON log and
// returns the message of the last one.
func (p *proc) warnings() (n int, last string) {
	f, err := os.Open(p.log)
	if err != nil {
		return 0, ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.Contains(line, `"level":"WARN"`) || strings.Contains(line, `"level":"ERROR"`) {
			n++
			last = line
		}
	}
	if len(last) > 300 {
		last = last[:300] + "…"
	}
	return n, last
}
