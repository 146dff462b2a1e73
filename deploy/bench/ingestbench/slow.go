package main

import (
	"context"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gatehouse/gatehouse/deploy/bench/benchenv"
)

// slow counts the slow clients' connections and how they ended.
type slow struct {
	conns, cut408, closed atomic.Int64
}

// slowClients keeps n connections open for d, each sending a byte a
// second: of a body (after complete headers declaring 1000 bytes) when
// body, else of its header block. A connection the server ends is opened
// again.
func slowClients(ctx context.Context, addr, provider string, n int, body bool, d time.Duration, s *slow) {
	ctx, cancel := context.WithTimeout(ctx, d) // ends the trickles at d
	defer cancel()
	benchenv.Loop(ctx, n, d, func(int) error { slowConn(ctx, addr, provider, body, s); return nil })
}

func slowConn(ctx context.Context, addr, provider string, body bool, s *slow) {
	c, err := (&net.Dialer{Timeout: 5 * time.Second}).DialContext(ctx, "tcp", addr)
	if err != nil {
		time.Sleep(100 * time.Millisecond)
		return
	}
	defer c.Close()
	s.conns.Add(1)
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	head := "POST /webhooks/" + provider + " HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\n"
	var trickle string
	if body {
		if _, err := io.WriteString(c, head+"Content-Length: 1000\r\n\r\n"); err != nil {
			return
		}
		trickle = strings.Repeat("x", 1000)
	} else {
		trickle = head + "X-Slow: " + strings.Repeat("a", 4000)
	}
	answered := make(chan string, 1)
	go func() {
		b := make([]byte, 64)
		n, _ := c.Read(b)
		answered <- string(b[:n])
	}()
	for i := 0; i < len(trickle); i++ {
		select {
		case got := <-answered:
			if strings.HasPrefix(got, "HTTP/1.1 408") {
				s.cut408.Add(1)
			} else {
				s.closed.Add(1)
			}
			return
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
		if _, err := c.Write([]byte{trickle[i]}); err != nil {
			s.closed.Add(1)
			return
		}
	}
}
