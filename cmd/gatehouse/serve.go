package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/errgroup"

	"github.com/gatehouse/gatehouse/ingest/relay"
	"github.com/gatehouse/gatehouse/internal/config"
	"github.com/gatehouse/gatehouse/internal/obs"
	"github.com/gatehouse/gatehouse/internal/pg"
	"github.com/gatehouse/gatehouse/internal/tracing"
)

// base is what every long-running subcommand builds first.
type base struct {
	cfg  *config.Config
	log  *slog.Logger
	reg  *prometheus.Registry
	pool *pgxpool.Pool
	tp   *tracing.Provider // no-op unless tracing is configured
}

// close exports the spans still buffered (within five seconds) and closes
// the pool.
func (b *base) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := b.tp.Shutdown(ctx); err != nil {
		b.log.Warn("tracing shutdown", "err", err)
	}
	b.pool.Close()
}

// loadBase parses the flags in fs (already holding --config), loads the
// configuration and opens the logger, registry and database pool.
func loadBase(ctx context.Context, e env, fs *flag.FlagSet, cfgPath *string, args []string) (*base, error) {
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	explicit := false
	fs.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "config" })
	cfg, err := config.Load(*cfgPath, !explicit, e.getenv)
	if err != nil {
		return nil, err
	}
	if err := cfg.RequireDatabase(); err != nil {
		return nil, err
	}
	b := &base{cfg: cfg, log: obs.NewLogger(e.stderr, cfg.LogLevel), reg: obs.NewRegistry()}
	name := strings.TrimPrefix(fs.Name(), "gatehouse ")
	if b.tp, err = tracing.Setup(ctx, cfg.Tracing, "gatehouse-"+strings.Fields(name)[0], e.getenv); err != nil {
		return nil, err
	}
	b.pool, err = pg.Open(ctx, cfg.DatabaseURL, 32)
	if err != nil {
		_ = b.tp.Shutdown(ctx)
		return nil, err
	}
	return b, nil
}

func runServe(ctx context.Context, e env, args []string) error {
	fs, cfgPath := newFlags("serve", e)
	b, err := loadBase(ctx, e, fs, cfgPath, args)
	if err != nil {
		return err
	}
	defer b.close()
	// The outbox's backlog is visible even when every relay is down (in
	// `dev` the relay in the same process exports it).
	b.reg.MustRegister(relay.NewOutboxAgeCollector(b.pool))
	sf, err := publicSurface(ctx, b)
	if err != nil {
		return err
	}
	defer sf.close()
	return serveHTTP(ctx, e, b, sf)
}

// serveHTTP runs the public and admin listeners and the surface's
// background work until ctx ends (or one of them fails), then shuts the
// listeners down gracefully and waits for everything. It prints the bound
// addresses on stdout.
func serveHTTP(ctx context.Context, e env, b *base, sf *surface) error {
	pubLn, err := listen("listen", b.cfg.Listen)
	if err != nil {
		return err
	}
	pubLn = limitListener(pubLn, b.cfg.Ingest.MaxConnections, b.reg)
	admLn, err := listen("admin_listen", b.cfg.AdminListen)
	if err != nil {
		pubLn.Close()
		return err
	}
	public := publicServer(sf.router, b.cfg.Ingest)
	var serveTLS func(net.Listener) error
	scheme := "http"
	if b.cfg.Auth.TLSEnabled() { // built-in TLS (auth.tls_cert_file/tls_key_file)
		scheme = "https"
		serveTLS = func(l net.Listener) error { return public.ServeTLS(l, b.cfg.Auth.TLSCertFile, b.cfg.Auth.TLSKeyFile) }
	}
	fmt.Fprintf(e.stdout, "gatehouse listening public=%s://%s admin=http://%s\n", scheme, pubLn.Addr(), admLn.Addr())
	b.log.Info("listening", "public", pubLn.Addr().String(), "admin", admLn.Addr().String())
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return serveUntil(gctx, public, pubLn, serveTLS) })
	g.Go(func() error { return serveUntil(gctx, adminServer(b, nil), admLn, nil) })
	for _, run := range sf.background {
		g.Go(func() error { return run(gctx) })
	}
	return g.Wait()
}
