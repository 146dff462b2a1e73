package ingest_test

import (
	"bytes"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/ingest"
)

// Finding 4 of issue 39: a slot of max_in_flight is taken only after the
// signature verified, so bodies of clients without the secret were not
// bounded at all: connections × max_body_bytes could be held. The bytes
// of unverified bodies being read are now bounded over all providers: past
// the bound a delivery is refused at once (503, Retry-After, reason
// unverified_bytes), and what the slow clients held is given back when
// their connections end.
func TestUnverifiedBodiesAreBounded(t *testing.T) {
	h := newHarness(t, func(c *ingest.Config) {
		c.MaxUnverifiedBytes = 64 << 10
		c.ReservedUnverifiedBytes, c.MaxUnverifiedBytesPerClient = 0, c.MaxUnverifiedBytes // the global bound alone
		c.BodyGrace = time.Minute                                                          // the slow clients are not cut during the test
	})
	u, _ := url.Parse(h.url)
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	// Two clients without the secret declare 1 MiB, send 20 000 bytes and
	// stall.
	for range 2 {
		conns = append(conns, slowClient(t, u.Host, 20000))
	}
	held := steadyHeld(h, 2*20000)
	if held < 2*20000 || held > 64<<10 {
		t.Fatalf("unverified bytes held %v, want 40000..65536", held)
	}
	// A genuine delivery whose body does not fit in what is left.
	pad := map[string]any{"pad": strings.Repeat("x", 64<<10-int(held)+1000)}
	r := h.send("evt_budget_1", pad)
	expectStatus(t, r, http.StatusServiceUnavailable)
	if r.header.Get("Retry-After") == "" || !strings.Contains(r.body, "overloaded") {
		t.Errorf("refusal: Retry-After %q, body %q", r.header.Get("Retry-After"), r.body)
	}
	if got := h.metric("gatehouse_webhook_refused_total", "provider=demo", "reason=unverified_bytes"); got < 1 {
		t.Errorf("refused{unverified_bytes} = %v, want at least 1", got)
	}
	// The slow clients leave: what they held is given back, and the
	// provider's retry is stored.
	for _, c := range conns {
		c.Close()
	}
	conns = nil
	deadline := time.Now().Add(10 * time.Second)
	for h.metric("gatehouse_webhook_unverified_bytes") > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	expectStatus(t, h.send("evt_budget_1", pad), http.StatusNoContent)
	if got := h.metric("gatehouse_webhook_unverified_bytes"); got != 0 {
		t.Errorf("unverified bytes held after every body was checked: %v", got)
	}
	if n := h.count("inbox", "event_id = 'evt_budget_1'"); n != 1 {
		t.Errorf("inbox rows %d, want 1", n)
	}
}

// The budget is charged what a body's buffer really holds, and the buffer
// grows by at most a chunk: append's growth rounded 16 KiB + 16 KiB up to
// 48 KiB, charged without checking the bound, so two slow clients could
// hold 96 KiB under a 64 KiB bound.
func TestUnverifiedBufferGrowsByWhatWasCharged(t *testing.T) {
	h := newHarness(t, func(c *ingest.Config) {
		c.MaxUnverifiedBytes = 1 << 20
		c.ReservedUnverifiedBytes, c.MaxUnverifiedBytesPerClient = 0, c.MaxUnverifiedBytes
		c.BodyGrace = time.Minute
	})
	u, _ := url.Parse(h.url)
	c := slowClient(t, u.Host, 20000)
	defer c.Close()
	held := steadyHeld(h, 20000)
	if held < 20000 || held > 20000+16<<10 {
		t.Fatalf("one client that sent 20000 bytes holds %v of the budget, want 20000..%d", held, 20000+16<<10)
	}
}

// Issue 45, finding 1: a body is charged as it arrives, not as its
// Content-Length declares. The buffer doubled towards the declared length,
// so a client declaring 1 MiB and sending 513 KiB was charged 1 MiB + 1:
// 64 such connections held the whole 64 MiB at half the bytes.
func TestBudgetChargesABodyAsItArrives(t *testing.T) {
	h := newHarness(t, func(c *ingest.Config) { c.BodyGrace = time.Minute })
	u, _ := url.Parse(h.url)
	const sent = 513 << 10
	c := slowClient(t, u.Host, sent)
	defer c.Close()
	held := steadyHeld(h, sent)
	if held < sent || held > sent+16<<10 {
		t.Fatalf("a client that declared 1 MiB and sent %d bytes holds %v of the budget, want %d..%d", sent, held, sent, sent+16<<10)
	}
}

// slowClient sends a delivery that declares 1 MiB, writes n bytes of it
// and stalls, without the secret.
func slowClient(t *testing.T, host string, n int) net.Conn {
	t.Helper()
	return slowClientFrom(t, host, "", "demo", n)
}

// slowClientFrom is slowClient from the local address from ("": any) to
// provider's endpoint.
func slowClientFrom(t *testing.T, host, from, provider string, n int) net.Conn {
	t.Helper()
	d := net.Dialer{}
	if from != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(from)}
	}
	c, err := d.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	head := "POST /webhooks/" + provider + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1048576\r\n\r\n"
	if _, err := c.Write(append([]byte(head), bytes.Repeat([]byte("a"), n)...)); err != nil {
		c.Close()
		t.Fatal(err)
	}
	return c
}

// steadyHeld waits until the unverified bytes held are at least least and
// steady (the same over four samples 50 ms apart, within 10 s) and
// returns them.
func steadyHeld(h *harness, least float64) float64 {
	var held float64
	for steady, deadline := 0, time.Now().Add(10*time.Second); steady < 4 && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		now := h.metric("gatehouse_webhook_unverified_bytes")
		if now >= least && now == held {
			steady++
		} else {
			steady = 0
		}
		held = now
	}
	return held
}
