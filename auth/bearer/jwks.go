package bearer

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// maxDocBytes bounds discovery, JWKS and introspection responses.
const maxDocBytes = 1 << 20

// discovery fetches (once successfully) an issuer's metadata document.
type discovery struct {
	issuer string
	client *http.Client

	mu  sync.Mutex
	doc *discoveryDoc
}

type discoveryDoc struct {
	Issuer                string `json:"issuer"`
	JWKSURI               string `json:"jwks_uri"`
	IntrospectionEndpoint string `json:"introspection_endpoint"`
}

func (d *discovery) get(ctx context.Context) (*discoveryDoc, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.doc != nil {
		return d.doc, nil
	}
	u := strings.TrimSuffix(d.issuer, "/") + "/.well-known/openid-configuration"
	var doc discoveryDoc
	if err := getJSON(ctx, d.client, u, &doc); err != nil {
		return nil, fmt.Errorf("discovery: %w", err)
	}
	if doc.Issuer != d.issuer {
		return nil, fmt.Errorf("discovery: issuer %q in the document differs from the configured %q", doc.Issuer, d.issuer)
	}
	d.doc = &doc
	return d.doc, nil
}

func getJSON(ctx context.Context, c *http.Client, u string, dst any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return fmt.Errorf("new request: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("get %s: %w", u, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxDocBytes))
		return fmt.Errorf("get %s: status %d", u, resp.StatusCode)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxDocBytes))
	if err != nil {
		return fmt.Errorf("read %s: %w", u, err)
	}
	if err := json.Unmarshal(b, dst); err != nil {
		return fmt.Errorf("decode %s: %w", u, err)
	}
	return nil
}

// keySet caches one issuer's JWKS. It is fetched on first use, again when
// older than maxAge, and again when a token names an unknown kid — but at
// most once per minRefetch, so a flood of forged kids cannot turn gatehouse
// into a JWKS-fetching amplifier. Concurrent fetches are coalesced.
type keySet struct {
	issuer     string
	url        string
	disc       *discovery
	client     *http.Client
	now        func() time.Time
	maxAge     time.Duration
	minRefetch time.Duration
	log        *slog.Logger
	m          *metrics

	fetchMu     sync.Mutex // serializes fetches
	mu          sync.Mutex // guards the fields below
	keys        []jose.JSONWebKey
	fetchedAt   time.Time
	lastAttempt time.Time
}

var errNoKey = errors.New("no matching key")

// key returns the verification key for kid and alg. It returns errNoKey
// (wrapped) when the set has no usable key, and an *Error with status 503
// when the set was never fetched successfully and cannot be fetched now.
func (k *keySet) key(ctx context.Context, kid, alg string) (*jose.JSONWebKey, error) {
	k.mu.Lock()
	have := k.fetchedAt != (time.Time{})
	stale := !have || k.now().Sub(k.fetchedAt) >= k.maxAge
	k.mu.Unlock()
	if stale {
		if err := k.refresh(ctx); err != nil && !k.fetched() {
			// Only when no set is held, not even one that a concurrent
			// caller fetched while this one waited for the rate limit.
			return nil, unavailable("the issuer's signing keys cannot be fetched", err)
		}
	}
	if key, err := k.find(kid, alg); err == nil {
		return key, nil
	}
	// Unknown kid: the issuer may have rotated its keys.
	if err := k.refresh(ctx); err != nil {
		k.log.Debug("jwks refetch skipped or failed", "issuer", k.issuer, "error", err)
	}
	return k.find(kid, alg)
}

// fetched reports whether a set was ever fetched successfully.
func (k *keySet) fetched() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.fetchedAt != (time.Time{})
}

var errRateLimited = errors.New("jwks refetch rate-limited")

// refresh fetches the set unless a fetch was attempted less than minRefetch
// ago (successful or not).
func (k *keySet) refresh(ctx context.Context) error {
	k.fetchMu.Lock()
	defer k.fetchMu.Unlock()
	k.mu.Lock()
	recent := k.lastAttempt != (time.Time{}) && k.now().Sub(k.lastAttempt) < k.minRefetch
	k.mu.Unlock()
	if recent {
		return errRateLimited
	}
	k.mu.Lock()
	k.lastAttempt = k.now()
	k.mu.Unlock()
	// The fetch outlives a caller that goes away: a cancelled fetch would
	// still count against the rate limit and delay a rotated key's tokens.
	keys, err := k.fetch(context.WithoutCancel(ctx))
	if err != nil {
		k.m.jwksFetches.WithLabelValues("error").Inc()
		k.log.Warn("jwks fetch failed", "issuer", k.issuer, "error", err)
		return err
	}
	k.m.jwksFetches.WithLabelValues("ok").Inc()
	k.mu.Lock()
	k.keys, k.fetchedAt = keys, k.now()
	k.mu.Unlock()
	return nil
}

func (k *keySet) fetch(ctx context.Context) ([]jose.JSONWebKey, error) {
	u := k.url
	if u == "" {
		doc, err := k.disc.get(ctx)
		if err != nil {
			return nil, err
		}
		if doc.JWKSURI == "" {
			return nil, errors.New("discovery document has no jwks_uri")
		}
		u = doc.JWKSURI
	}
	var raw struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := getJSON(ctx, k.client, u, &raw); err != nil {
		return nil, fmt.Errorf("jwks: %w", err)
	}
	var keys []jose.JSONWebKey
	for _, r := range raw.Keys {
		var jk jose.JSONWebKey
		if err := jk.UnmarshalJSON(r); err != nil {
			continue // unsupported key types are skipped, as other RPs do
		}
		if !jk.Valid() || !jk.IsPublic() || (jk.Use != "" && jk.Use != "sig") {
			continue // private or symmetric keys and encryption keys are never used to verify
		}
		keys = append(keys, jk)
	}
	if len(keys) == 0 {
		return nil, errors.New("jwks: no usable public signing key")
	}
	return keys, nil
}

// find picks the key with this kid (or, without a kid, the only key fit for
// alg). The key's own alg, when it names one, must equal the token's.
func (k *keySet) find(kid, alg string) (*jose.JSONWebKey, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	var match []*jose.JSONWebKey
	for i := range k.keys {
		key := &k.keys[i]
		if kid != "" && key.KeyID != kid {
			continue
		}
		if key.Algorithm != "" && key.Algorithm != alg {
			continue
		}
		if !keyFitsAlg(key, alg) {
			continue
		}
		match = append(match, key)
	}
	switch {
	case len(match) == 1:
		return match[0], nil
	case len(match) > 1 && kid == "":
		return nil, fmt.Errorf("%w: token has no kid and several keys fit", errNoKey)
	case len(match) > 1:
		return match[0], nil
	}
	return nil, fmt.Errorf("%w: kid %q", errNoKey, kid)
}

// keyFitsAlg reports whether the key's type can verify alg.
func keyFitsAlg(key *jose.JSONWebKey, alg string) bool {
	switch key.Key.(type) {
	case *rsa.PublicKey:
		return strings.HasPrefix(alg, "RS") || strings.HasPrefix(alg, "PS")
	case *ecdsa.PublicKey:
		return strings.HasPrefix(alg, "ES")
	case ed25519.PublicKey:
		return alg == "EdDSA"
	}
	return false
}
