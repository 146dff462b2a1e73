package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

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

// Finding 1 of issue 25: the public listener bounds header blocks (a
// ~1 MB header block was accepted on main: 431 now) and open connections
// (past ingest.max_connections a connection waits to be accepted until
// another closes).
func TestPublicListenerBoundsHeadersAndConnections(t *testing.T) {
	cfg, err := config.Parse([]byte("database_url: postgres://x/y\ningest: {max_connections: 2}\n"), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	srv := publicServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }), cfg.Ingest)
	go func() { _ = srv.Serve(limitListener(ln, cfg.Ingest.MaxConnections, reg)) }()
	t.Cleanup(func() { srv.Close() })
	addr := ln.Addr().String()

	req := func(c net.Conn, extra string) int {
		t.Helper()
		_ = c.SetDeadline(time.Now().Add(2 * time.Second))
		if _, err := fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: x\r\n%s\r\n", extra); err != nil {
			return -1
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			return -1
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	dial := func() net.Conn {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	big, ok := dial(), dial()
	if got := req(big, "X-Big: "+strings.Repeat("a", 100<<10)+"\r\n"); got != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("100 KiB of headers: status %d, want 431", got)
	}
	if got := req(ok, "X-Ok: "+strings.Repeat("a", 32<<10)+"\r\n"); got != http.StatusNoContent {
		t.Errorf("32 KiB of headers: status %d, want 204", got)
	}
	big.Close()
	ok.Close()
	time.Sleep(200 * time.Millisecond) // the server sees both closed
	a, b := dial(), dial()
	if req(a, "") != http.StatusNoContent || req(b, "") != http.StatusNoContent {
		t.Fatal("two connections within the limit not served")
	}
	third := dial()
	done := make(chan int, 1)
	go func() { done <- req(third, "") }()
	select {
	case got := <-done:
		t.Fatalf("a third connection past max_connections 2 was served (%d)", got)
	case <-time.After(300 * time.Millisecond):
	}
	a.Close()
	if got := <-done; got != http.StatusNoContent {
		t.Errorf("third connection after one closed: %d", got)
	}
}

// A client sending its headers slower than ingest.read_header_timeout has
// its connection closed (on main the public listener allowed 10 s, and the
// admin listener's was the only bound).
func TestSlowHeadersAreCut(t *testing.T) {
	cfg, err := config.Parse([]byte("database_url: postgres://x/y\ningest: {read_header_timeout: 300ms}\n"), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := publicServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }), cfg.Ingest)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close() })
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	_, _ = io.WriteString(c, "POST /webhooks/demo HTTP/1.1\r\nHost: x\r\n")
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	for i := 0; ; i++ {
		if _, err := io.WriteString(c, "X"); err != nil {
			break
		}
		buf := make([]byte, 256)
		_ = c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		if _, err := c.Read(buf); err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
			break // closed (or answered 408 and closed)
		}
		if time.Since(start) > 5*time.Second {
			t.Fatal("a slow header block was not cut within 5 s")
		}
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("cut after %v with read_header_timeout 300ms", d)
	}
}
