package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/net/netutil"

	"github.com/gatehouse/gatehouse/internal/obs"
	"github.com/gatehouse/gatehouse/internal/pg"
	"github.com/gatehouse/gatehouse/internal/settings"
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

// publicServer is the public listener's server: headers bounded in size
// (431 past ingest.max_header_bytes) and time (the connection of a client
// slower than ingest.read_header_timeout is closed); the webhook receiver
// bounds its bodies itself (413 from Content-Length, 408 under
// ingest.min_body_rate), the 30 s read timeout bounds every other route.
func publicServer(h http.Handler, in settings.Ingest) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: in.ReadHeaderTimeout, ReadTimeout: 30 * time.Second,
		WriteTimeout: 30 * time.Second, IdleTimeout: 2 * time.Minute, MaxHeaderBytes: in.MaxHeaderBytes}
}

// limitListener bounds ln to n open connections (golang.org/x/net's
// netutil.LimitListener: past it Accept waits, and new connections queue
// in the kernel), exported as gatehouse_http_connections{state}.
func limitListener(ln net.Listener, n int, reg prometheus.Registerer) net.Listener {
	c := &countingListener{Listener: netutil.LimitListener(ln, n)}
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "gatehouse_http_connections_open", Help: "Open connections of the public listener.",
	}, func() float64 { return float64(c.open.Load()) }), prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "gatehouse_http_connections_limit", Help: "The public listener's connection limit (ingest.max_connections).",
	}, func() float64 { return float64(n) }))
	return c
}

type countingListener struct {
	net.Listener
	open atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.open.Add(1)
	return &countedConn{Conn: c, l: l}, nil
}

type countedConn struct {
	net.Conn
	l    *countingListener
	once sync.Once
}

func (c *countedConn) Close() error {
	c.once.Do(func() { c.l.open.Add(-1) })
	return c.Conn.Close()
}
