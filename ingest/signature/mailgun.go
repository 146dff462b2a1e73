package signature

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"
)

// mailgunVerifier implements Mailgun's webhook signature (mailgun-go's
// VerifyWebhookSignature): the JSON body carries
// {"signature": {"timestamp", "token", "signature"}} where signature is
// hex(HMAC-SHA256(webhook signing key, timestamp + token)). The signature
// does not cover the event data: only those three members are read before
// verification, and the rest of the body is protected by TLS alone.
type mailgunVerifier struct {
	keys []key
	tol  time.Duration
}

const mailgunSig = "signature"

func (v *mailgunVerifier) Verify(r *Request, now time.Time) (Result, error) {
	if !gjson.ValidBytes(r.Body) {
		return Result{}, malformed("body", "not JSON")
	}
	obj := gjson.GetBytes(r.Body, mailgunSig)
	if !obj.IsObject() {
		return Result{}, missing("body signature")
	}
	f := obj.Get("timestamp")
	token, sigText := obj.Get("token"), obj.Get("signature")
	if !f.Exists() || !token.Exists() || !sigText.Exists() {
		return Result{}, missing("body signature.timestamp, signature.token or signature.signature")
	}
	if f.Type != gjson.String && f.Type != gjson.Number || token.Type != gjson.String || sigText.Type != gjson.String {
		return Result{}, malformed("body signature", "timestamp, token and signature must be strings")
	}
	tsText := f.String()
	ts, err := parseTimestamp(tsText)
	if err != nil {
		return Result{}, malformed("body signature.timestamp", err.Error())
	}
	sig, err := parseHexSHA256(sigText.Str)
	if err != nil {
		return Result{}, malformed("body signature.signature", err.Error())
	}
	id, ok := match(v.keys, [][]byte{sig}, []byte(tsText), []byte(token.Str))
	if !ok {
		return Result{}, badSignature()
	}
	t := time.Unix(ts, 0)
	if err := checkWindow(t, now, v.tol); err != nil {
		return Result{}, err
	}
	return Result{SecretID: id, Timestamp: t, Nonce: token.Str}, nil
}

func mailgunScheme(Config) (scheme, error) {
	return scheme{
		tolerance: defaultTolerance,
		key:       rawKey,
		verifier: func(keys []key, tol time.Duration) (Verifier, error) {
			return &mailgunVerifier{keys: keys, tol: tol}, nil
		},
		sign: func(secret []byte, r *Request, now time.Time, _ string) error {
			body := strings.TrimSpace(string(r.Body))
			if !strings.HasPrefix(body, "{") || !gjson.Valid(body) {
				return errors.New("mailgun body must be a JSON object")
			}
			b := make([]byte, 25)
			if _, err := rand.Read(b); err != nil {
				return err
			}
			token := hex.EncodeToString(b)
			ts := strconv.FormatInt(now.Unix(), 10)
			sig := hex.EncodeToString(macSHA256(secret, []byte(ts), []byte(token)))
			member := `"signature":{"timestamp":"` + ts + `","token":"` + token + `","signature":"` + sig + `"}`
			rest := strings.TrimSpace(body[1:])
			if rest != "}" {
				member += ","
			}
			r.Body = []byte("{" + member + rest)
			return nil
		},
		describe: Description{
			Headers:   []string{"(none: body member signature)"},
			Content:   "HMAC-SHA256 hex of signature.timestamp + signature.token (the event data is not signed); key: the webhook signing key",
			Timestamp: "body signature.timestamp (unix), ±5m0s",
		},
	}, nil
}
