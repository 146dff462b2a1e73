package ingest

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// bodyBudget bounds the bytes held for bodies whose signature is not yet
// verified. A slot of a provider's share is taken only after verification
// (admission.go), so without this bound clients without the secret could
// hold connections × max_body_bytes of buffered body.
//
// The budget is shared as max_in_flight is: each provider has a reserve
// (ReservedUnverifiedBytes) that is always its own, and past it its bodies
// draw on a pool shared by every provider (the bound less every reserve),
// so clients flooding one provider's endpoint cannot take the bytes
// another provider's deliveries are read into. Each client address (the
// TCP peer; an IPv6 peer by its /64) holds at most
// MaxUnverifiedBytesPerClient over all its connections and providers.
//
// A body is charged as it arrives, a chunk at a time (bodyChunk), before
// the chunk is allocated: a Content-Length declared but not sent costs its
// sender the read deadline's time (min_body_rate), not memory. The charge
// is given back once the signature is checked (the body is then held under
// a slot of max_in_flight), when the read fails, and by the handler's
// deferred release whatever happens (a panic in a verifier included). A
// chunk that would pass a bound is refused with 503 and Retry-After
// (reason unverified_bytes, or client_unverified_bytes for the per-client
// bound, whose refusal is held RefusalHold as an over-share one is).
type bodyBudget struct {
	mu        sync.Mutex
	perClient int64            // 0: no bound but the whole budget
	shared    int64            // bytes charged past the providers' reserves
	sharedMax int64            // the bound less every reserve
	clients   map[string]int64 // bytes held per client address (no zero entries)
	used      atomic.Int64     // every byte held (the gauge)
}

// bodyShare is one provider's part of the unverified-bytes budget.
type bodyShare struct {
	reserved int64 // always its own
	used     int64 // held by its bodies now (bodyBudget.mu)
}

var (
	errBodyBudget  = errors.New("the bytes of unverified bodies being read are at their bound")
	errClientBytes = errors.New("the bytes of this client's unverified bodies being read are at their bound")
)

// setLimits sets the bound of bytes, perClient (0, or the whole bound as
// behind a reverse proxy: no bound of its own) and the providers' shares
// (New).
func (b *bodyBudget) setLimits(bound, perClient int64, shares []*bodyShare) {
	if perClient >= bound {
		perClient = 0
	}
	b.perClient = perClient
	b.sharedMax = bound
	for _, s := range shares {
		b.sharedMax -= s.reserved
	}
	b.clients = map[string]int64{}
}

// pastReserve is the part of used bytes of s drawn from the shared pool.
func (s *bodyShare) pastReserve(used int64) int64 { return max(0, used-s.reserved) }

// hold starts the charge of one body of provider s from client.
func (b *bodyBudget) hold(s *bodyShare, client string) *bodyHold {
	return &bodyHold{b: b, s: s, client: client}
}

// bodyHold is what one body holds of the budget.
type bodyHold struct {
	b      *bodyBudget
	s      *bodyShare
	client string
	n      int64
}

// take charges n more bytes, or charges nothing and returns errBodyBudget
// or errClientBytes.
func (h *bodyHold) take(n int64) error {
	b := h.b
	b.mu.Lock()
	defer b.mu.Unlock()
	c := b.clients[h.client] + n
	if b.perClient > 0 && c > b.perClient {
		return errClientBytes
	}
	shared := b.shared + h.s.pastReserve(h.s.used+n) - h.s.pastReserve(h.s.used)
	if shared > b.sharedMax {
		return errBodyBudget
	}
	b.shared = shared
	h.s.used += n
	b.clients[h.client] = c
	h.n += n
	b.used.Add(n)
	return nil
}

// give gives back n of the bytes the hold has charged.
func (h *bodyHold) give(n int64) {
	n = min(n, h.n)
	if n <= 0 {
		return
	}
	b := h.b
	b.mu.Lock()
	defer b.mu.Unlock()
	b.shared -= h.s.pastReserve(h.s.used) - h.s.pastReserve(h.s.used-n)
	h.s.used -= n
	if c := b.clients[h.client] - n; c > 0 {
		b.clients[h.client] = c
	} else {
		delete(b.clients, h.client)
	}
	h.n -= n
	b.used.Add(-n)
}

// release gives back everything the hold has charged; a second call does
// nothing.
func (h *bodyHold) release() { h.give(h.n) }

// clientKey is the address a request's unverified bytes are counted
// against: the TCP peer's IP (gatehouse trusts no forwarding header), an
// IPv6 peer by its /64, which one subscriber usually holds whole.
func clientKey(remoteAddr string) string {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		host = remoteAddr
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	a = a.Unmap()
	if a.Is6() {
		if p, err := a.WithZone("").Prefix(64); err == nil {
			return p.String()
		}
	}
	return a.String()
}

// errSlowBody is a body that came slower than MinBodyRate.
var errSlowBody = errors.New("request body slower than the minimum rate")

// bodyChunk is the most a body's buffer grows by at once, and so the most
// charged ahead of what arrived.
const bodyChunk = 16 << 10

// readBody reads the raw body, at most limit bytes, and at no less than
// the minimum rate: the read deadline is the start plus BodyGrace plus the
// bytes read so far at MinBodyRate, so a client trickling its body is cut
// once it falls behind, not after the server's whole read timeout. Where
// the connection cannot take a deadline (HTTP/2 through some wrappers),
// the server's read timeout still bounds it.
//
// The body is read into chunks of at most bodyChunk, each charged to hold
// before it is allocated, never at the declared Content-Length: a client
// declaring 1 MiB and sending half holds half a MiB and a chunk. A body of
// more than one chunk is then copied into one buffer of its exact length
// (the charge drops to it). On failure readBody has given back what it
// charged; on success the caller releases hold once the signature is
// checked.
func (r *Receiver) readBody(w http.ResponseWriter, req *http.Request, limit int64, hold *bodyHold) (_ []byte, err error) {
	rc := http.NewResponseController(w)
	start := time.Now()
	defer func() {
		if err != nil {
			hold.release()
		}
	}()
	declared := req.ContentLength // -1: unknown (chunked)
	// next is the size of the next chunk after total bytes: the declared
	// length's rest (and a byte to see the end), else growing from 512
	// with what arrived; at most bodyChunk, and a byte past limit.
	next := func(total int64) int64 {
		n := min(int64(bodyChunk), max(512, total))
		if declared >= 0 {
			n = min(int64(bodyChunk), declared+1-total)
		}
		return max(1, min(n, limit+1-total))
	}
	var chunks [][]byte
	var total int64
	var cur []byte
	body := http.MaxBytesReader(w, req.Body, limit)
	deadlines := true
	for {
		if deadlines {
			d := start.Add(r.cfg.BodyGrace + time.Duration(float64(total)/float64(r.cfg.MinBodyRate)*float64(time.Second)))
			if err := rc.SetReadDeadline(d); err != nil {
				deadlines = false
			}
		}
		if len(cur) == cap(cur) {
			size := next(total)
			if err := hold.take(size); err != nil {
				return nil, err
			}
			if cur != nil {
				chunks = append(chunks, cur)
			}
			cur = make([]byte, 0, size)
		}
		n, err := body.Read(cur[len(cur):cap(cur)])
		cur = cur[:len(cur)+n]
		total += int64(n)
		if err != nil {
			if deadlines {
				_ = rc.SetReadDeadline(time.Time{})
			}
			if errors.Is(err, io.EOF) {
				return joinChunks(chunks, cur, total, hold), nil
			}
			if errors.Is(err, os.ErrDeadlineExceeded) {
				return nil, errSlowBody
			}
			return nil, err
		}
	}
}

// joinChunks is the body of chunks and last, total bytes: last itself when
// it is the only chunk, else one buffer of exactly total bytes, the charge
// of hold lowered to it.
func joinChunks(chunks [][]byte, last []byte, total int64, hold *bodyHold) []byte {
	if len(chunks) == 0 {
		return last
	}
	body := make([]byte, 0, total)
	for _, c := range chunks {
		body = append(body, c...)
	}
	body = append(body, last...)
	hold.give(hold.n - total)
	return body
}
