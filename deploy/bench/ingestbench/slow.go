package main

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"time"

	"github.com/gatehouse/gatehouse/deploy/bench/benchenv"
)

// slowClients keeps n connections open for d, each sending a byte a
// second of a 1000-byte body (or, !body, of its headers), reopened when ended.
func slowClients(ctx context.Context, addr, provider string, n int, body bool, d time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, d) // ends the trickles at d
	defer cancel()
	benchenv.Loop(ctx, n, d, func(int) error { slowConn(ctx, addr, provider, body); return nil })
}

func slowConn(ctx context.Context, addr, provider string, body bool) {
	c, err := (&net.Dialer{Timeout: 5 * time.Second}).DialContext(ctx, "tcp", addr)
	if err != nil {
		time.Sleep(100 * time.Millisecond)
		return
	}
	defer c.Close()
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
		if ctx.Err() != nil || n > 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
			return // the server answered (408) or closed the connection
		}
		if _, err := c.Write([]byte{trickle[i]}); err != nil {
			return
		}
	}
}
