package main

import (
	"io"
	"log/slog"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gatehouse/gatehouse/internal/config"
)

// Finding 6 of issue 25: the admin listener had no read, write or idle
// timeout (a client could hold a connection, or trickle a body, for ever)
// and listened on every interface by default.
func TestAdminListenerIsBoundedAndLoopbackByDefault(t *testing.T) {
	srv := adminServer(&base{reg: prometheus.NewRegistry(), log: slog.New(slog.NewTextHandler(io.Discard, nil))}, nil)
	if srv.ReadHeaderTimeout <= 0 || srv.ReadTimeout <= 0 || srv.WriteTimeout <= 0 || srv.IdleTimeout <= 0 || srv.MaxHeaderBytes <= 0 {
		t.Errorf("admin server: read header %v, read %v, write %v, idle %v, max header bytes %d; want all bounded",
			srv.ReadHeaderTimeout, srv.ReadTimeout, srv.WriteTimeout, srv.IdleTimeout, srv.MaxHeaderBytes)
	}
	cfg, err := config.Parse([]byte("database_url: postgres://x/y\n"), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	if cfg.AdminListen != "127.0.0.1:9090" {
		t.Errorf("admin_listen default %q, want loopback", cfg.AdminListen)
	}
}
