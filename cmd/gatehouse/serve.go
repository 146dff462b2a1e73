package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/errgroup"

	"github.com/gatehouse/gatehouse/ingest"
	"github.com/gatehouse/gatehouse/internal/config"
	"github.com/gatehouse/gatehouse/internal/obs"
	"github.com/gatehouse/gatehouse/internal/pg"
)

// base is what every long-running subcommand builds first.
type base struct {
	cfg  *config.Config
	log  *slog.Logger
	reg  *prometheus.Registry
	pool *pgxpool.Pool
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
	b.pool, err = pg.Open(ctx, cfg.DatabaseURL, 32)
	if err != nil {
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
	defer b.pool.Close()
	router, closeRouter, err := publicRouter(ctx, b)
	if err != nil {
		return err
	}
	defer closeRouter()
	return serveHTTP(ctx, e, b, router)
}

// publicRouter mounts every public surface: the webhook receiver, and the
// login and API routes when configured. Call closeFn once the server has
// stopped; it releases the receiver's Writer.
func publicRouter(ctx context.Context, b *base) (r chi.Router, closeFn func(), err error) {
	r = chi.NewRouter()
	// One Writer worker: one statement in flight, everything arriving
	// meanwhile goes into the next (up to 64 rows). Measured best for
	// throughput, CPU per event and ack latency (docs/BENCHMARKS.md).
	w, err := ingest.NewWriter(b.pool, 1, 64)
	if err != nil {
		return nil, nil, err
	}
	rcv, err := ingest.New(ingest.Config{
		Providers:  b.cfg.Providers,
		Store:      w,
		Logger:     b.log,
		Registerer: b.reg,
	})
	if err == nil {
		rcv.Routes(r)
		err = mountAuth(ctx, b, r)
	}
	if err == nil {
		err = mountAPI(ctx, b, r)
	}
	if err != nil {
		w.Close()
		return nil, nil, err
	}
	return r, w.Close, nil
}

// serveHTTP runs the public and admin listeners until ctx ends, then shuts
// them down gracefully. It prints the bound addresses on stdout.
func serveHTTP(ctx context.Context, e env, b *base, public http.Handler) error {
	pubLn, err := net.Listen("tcp", b.cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen %s: %w", b.cfg.Listen, err)
	}
	admLn, err := net.Listen("tcp", b.cfg.AdminListen)
	if err != nil {
		pubLn.Close()
		return fmt.Errorf("listen %s: %w", b.cfg.AdminListen, err)
	}
	admin := obs.AdminHandler(b.reg, b.log, map[string]obs.Check{"database": pg.Ping(b.pool)})
	servers := []*http.Server{
		{Handler: public, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second, IdleTimeout: 2 * time.Minute},
		{Handler: admin, ReadHeaderTimeout: 10 * time.Second},
	}
	scheme := "http"
	if b.cfg.Auth.TLSEnabled() {
		scheme = "https"
	}
	fmt.Fprintf(e.stdout, "gatehouse listening public=%s://%s admin=http://%s\n", scheme, pubLn.Addr(), admLn.Addr())
	b.log.Info("listening", "public", pubLn.Addr().String(), "admin", admLn.Addr().String())
	g, gctx := errgroup.WithContext(ctx)
	for i, ln := range []net.Listener{pubLn, admLn} {
		srv := servers[i]
		g.Go(func() error {
			serve := srv.Serve
			if i == 0 && b.cfg.Auth.TLSEnabled() { // public listener: built-in TLS (auth.tls_cert_file/tls_key_file)
				serve = func(l net.Listener) error { return srv.ServeTLS(l, b.cfg.Auth.TLSCertFile, b.cfg.Auth.TLSKeyFile) }
			}
			if err := serve(ln); !errors.Is(err, http.ErrServerClosed) {
				return fmt.Errorf("serve: %w", err)
			}
			return nil
		})
	}
	g.Go(func() error {
		<-gctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for _, srv := range servers {
			_ = srv.Shutdown(sctx)
		}
		return nil
	})
	return g.Wait()
}
