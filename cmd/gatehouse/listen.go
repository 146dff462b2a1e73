package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/gatehouse/gatehouse/internal/obs"
	"github.com/gatehouse/gatehouse/internal/pg"
)

// shutdownTimeout bounds a listener's graceful shutdown.
const shutdownTimeout = 10 * time.Second

// listen opens addr; the error names the address and the config key.
func listen(key, addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%s: listen %s: %w", key, addr, err)
	}
	return ln, nil
}

// adminServer serves /metrics, /healthz and /readyz: the database is
// reachable, and so is Kafka for the stages that need it (kafka not nil).
func adminServer(b *base, kafka obs.Check) *http.Server {
	checks := map[string]obs.Check{"database": pg.Ping(b.pool)}
	if kafka != nil {
		checks["kafka"] = kafka
	}
	obs.RegisterDependencies(b.reg, checks)
	return &http.Server{Handler: obs.AdminHandler(b.reg, b.log, checks), ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout: 10 * time.Second, WriteTimeout: 30 * time.Second, IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 16 << 10}
}

// serveUntil serves srv on ln until ctx ends, then shuts it down gracefully
// (in-flight requests finish, within shutdownTimeout). serve, when not nil,
// replaces srv.Serve (TLS). It returns nil after a clean shutdown and the
// server's error otherwise.
func serveUntil(ctx context.Context, srv *http.Server, ln net.Listener, serve func(net.Listener) error) error {
	if serve == nil {
		serve = srv.Serve
	}
	errc := make(chan error, 1)
	go func() { errc <- serve(ln) }()
	select {
	case err := <-errc:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return fmt.Errorf("serve %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	err := srv.Shutdown(sctx)
	if serr := <-errc; !errors.Is(serr, http.ErrServerClosed) && serr != nil {
		return fmt.Errorf("serve %s: %w", ln.Addr(), serr)
	}
	if err != nil {
		return fmt.Errorf("shut down %s: %w", ln.Addr(), err)
	}
	return nil
}
