package auth

import (
	"context"
	"crypto"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/go-jose/go-jose/v4"
)

// DefaultJWKSMinRefetch is the least time between two fetches of the OP's
// key set, as auth/bearer's: a token naming a key the set lacks makes at
// most one fetch per interval, so forged ID or logout tokens cannot turn
// gatehouse into a JWKS-fetching amplifier (go-oidc's RemoteKeySet fetches
// again for every such token).
const DefaultJWKSMinRefetch = 30 * time.Second

// keySet is the OP's JWKS for go-oidc's verifier (oidc.KeySet), fetched
// on first use and again when no held key verifies a token: at once if a
// genuine token verified since the last fetch (the OP may have rotated its
// key, and the next login must not fail), otherwise at most once per
// minRefetch. So forged tokens alone make at most one fetch per interval,
// and at most one per genuine token in all; concurrent fetches are
// coalesced.
type keySet struct {
	url        string
	client     *http.Client
	now        func() time.Time
	minRefetch time.Duration
	onFetch    func(ok bool)

	fetchMu     sync.Mutex // serializes fetches
	mu          sync.Mutex // guards the fields below
	keys        []crypto.PublicKey
	lastAttempt time.Time
	verified    bool // a token verified since the last fetch attempt
}

var errJWKSRateLimited = errors.New("no held key verifies the token, and the key set was fetched less than the minimum interval ago")

// VerifySignature implements oidc.KeySet.
func (k *keySet) VerifySignature(ctx context.Context, jwt string) ([]byte, error) {
	k.mu.Lock()
	keys := k.keys
	k.mu.Unlock()
	if len(keys) > 0 {
		if payload, err := (&oidc.StaticKeySet{PublicKeys: keys}).VerifySignature(ctx, jwt); err == nil {
			k.markVerified()
			return payload, nil
		}
	}
	keys, err := k.refresh(ctx, keys)
	if err != nil {
		return nil, fmt.Errorf("verify signature: %w", err)
	}
	payload, err := (&oidc.StaticKeySet{PublicKeys: keys}).VerifySignature(ctx, jwt)
	if err == nil {
		k.markVerified()
	}
	return payload, err
}

func (k *keySet) markVerified() {
	k.mu.Lock()
	k.verified = true
	k.mu.Unlock()
}

// refresh fetches the set unless another caller did since held was read,
// or a fetch was attempted less than minRefetch ago.
func (k *keySet) refresh(ctx context.Context, held []crypto.PublicKey) ([]crypto.PublicKey, error) {
	k.fetchMu.Lock()
	defer k.fetchMu.Unlock()
	k.mu.Lock()
	keys, last, verified := k.keys, k.lastAttempt, k.verified
	k.mu.Unlock()
	if len(keys) > 0 && (len(held) == 0 || &keys[0] != &held[0]) {
		return keys, nil // fetched by a concurrent caller
	}
	if !last.IsZero() && !verified && k.now().Sub(last) < k.minRefetch {
		return nil, errJWKSRateLimited
	}
	k.mu.Lock()
	k.lastAttempt, k.verified = k.now(), false
	k.mu.Unlock()
	keys, err := k.fetch(context.WithoutCancel(ctx))
	if k.onFetch != nil {
		k.onFetch(err == nil)
	}
	if err != nil {
		return nil, err
	}
	k.mu.Lock()
	k.keys = keys
	k.mu.Unlock()
	return keys, nil
}

func (k *keySet) fetch(ctx context.Context) ([]crypto.PublicKey, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, k.url, nil)
	if err != nil {
		return nil, fmt.Errorf("jwks request: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := k.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetch jwks: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("read jwks: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetch jwks: status %d", resp.StatusCode)
	}
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(body, &set); err != nil {
		return nil, fmt.Errorf("decode jwks: %w", err)
	}
	var keys []crypto.PublicKey
	for _, key := range set.Keys {
		if key.Use == "" || key.Use == "sig" {
			keys = append(keys, key.Key)
		}
	}
	if len(keys) == 0 {
		return nil, errors.New("jwks holds no signing key")
	}
	return keys, nil
}
