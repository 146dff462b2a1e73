package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gatehouse/gatehouse/internal/testenv"
)

// soakSecret signs the soak's webhooks (reference scheme).
const soakSecret = "whsec_soak_secret_for_a_chaos_run"

// topic is the provider's topic.
const topic = "gatehouse.webhooks.soak"

// stack is the running topology.
type stack struct {
	o        *options
	pg       *testenv.PG
	kafka    *testenv.KafkaCluster
	dbURL    string
	pool     *pgxpool.Pool
	api      *providerAPI
	serve    *proc
	relay    *proc
	consume  []*proc
	public   string // http://host:port of serve
	logMu    sync.Mutex
	started  time.Time
	procsDir string
}

func (s *stack) logf(format string, args ...any) {
	s.logMu.Lock()
	defer s.logMu.Unlock()
	fmt.Fprintf(s.o.log, "soak %6.1fs: %s\n", time.Since(s.started).Seconds(), fmt.Sprintf(format, args...))
}

func startStack(ctx context.Context, o *options) (_ *stack, err error) {
	s := &stack{o: o, started: time.Now(), procsDir: filepath.Join(o.dir, "procs")}
	defer func() {
		if err != nil {
			s.close()
		}
	}()
	if err := os.MkdirAll(s.procsDir, 0o755); err != nil {
		return nil, err
	}
	s.logf("building gatehouse")
	root, err := testenv.RepoRoot()
	if err != nil {
		return nil, err
	}
	bin := filepath.Join(o.dir, "gatehouse")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/gatehouse")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("build gatehouse: %w: %s", err, out)
	}
	s.logf("starting PostgreSQL (fsync on) and a three-node Kafka cluster")
	var wg sync.WaitGroup
	var pgErr, kErr error
	wg.Add(2)
	go func() { defer wg.Done(); s.pg, pgErr = testenv.StartPG(ctx, filepath.Join(o.dir, "pg"), false) }()
	go func() {
		defer wg.Done()
		s.kafka, kErr = testenv.StartKafkaCluster(ctx, filepath.Join(o.dir, "kafka"), 3)
	}()
	wg.Wait()
	if err := errors.Join(pgErr, kErr); err != nil {
		return nil, err
	}
	if s.dbURL, err = testenv.CreateDatabase(ctx, s.pg.AdminURL(), false); err != nil {
		return nil, err
	}
	if s.pool, err = pgxpool.New(ctx, s.dbURL); err != nil {
		return nil, err
	}
	s.api = newProviderAPI()
	cfgPath := filepath.Join(o.dir, "gatehouse.yaml")
	cfg := fmt.Sprintf(`kafka:
  partitions: 6
  replication_factor: 3
  topic_configs: {min.insync.replicas: "2"}
consumers:
  group: soak
  retry_delays: [1s, 2s, 4s, 8s]
  session_timeout: 10s
providers:
  soak:
    scheme: reference
    timestamp_header: X-Gatehouse-Timestamp
    signature_header: X-Gatehouse-Signature
    secrets: [{id: soak, value: "env:SOAK_SECRET"}]
    aggregate_id_path: [data.payment_id]
    topic: %s
    api_url: %s
`, topic, s.api.url)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		return nil, err
	}
	env := append(os.Environ(), "GATEHOUSE_DATABASE_URL="+s.dbURL, "SOAK_SECRET="+soakSecret,
		"GATEHOUSE_KAFKA_BROKERS="+strings.Join(s.kafka.Brokers(), ","), "GATEHOUSE_LOG_LEVEL=warn")
	migrate := exec.CommandContext(ctx, bin, "migrate", "--config", cfgPath)
	migrate.Env = env
	if out, err := migrate.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("gatehouse migrate: %w: %s", err, out)
	}
	newProc := func(name, sub string) (*proc, error) {
		public, err := freeAddr()
		if err != nil {
			return nil, err
		}
		admin, err := freeAddr()
		if err != nil {
			return nil, err
		}
		return &proc{name: name, bin: bin, args: []string{sub, "--config", cfgPath},
			env:    append(append([]string(nil), env...), "GATEHOUSE_LISTEN="+public, "GATEHOUSE_ADMIN_LISTEN="+admin),
			public: public, admin: admin, logPath: filepath.Join(s.procsDir, name+".log")}, nil
	}
	if s.serve, err = newProc("serve", "serve"); err != nil {
		return nil, err
	}
	s.public = "http://" + s.serve.public
	if s.relay, err = newProc("relay", "relay"); err != nil {
		return nil, err
	}
	for i := range 2 {
		p, err := newProc(fmt.Sprintf("consume-%d", i+1), "consume")
		if err != nil {
			return nil, err
		}
		s.consume = append(s.consume, p)
	}
	for _, p := range s.procs() {
		if err := p.start(ctx); err != nil {
			return nil, err
		}
	}
	s.logf("stack ready: serve %s, relay, 2 consumers; brokers %v", s.public, s.kafka.Brokers())
	return s, nil
}

func (s *stack) procs() []*proc { return append([]*proc{s.serve, s.relay}, s.consume...) }

func (s *stack) close() {
	for _, p := range s.procs() {
		if p != nil {
			p.stop()
		}
	}
	if s.pool != nil {
		s.pool.Close()
	}
	if s.api != nil {
		s.api.close()
	}
	if s.kafka != nil {
		s.kafka.Stop()
	}
	if s.pg != nil {
		_ = s.pg.Stop(false)
	}
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// proc is one gatehouse process the injector may kill and restart on the
// same addresses; its output is appended to logPath.
type proc struct {
	name, bin     string
	args, env     []string
	public, admin string
	logPath       string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

// start launches the process and waits until its admin listener answers
// /healthz (serve: /readyz).
func (p *proc) start(ctx context.Context) error {
	f, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(p.bin, p.args...)
	cmd.Env, cmd.Stdout, cmd.Stderr = p.env, f, f
	if err := cmd.Start(); err != nil {
		f.Close()
		return fmt.Errorf("start %s: %w", p.name, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); f.Close(); close(done) }()
	p.mu.Lock()
	p.cmd, p.done = cmd, done
	p.mu.Unlock()
	path := "/healthz"
	if p.name == "serve" {
		path = "/readyz"
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		resp, err := http.Get("http://" + p.admin + path)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-done:
			return fmt.Errorf("%s exited during start (log %s)", p.name, p.logPath)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready after 2 minutes (log %s)", p.name, p.logPath)
		}
	}
}

func (p *proc) signal(sig syscall.Signal, wait time.Duration) {
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

// kill SIGKILLs the process and waits for it to be gone.
func (p *proc) kill() { p.signal(syscall.SIGKILL, time.Minute) }

// stop asks the process to stop (SIGTERM), then kills it after 15 s.
func (p *proc) stop() { p.signal(syscall.SIGTERM, 15*time.Second) }
