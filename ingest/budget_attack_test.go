package ingest_test

import (
	"cmp"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/ingest"
)

// Issue 45, finding 1: max_unverified_bytes was one budget for every
// provider, charged at the declared Content-Length. Connections to one
// provider's endpoint, each declaring 1 MiB, sending 513 KiB and idling
// within the read deadline, held it full without any secret, and every
// provider's deliveries were refused (503 unverified_bytes): 80 of them
// refused 620 of 620 signed GitHub deliveries. Now each provider's bodies
// draw first on a reserve of their own, each client address holds at most
// max_unverified_bytes_per_client, and a body is charged as it arrives:
// the same attack, from one address or spread over twenty, leaves another
// provider's signed deliveries all answered 204.
func TestBudgetFloodOfOneProviderSparesAnother(t *testing.T) {
	for _, c := range []struct {
		name      string
		perClient int64 // 0: no bound per client, the reserve alone
		addrs     int
		refusal   string
	}{
		{"one address", 1 << 20, 1, "client_unverified_bytes"},
		{"twenty addresses", 0, 20, "unverified_bytes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, func(ic *ingest.Config) {
				ic.MaxUnverifiedBytes = 8 << 20
				ic.ReservedUnverifiedBytes = 512 << 10
				ic.MaxUnverifiedBytesPerClient = cmp.Or(c.perClient, ic.MaxUnverifiedBytes)
				ic.BodyGrace = time.Minute // the attackers idle within their read deadline
				ic.RefusalHold = 20 * time.Millisecond
			})
			u, _ := url.Parse(h.url)
			stop := budgetAttack(t, u.Host, "demo", 24, c.addrs)
			defer stop()
			// The attack holds what it may: demo's reserve and the shared
			// pool (or its address's bound).
			held := steadyHeld(h, 512<<10)
			if held > 8<<20 {
				t.Fatalf("unverified bytes held %v, over the bound", held)
			}
			if got := h.metric("gatehouse_webhook_refused_total", "provider=demo", "reason="+c.refusal); got < 1 {
				t.Errorf("the attack's connections refused{%s} = %v, want some", c.refusal, got)
			}
			// github's signed deliveries (40 KiB: three chunks each), eight
			// at once, all recorded.
			var wg sync.WaitGroup
			statuses := make(chan string, 40)
			for i := range 40 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					id := fmt.Sprintf("1:guid-budget-%d", i)
					body := []byte(`{"action":"opened","pad":"` + strings.Repeat("x", 40<<10) + `"}`)
					hdr := h.sign("github", githubSecret, body, h.now, id)
					hdr.Set("X-GitHub-Event", "issues")
					if r := h.post("github", hdr, body); r.status != http.StatusNoContent {
						statuses <- fmt.Sprintf("%s: %d %q", id, r.status, r.body)
					}
				}()
				if i%8 == 7 {
					wg.Wait()
				}
			}
			wg.Wait()
			close(statuses)
			for s := range statuses {
				t.Errorf("github delivery beside the attack refused: %s", s)
			}
			if got := h.metric("gatehouse_webhook_refused_total", "provider=github", "reason=unverified_bytes"); got != 0 {
				t.Errorf("github refused{unverified_bytes} = %v, want 0", got)
			}
		})
	}
}

// One client address holds at most max_unverified_bytes_per_client over
// all its connections: past it that address's next body is refused (503,
// Retry-After, reason client_unverified_bytes, after RefusalHold), while another address's
// delivery to the same provider is read and recorded. Before, any address
// could hold the whole budget.
func TestBudgetBoundsEachClientAddress(t *testing.T) {
	h := newHarness(t, func(c *ingest.Config) {
		c.MaxUnverifiedBytes = 8 << 20
		c.ReservedUnverifiedBytes = 0
		c.MaxUnverifiedBytesPerClient = 256 << 10
		c.BodyGrace = time.Minute
		c.RefusalHold = 300 * time.Millisecond
	})
	u, _ := url.Parse(h.url)
	// 127.0.0.2 sends 200 KiB of a declared 1 MiB and idles.
	c := slowClientFrom(t, u.Host, "127.0.0.2", "demo", 200<<10)
	defer c.Close()
	held := steadyHeld(h, 200<<10)
	if held < 200<<10 || held > 256<<10 {
		t.Fatalf("held %v, want 200 KiB..256 KiB", held)
	}
	// Its second connection passes the address's bound: refused, the
	// refusal held RefusalHold so the address's connections do not spin.
	start := time.Now()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}
	c2, err := d.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	go c2.Write([]byte("POST /webhooks/demo HTTP/1.1\r\nHost: x\r\nContent-Length: 1048576\r\n\r\n" + strings.Repeat("a", 100<<10))) //nolint:errcheck // the server may close first
	resp := readResponse(t, c2, 5*time.Second)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("second connection of the address: %d Retry-After %q, want 503 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if el := time.Since(start); el < 300*time.Millisecond {
		t.Errorf("the address's refusal answered after %v, want it held 300ms", el)
	}
	if got := h.metric("gatehouse_webhook_refused_total", "provider=demo", "reason=client_unverified_bytes"); got != 1 {
		t.Errorf("refused{client_unverified_bytes} = %v, want 1", got)
	}
	// 127.0.0.1 (the harness's client), same provider, 200 KiB: recorded.
	expectStatus(t, h.send("evt_other_address", map[string]any{"pad": strings.Repeat("x", 200<<10)}), http.StatusNoContent)
	// The refused connection gave back what it held.
	if now := steadyHeld(h, 0); now != held {
		t.Errorf("held %v after the refusals, want %v (the idle client's alone)", now, held)
	}
}

// budgetAttack opens conns connections to provider's endpoint from addrs
// loopback addresses (127.0.0.10 on), each declaring 1 MiB, sending
// 513 KiB at once and idling until stop or the server's answer (a refused
// one does not come back, so what the attack holds settles), then smaller
// bodies filling what is left.
func budgetAttack(t *testing.T, host, provider string, conns, addrs int) (stop func()) {
	t.Helper()
	done := make(chan struct{})
	var wg sync.WaitGroup
	head := "POST /webhooks/" + provider + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1048576\r\n\r\n"
	payload := append([]byte(head), strings.Repeat("a", 513<<10)...)
	for i := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(10+i%addrs))}}
			c, err := d.Dial("tcp", host)
			if err != nil {
				t.Error(err)
				return
			}
			stopConn := make(chan struct{})
			go func() {
				select {
				case <-done:
				case <-stopConn:
				}
				c.Close()
			}()
			_, _ = c.Write(payload)
			_, _ = io.Copy(io.Discard, c) // until the server answers and closes, or stop
			close(stopConn)
		}()
	}
	// Then small bodies (20 KiB of a declared 1 MiB) fill what the large
	// ones left, until eight in a row are refused.
	time.Sleep(500 * time.Millisecond)
	for i, refused := 0, 0; refused < 8 && i < 400; i++ {
		c, err := net.DialTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(10+i%addrs))}, net.TCPAddrFromAddrPort(netip.MustParseAddrPort(host)))
		if err != nil {
			t.Fatal(err)
		}
		_, _ = c.Write([]byte(head + strings.Repeat("a", 20<<10)))
		_ = c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		if n, _ := c.Read(make([]byte, 1)); n > 0 {
			refused++
			c.Close()
			continue
		}
		refused = 0
		go func() { <-done; c.Close() }()
	}
	return func() { close(done); wg.Wait() }
}
