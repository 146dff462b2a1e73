package ingest

import (
	"crypto/sha256"
	"strings"
	"time"

	"github.com/gatehouse/gatehouse/ingest/inbox"
	"github.com/gatehouse/gatehouse/ingest/signature"
	"github.com/gatehouse/gatehouse/schemas/providers"
)

// guardKey is the guard's record for a verified delivery of ep, with no
// Key when its kind keeps no guard. The query string is part of the
// content only where the scheme signs the URL (Twilio, an hmac definition
// using {url}): elsewhere it is not the signer's, and a captured delivery
// resent with ?x=1 is the same content.
func guardKey(ep *endpoint, query string, body []byte, res signature.Result) inbox.GuardKey {
	h := sha256.New()
	h.Write([]byte(ep.name))
	h.Write([]byte{0})
	switch ep.guard {
	case providers.GuardToken:
		if res.Nonce == "" {
			return inbox.GuardKey{}
		}
		h.Write([]byte("token\x00" + res.Nonce))
	case providers.GuardContent:
		if !ep.signsURL {
			query = ""
		}
		h.Write([]byte("content\x00" + query + "\x00"))
		h.Write(body)
	default:
		return inbox.GuardKey{}
	}
	return inbox.GuardKey{Key: h.Sum(nil), TTL: ep.guardTTL, Token: ep.guard == providers.GuardToken}
}

// guardOf is the guard p keeps and its lifetime: the catalogue's, or for
// scheme hmac a content guard when an event id comes from a header the
// definition does not sign as {id}. The lifetime is p.ReplayGuardTTL, else
// twice the replay window of a scheme with a signed timestamp, else
// inbox.DefaultReplayGuardTTL.
func guardOf(p *Provider, k providers.Kind) (string, time.Duration) {
	g := k.Guard
	h := p.Signature.HMAC
	if h != nil { // scheme hmac: only it takes a definition
		if unsignedHeader(k.EventID, h) {
			g = providers.GuardContent
		}
	}
	if g == "" {
		return "", 0
	}
	ttl := p.ReplayGuardTTL
	if ttl <= 0 {
		ttl = inbox.DefaultReplayGuardTTL
		if d, _ := signature.Describe(k.Scheme, h); d.Timestamp != "" {
			ttl = 2 * p.Signature.Tolerance
		}
	}
	return g, ttl
}

// unsignedHeader reports whether any of fs, or of the fields they join,
// reads a header that h does not sign as {id}.
func unsignedHeader(fs providers.Fields, h *providers.HMAC) bool {
	for _, f := range fs {
		if f.Header != "" && (!h.Uses(providers.PartID) || !strings.EqualFold(f.Header, h.IDHeader)) {
			return true
		}
		if unsignedHeader(f.Join, h) {
			return true
		}
	}
	return false
}
