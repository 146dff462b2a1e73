package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gatehouse/gatehouse/deploy/bench/benchenv"
	"github.com/gatehouse/gatehouse/ingest"
	"github.com/gatehouse/gatehouse/internal/config"
	"github.com/gatehouse/gatehouse/internal/obs"
)

// receiver is the gatehouse receiver under test.
type receiver struct {
	addr string // host:port of the public listener
	desc string // what runs, for the table
	pid  int    // the receiver's process (0 when in-process)
	stop func()
	// metrics reads the receiver's own metrics (its ack latency histogram).
	metrics gatherer
}

// startReceiver starts `gatehouse serve` (o.gatehouse) with a config holding
// the bench provider, or, when o.gatehouse is empty, the same components
// in-process with the Writer parameters from the flags.
func startReceiver(ctx context.Context, b *bench) (*receiver, error) {
	cfgText := fmt.Sprintf(`listen: "127.0.0.1:0"
admin_listen: "127.0.0.1:0"
database_url: %q
log_level: info
providers:
  %s:
    scheme: reference
    timestamp_header: %s
    signature_header: %s
    tolerance: 300s
    secrets:
      - id: bench
        value: %q
    aggregate_id_path: [data.payment_id]
`, b.DBURL, provider, benchenv.TimestampHeader, benchenv.SignatureHeader, string(b.secret)) + mixYAML(b.o.mix, b.mixSecret)
	if b.o.gatehouse == "" {
		return startInProcess(ctx, b, cfgText)
	}
	path := filepath.Join(b.Dir, "gatehouse.yaml")
	if err := os.WriteFile(path, []byte(cfgText), 0o600); err != nil {
		return nil, err
	}
	logf, err := os.OpenFile(b.o.receiverLog, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("receiver log: %w", err)
	}
	cmd := exec.Command(b.o.gatehouse, "serve", "--config", path)
	cmd.Env = append(os.Environ(), b.o.extraEnv...)
	cmd.Stderr = logf
	out, err := cmd.StdoutPipe()
	if err != nil {
		logf.Close()
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s: %w", b.o.gatehouse, err)
	}
	stop := func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		logf.Close()
	}
	addr, admin, err := readListenAddr(out)
	if err != nil {
		stop()
		return nil, err
	}
	procs := os.Getenv("GOMAXPROCS")
	if procs == "" {
		procs = "default"
	}
	desc := fmt.Sprintf("`gatehouse serve` binary (Writer defaults of cmd/gatehouse/serve.go, GOMAXPROCS=%s)", procs)
	return &receiver{addr: addr, desc: desc, pid: cmd.Process.Pid, stop: stop, metrics: scrapeAdmin(admin)}, nil
}

var listening = regexp.MustCompile(`public=http://(\S+) admin=http://(\S+)`)

// readListenAddr returns the public and admin addresses gatehouse prints on
// stdout and keeps draining stdout afterwards.
func readListenAddr(out io.Reader) (public, admin string, err error) {
	sc := bufio.NewScanner(out)
	lines := make(chan []string, 1)
	go func() {
		found := false
		for sc.Scan() {
			if m := listening.FindStringSubmatch(sc.Text()); m != nil && !found {
				found = true
				lines <- m
			}
		}
		if !found {
			close(lines)
		}
	}()
	select {
	case m, ok := <-lines:
		if !ok {
			return "", "", errors.New("gatehouse serve exited before listening (see -receiver-log)")
		}
		return m[1], m[2], nil
	case <-time.After(30 * time.Second):
		return "", "", errors.New("gatehouse serve did not print its listen address within 30s")
	}
}

// startInProcess composes the receiver as cmd/gatehouse does (config,
// JSON logger, registry, chi router, ingest.New, Writer, net/http server)
// but with the Writer and pool sizes taken from the flags.
func startInProcess(ctx context.Context, b *bench, cfgText string) (*receiver, error) {
	cfg, err := config.Parse([]byte(cfgText), func(string) string { return "" })
	if err != nil {
		return nil, fmt.Errorf("bench config: %w", err)
	}
	logf, err := os.OpenFile(b.o.receiverLog, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("receiver log: %w", err)
	}
	pcfg, err := pgxpool.ParseConfig(b.DBURL)
	if err != nil {
		logf.Close()
		return nil, err
	}
	pcfg.MaxConns = int32(b.o.poolSize)
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		logf.Close()
		return nil, fmt.Errorf("pool: %w", err)
	}
	w, err := ingest.NewWriter(pool, b.o.workers, b.o.batch)
	if err != nil {
		pool.Close()
		logf.Close()
		return nil, err
	}
	reg := obs.NewRegistry()
	rcv, err := ingest.New(ingest.Config{
		Providers:  cfg.Providers,
		Store:      w,
		Logger:     obs.NewLogger(logf, cfg.LogLevel),
		Registerer: reg,
	})
	if err != nil {
		w.Close()
		pool.Close()
		logf.Close()
		return nil, err
	}
	r := chi.NewRouter()
	rcv.Routes(r)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		w.Close()
		pool.Close()
		logf.Close()
		return nil, err
	}
	srv := &http.Server{Handler: r, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second, IdleTimeout: 2 * time.Minute}
	go func() { _ = srv.Serve(ln) }()
	stop := func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		w.Close()
		pool.Close()
		logf.Close()
	}
	desc := fmt.Sprintf("in-process receiver (Writer workers=%d, batch=%d, pool=%d, GOMAXPROCS shared with the load generator)",
		b.o.workers, b.o.batch, b.o.poolSize)
	return &receiver{addr: ln.Addr().String(), desc: strings.TrimSpace(desc), stop: stop, metrics: gatherRegistry(reg)}, nil
}
