package admission

import (
	"errors"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
)

// Bytes bounds the bytes held for bodies whose signature is not yet
// verified. A slot of a provider's share is taken only after verification
// (Slots), so without this bound clients without the secret could
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
// A body is charged as it arrives, a chunk at a time (the edge reads a chunk at a time), before
// the chunk is allocated: a Content-Length declared but not sent costs its
// sender the read deadline's time (min_body_rate), not memory. The charge
// is given back once the signature is checked (the body is then held under
// a slot of max_in_flight), when the read fails, and by the handler's
// deferred release whatever happens (a panic in a verifier included). A
// chunk that would pass a bound is refused with 503 and Retry-After
// (reason unverified_bytes, or client_unverified_bytes for the per-client
// bound, whose refusal is held RefusalHold as an over-share one is).
type Bytes struct {
	mu        sync.Mutex
	perClient int64            // 0: no bound but the whole budget
	shared    int64            // bytes charged past the providers' reserves
	sharedMax int64            // the bound less every reserve
	clients   map[string]int64 // bytes held per client address (no zero entries)
	used      atomic.Int64     // every byte held (the gauge)
}

// ByteShare is one provider's part of the unverified-bytes budget.
type ByteShare struct {
	reserved int64 // always its own
	used     int64 // held by its bodies now (Bytes.mu)
}

var (
	ErrBodyBudget  = errors.New("the bytes of unverified bodies being read are at their bound")
	ErrClientBytes = errors.New("the bytes of this client's unverified bodies being read are at their bound")
)

// SetLimits sets the bound of bytes, perClient (0, or the whole bound as
// behind a reverse proxy: no bound of its own) and the providers' shares
// (New).
func (b *Bytes) SetLimits(bound, perClient int64, shares []*ByteShare) {
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
func (s *ByteShare) pastReserve(used int64) int64 { return max(0, used-s.reserved) }

// Open starts the charge of one body of provider s from client.
func (b *Bytes) Open(s *ByteShare, client string) *Hold {
	return &Hold{b: b, s: s, client: client}
}

// Hold is what one body holds of the budget.
type Hold struct {
	b      *Bytes
	s      *ByteShare
	client string
	n      int64
}

// Take charges n more bytes, or charges nothing and returns ErrBodyBudget
// or ErrClientBytes.
func (h *Hold) Take(n int64) error {
	b := h.b
	b.mu.Lock()
	defer b.mu.Unlock()
	c := b.clients[h.client] + n
	if b.perClient > 0 && c > b.perClient {
		return ErrClientBytes
	}
	shared := b.shared + h.s.pastReserve(h.s.used+n) - h.s.pastReserve(h.s.used)
	if shared > b.sharedMax {
		return ErrBodyBudget
	}
	b.shared = shared
	h.s.used += n
	b.clients[h.client] = c
	h.n += n
	b.used.Add(n)
	return nil
}

// Give gives back n of the bytes the hold has charged.
func (h *Hold) Give(n int64) {
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

// Release gives back everything the hold has charged; a second call does
// nothing.
func (h *Hold) Release() { h.Give(h.n) }

// ClientKey is the address a request's unverified bytes are counted
// against: the TCP peer's IP (gatehouse trusts no forwarding header), an
// IPv6 peer by its /64, which one subscriber usually holds whole.
func ClientKey(remoteAddr string) string {
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

// Keep gives back what the hold has charged past n bytes.
func (h *Hold) Keep(n int64) { h.Give(h.n - n) }

// Used is every byte held now (the gauge gatehouse_webhook_unverified_bytes).
func (b *Bytes) Used() int64 { return b.used.Load() }

// Held is what s's bodies, the shared pool and the client addresses hold
// now: the accounting a test checks is given back whole.
func (b *Bytes) Held(s *ByteShare) (provider, shared int64, clients int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return s.used, b.shared, len(b.clients)
}

// NewByteShare is a provider's part of the budget with reserved bytes of
// its own.
func NewByteShare(reserved int64) *ByteShare { return &ByteShare{reserved: reserved} }
