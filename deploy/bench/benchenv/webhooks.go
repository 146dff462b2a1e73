package benchenv

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gatehouse/gatehouse/ingest/signature"
)

// The reference scheme's headers and event type of the deliveries Deliveries builds.
const (
	TimestampHeader = "X-Bench-Timestamp"
	SignatureHeader = "X-Bench-Signature"
	EventType       = "payment.succeeded"
)

// ProviderYAML is the providers.<name> entry of a reference-scheme provider
// verifying with secret, with extra keys (lines indented by four spaces).
func ProviderYAML(name string, secret []byte, extra string) string {
	return fmt.Sprintf(`  %s:
    scheme: reference
    timestamp_header: %s
    signature_header: %s
    tolerance: 300s
    secrets:
      - id: bench
        value: %q
    aggregate_id_path: [data.payment_id]
`, name, TimestampHeader, SignatureHeader, string(secret)) + extra
}

// Secret is a provider secret: prefix and n random bytes in hex.
func Secret(prefix string, n int) []byte {
	k := make([]byte, n)
	_, _ = rand.Read(k)
	return []byte(prefix + hex.EncodeToString(k))
}

// Deliveries builds signed HTTP/1.1 requests of new events of one provider;
// ids are 13-digit numbers from one counter. Safe for concurrent use.
type Deliveries struct {
	cfg            signature.Config
	secret         []byte
	provider, addr string
	pad            string
	w              wire
	next           atomic.Int64
}

// SetAddr points later deliveries at addr (ids keep counting); not while Next runs.
func (d *Deliveries) SetAddr(addr string) { d.addr = addr }

// NewDeliveries returns provider's reference-scheme deliveries to addr, padded to bodyBytes.
func NewDeliveries(provider, addr string, secret []byte, bodyBytes int) *Deliveries {
	cfg := signature.Config{Scheme: "reference", TimestampHeader: TimestampHeader, SignatureHeader: SignatureHeader}
	return newDeliveries(provider, addr, secret, bodyBytes, cfg, wire{body: `{"id":"%[1]d","type":"` + EventType +
		`","created_at":"%[3]s","data":{"payment_id":"pay_%[1]d","amount":1999,"currency":"eur","description":"%[4]s"}}`})
}

func newDeliveries(provider, addr string, secret []byte, bodyBytes int, cfg signature.Config, w wire) *Deliveries {
	d := &Deliveries{provider: provider, addr: addr, w: w, secret: secret, cfg: cfg}
	if n := bodyBytes - len(d.Body(1_000_000_000_000, time.Now())); n > 0 {
		d.pad = strings.Repeat("x", n)
	}
	return d
}

// Body is the body of event id created at now.
func (d *Deliveries) Body(id int64, now time.Time) []byte { return []byte(d.w.bodyOf(id, now, d.pad)) }

// Next returns the bytes of a delivery of a new event, signed at now.
func (d *Deliveries) Next(now time.Time) []byte {
	n := 1_000_000_000_000 + d.next.Add(1)
	r := &signature.Request{Method: http.MethodPost, Header: http.Header{"Content-Type": {"application/json"}}, Body: d.Body(n, now)}
	if d.w.form {
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if d.w.headName != "" {
		r.Header.Set(d.w.headName, strings.ReplaceAll(d.w.head, "{n}", strconv.FormatInt(n, 10)))
	}
	id := ""
	if d.w.id != "" {
		id = fmt.Sprintf(d.w.id, n)
	}
	if err := signature.SignRequest(d.cfg, d.secret, r, now, id); err != nil { // may change the body (Mailgun's token)
		panic(fmt.Sprintf("bench: sign %s: %v", d.provider, err)) // constant, valid configuration
	}
	req := &http.Request{Method: http.MethodPost, URL: &url.URL{Path: "/webhooks/" + d.provider, RawQuery: r.RawQuery}, Host: d.addr,
		Header: r.Header, Body: io.NopCloser(bytes.NewReader(r.Body)), ContentLength: int64(len(r.Body))}
	r.Header.Set("User-Agent", "gatehouse-bench")
	var raw bytes.Buffer
	_ = req.Write(&raw) // to memory: no error
	return raw.Bytes()
}

// Conn is a keep-alive HTTP/1.1 connection, dialled again after a failure.
type Conn struct {
	addr       string
	c          net.Conn
	br         *bufio.Reader
	retryAfter bool // the last answer had a Retry-After header
}

// NewConn returns a connection to addr, dialled on first use.
func NewConn(addr string) *Conn { return &Conn{addr: addr} }

// Do sends a raw request: the status, the body's start when not 2xx; errors close it.
func (c *Conn) Do(req []byte) (status int, msg string, err error) {
	c.retryAfter = false
	if c.c == nil {
		nc, err := net.DialTimeout("tcp", c.addr, 10*time.Second)
		if err != nil {
			return 0, "", fmt.Errorf("dial receiver: %w", err)
		}
		c.c, c.br = nc, bufio.NewReaderSize(nc, 4096)
	}
	_ = c.c.SetDeadline(time.Now().Add(30 * time.Second))
	var resp *http.Response
	if _, err = c.c.Write(req); err == nil {
		resp, err = http.ReadResponse(c.br, nil)
	}
	if err != nil {
		c.Close()
		return 0, "", err
	}
	c.retryAfter = resp.Header.Get("Retry-After") != ""
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
		msg = strings.TrimSpace(string(b))
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.Close {
		c.Close()
	}
	return resp.StatusCode, msg, nil
}

// Close closes the connection (a later Do dials again).
func (c *Conn) Close() {
	if c.c != nil {
		_ = c.c.Close()
		c.c, c.br = nil, nil
	}
}
