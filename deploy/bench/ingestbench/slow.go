package main

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
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
	defer context.AfterFunc(ctx, func() { c.Close() })()
	trickle := "POST /webhooks/" + provider + " HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\n"
	if body {
		if _, err := io.WriteString(c, trickle+"Content-Length: 1000\r\n\r\n"); err != nil {
			return
		}
		trickle = strings.Repeat("x", 1000)
	} else {
		trickle += "X-Slow: " + strings.Repeat("a", 4000)
	}
	answer := make([]byte, 64)
	for i := range len(trickle) {
		// Wait a second for an answer (or the server closing), then send a byte.
		_ = c.SetReadDeadline(time.Now().Add(time.Second))
		n, err := c.Read(answer)
		switch {
		case ctx.Err() != nil:
			return
		case strings.HasPrefix(string(answer[:n]), "HTTP/1.1 408"):
			s.cut408.Add(1)
			return
		case !errors.Is(err, os.ErrDeadlineExceeded):
			s.closed.Add(1)
			return
		}
		if _, err := c.Write([]byte{trickle[i]}); err != nil {
			s.closed.Add(1)
			return
		}
	}
}
