package admin

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
)

// withheld stands for the selector's value in an erasure's audit row and
// log lines when no AuditKey is configured: neither the value nor an
// unkeyed hash of it (an e-mail address is found again from its plain
// SHA-256 by trying candidates) is kept.
const withheld = "<withheld: no audit key>"

// auditKeyLabel derives the audit key from the secret it is given, so the
// secret (a token-encryption key) keys nothing else with its own bytes.
const auditKeyLabel = "gatehouse erasure audit selector v1"

// AuditKey keys the digest that an erasure's audit row (erasures.selector),
// its answer and its log lines keep of the selector's value instead of the
// value: an operator holding the key recomputes the digest of a value to
// find its erasure; whoever reads the table or the logs learns nothing of
// the value. The zero AuditKey keeps no digest at all (withheld).
type AuditKey struct {
	id  string
	key []byte
}

// NewAuditKey derives the audit key from secret (gatehouse passes its
// newest auth.encryption_keys entry): HMAC-SHA256(secret, "gatehouse
// erasure audit selector v1"). id (that entry's id) is written into every
// digest, so a digest names the key it needs after a rotation. An empty
// secret returns the zero AuditKey.
func NewAuditKey(id string, secret []byte) AuditKey {
	if len(secret) == 0 {
		return AuditKey{}
	}
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(auditKeyLabel))
	return AuditKey{id: id, key: m.Sum(nil)}
}

// Digest is the audited form of a selector's value v:
// "hmac-sha256:<key id>:<64 hex digits>", HMAC-SHA256 of v under the
// derived key; "<withheld: no audit key>" for the zero AuditKey.
func (k AuditKey) Digest(v string) string {
	if len(k.key) == 0 {
		return withheld
	}
	m := hmac.New(sha256.New, k.key)
	m.Write([]byte(v))
	return "hmac-sha256:" + k.id + ":" + hex.EncodeToString(m.Sum(nil))
}
