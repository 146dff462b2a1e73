package signature

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"strconv"
	"strings"
	"time"
)

// Discord interactions: X-Signature-Ed25519 is hex of an Ed25519 signature
// of X-Signature-Timestamp + body, under the application's public key
// (discordgo's VerifyInteraction).
const (
	discordSigHeader = "X-Signature-Ed25519"
	discordTSHeader  = "X-Signature-Timestamp"
)

// SendGrid Event Webhook: X-Twilio-Email-Event-Webhook-Signature is base64
// of an ASN.1 ECDSA P-256 signature of SHA-256(timestamp + body), under the
// verification key SendGrid shows (sendgrid-go's eventwebhook).
const (
	sendgridSigHeader = "X-Twilio-Email-Event-Webhook-Signature"
	sendgridTSHeader  = "X-Twilio-Email-Event-Webhook-Timestamp"
)

// asymVerifier checks a public-key signature of timestamp + body against
// every trusted key.
type asymVerifier struct {
	sigHeader, tsHeader string
	keys                []key
	tol                 time.Duration
	decode              func(string) ([]byte, error)
	check               func(pub []byte, msg, sig []byte) bool
}

func (v *asymVerifier) Verify(r *Request, now time.Time) (Result, error) {
	tsText, err := header(r.Header, v.tsHeader)
	if err != nil {
		return Result{}, err
	}
	sigText, err := header(r.Header, v.sigHeader)
	if err != nil {
		return Result{}, err
	}
	ts, err := parseTimestamp(tsText)
	if err != nil {
		return Result{}, malformed(v.tsHeader, err.Error())
	}
	sig, err := v.decode(sigText)
	if err != nil {
		return Result{}, malformed(v.sigHeader, err.Error())
	}
	msg := make([]byte, 0, len(tsText)+len(r.Body))
	msg = append(append(msg, tsText...), r.Body...)
	found := -1
	for i := range v.keys { // every key, no early exit
		if v.check(v.keys[i].value, msg, sig) && found < 0 {
			found = i
		}
	}
	if found < 0 {
		return Result{}, badSignature()
	}
	t := time.Unix(ts, 0)
	if err := checkWindow(t, now, v.tol); err != nil {
		return Result{}, err
	}
	return Result{SecretID: v.keys[found].id, Timestamp: t}, nil
}

func discordScheme(Config) (scheme, error) {
	return scheme{
		tolerance: defaultTolerance,
		key: func(v []byte) ([]byte, error) {
			k, err := hex.DecodeString(strings.TrimSpace(string(v)))
			if err != nil || len(k) != ed25519.PublicKeySize {
				return nil, errors.New("discord public key must be 64 hex digits (the application's PUBLIC KEY)")
			}
			return k, nil
		},
		verifier: func(keys []key, tol time.Duration) (Verifier, error) {
			return &asymVerifier{sigHeader: discordSigHeader, tsHeader: discordTSHeader, keys: keys, tol: tol,
				decode: func(s string) ([]byte, error) {
					b, err := hex.DecodeString(s)
					if err != nil || len(b) != ed25519.SignatureSize {
						return nil, errors.New("want 128 hex digits")
					}
					return b, nil
				},
				check: func(pub, msg, sig []byte) bool { return ed25519.Verify(ed25519.PublicKey(pub), msg, sig) },
			}, nil
		},
		sign: func(secret []byte, r *Request, now time.Time, _ string) error {
			seed, err := hex.DecodeString(string(secret))
			if err != nil || len(seed) != ed25519.SeedSize {
				return errors.New("discord signing key must be a 32-byte Ed25519 seed in hex")
			}
			ts := unixText(now)
			msg := append([]byte(ts), r.Body...)
			r.Header.Set(discordTSHeader, ts)
			r.Header.Set(discordSigHeader, hex.EncodeToString(ed25519.Sign(ed25519.NewKeyFromSeed(seed), msg)))
			return nil
		},
		describe: Description{
			Headers:   []string{discordSigHeader, discordTSHeader},
			Content:   "Ed25519 (hex) of {timestamp}{body}; the secret is the application's public key (hex)",
			Timestamp: discordTSHeader + " (unix), ±5m0s",
		},
	}, nil
}

func sendgridScheme(Config) (scheme, error) {
	return scheme{
		tolerance: defaultTolerance,
		key: func(v []byte) ([]byte, error) {
			der, err := derOf(v, "PUBLIC KEY")
			if err != nil {
				return nil, errors.New("sendgrid verification key must be the base64 (or PEM) public key SendGrid shows")
			}
			pub, err := x509.ParsePKIXPublicKey(der)
			if _, ok := pub.(*ecdsa.PublicKey); err != nil || !ok {
				return nil, errors.New("sendgrid verification key is not an ECDSA public key")
			}
			return der, nil
		},
		verifier: func(keys []key, tol time.Duration) (Verifier, error) {
			return &asymVerifier{sigHeader: sendgridSigHeader, tsHeader: sendgridTSHeader, keys: keys, tol: tol,
				decode: func(s string) ([]byte, error) {
					b, err := base64.StdEncoding.DecodeString(s)
					if err != nil || len(b) == 0 || len(b) > 80 {
						return nil, errors.New("want base64 of an ASN.1 ECDSA signature")
					}
					return b, nil
				},
				check: func(der, msg, sig []byte) bool {
					pub, err := x509.ParsePKIXPublicKey(der)
					if err != nil {
						return false
					}
					d := sha256.Sum256(msg)
					return ecdsa.VerifyASN1(pub.(*ecdsa.PublicKey), d[:], sig)
				},
			}, nil
		},
		sign: func(secret []byte, r *Request, now time.Time, _ string) error {
			der, err := derOf(secret, "PRIVATE KEY")
			if err != nil {
				return errors.New("sendgrid signing key must be a PKCS #8 ECDSA key in base64 DER or PEM")
			}
			k, err := x509.ParsePKCS8PrivateKey(der)
			priv, ok := k.(*ecdsa.PrivateKey)
			if err != nil || !ok {
				return errors.New("sendgrid signing key is not an ECDSA private key")
			}
			ts := unixText(now)
			d := sha256.Sum256(append([]byte(ts), r.Body...))
			sig, err := ecdsa.SignASN1(rand.Reader, priv, d[:])
			if err != nil {
				return err
			}
			r.Header.Set(sendgridTSHeader, ts)
			r.Header.Set(sendgridSigHeader, base64.StdEncoding.EncodeToString(sig))
			return nil
		},
		describe: Description{
			Headers:   []string{sendgridSigHeader, sendgridTSHeader},
			Content:   "ECDSA P-256 (base64 ASN.1) of SHA-256({timestamp}{body}); the secret is the verification key (base64 DER)",
			Timestamp: sendgridTSHeader + " (unix), ±5m0s",
		},
	}, nil
}

// derOf returns the DER bytes of a PEM block of kind, or of base64 text.
func derOf(v []byte, kind string) ([]byte, error) {
	s := strings.TrimSpace(string(v))
	if strings.HasPrefix(s, "-----BEGIN") {
		b, _ := pem.Decode([]byte(s))
		if b == nil || !strings.HasSuffix(b.Type, kind) {
			return nil, errors.New("not a PEM " + kind)
		}
		return b.Bytes, nil
	}
	return base64.StdEncoding.DecodeString(s)
}

func unixText(t time.Time) string { return strconv.FormatInt(t.Unix(), 10) }
