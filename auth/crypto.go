package auth

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
)

// ErrUnknownKey is returned when a ciphertext names a key id that is not
// configured (an old key was removed before its data was re-encrypted).
var ErrUnknownKey = errors.New("auth: unknown encryption key id")

// Keyring encrypts with its primary (first) key and decrypts with any of its
// keys, found by the key id stored beside each ciphertext. AES-256-GCM, a
// random 96-bit nonce prepended to the ciphertext, and associated data that
// binds a ciphertext to its row so it cannot be moved to another one.
type Keyring struct {
	primary string
	aeads   map[string]cipher.AEAD
}

// NewKeyring builds a keyring from resolved config keys (first = primary).
// It fails when there is no key or a key is not 32 bytes.
func NewKeyring(keys []Key) (*Keyring, error) {
	if len(keys) == 0 {
		return nil, errors.New("auth: keyring: no encryption key")
	}
	k := &Keyring{primary: keys[0].ID, aeads: map[string]cipher.AEAD{}}
	for _, key := range keys {
		if len(key.Value) != 32 {
			return nil, fmt.Errorf("auth: keyring: key %q is %d bytes, want 32", key.ID, len(key.Value))
		}
		block, err := aes.NewCipher(key.Value)
		if err != nil {
			return nil, fmt.Errorf("auth: keyring: %w", err)
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, fmt.Errorf("auth: keyring: %w", err)
		}
		k.aeads[key.ID] = aead
	}
	return k, nil
}

// PrimaryID is the id of the key new ciphertexts use.
func (k *Keyring) PrimaryID() string { return k.primary }

// Seal encrypts plaintext with the primary key; ad is authenticated, not stored.
func (k *Keyring) Seal(plaintext, ad []byte) (keyID string, ciphertext []byte, err error) {
	aead := k.aeads[k.primary]
	nonce := make([]byte, aead.NonceSize(), aead.NonceSize()+len(plaintext)+aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return "", nil, fmt.Errorf("nonce: %w", err)
	}
	return k.primary, aead.Seal(nonce, nonce, plaintext, ad), nil
}

// Open decrypts a ciphertext made by Seal with the key keyID and the same ad.
func (k *Keyring) Open(keyID string, ciphertext, ad []byte) ([]byte, error) {
	aead, ok := k.aeads[keyID]
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknownKey, keyID)
	}
	if len(ciphertext) < aead.NonceSize() {
		return nil, errors.New("auth: ciphertext too short")
	}
	n := aead.NonceSize()
	pt, err := aead.Open(nil, ciphertext[:n], ciphertext[n:], ad)
	if err != nil {
		return nil, fmt.Errorf("auth: decrypt with key %q: %w", keyID, err)
	}
	return pt, nil
}

// randomToken returns n random bytes in unpadded base64url.
func randomToken(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic("auth: crypto/rand failed: " + err.Error()) // never happens on supported platforms
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// hash is the SHA-256 used to look up secrets (session IDs, states, refresh
// tokens) without storing them.
func hash(s string) []byte {
	h := sha256.Sum256([]byte(s))
	return h[:]
}
