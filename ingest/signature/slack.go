package signature

import (
	"errors"
	"net/http"
	"strings"
	"time"
)

const (
	slackSigHeader = "X-Slack-Signature"
	slackTSHeader  = "X-Slack-Request-Timestamp"
	slackVersion   = "v0"
)

// slackVerifier implements Slack's v0 scheme:
// X-Slack-Signature: v0=hex(HMAC-SHA256(signing secret, "v0:<ts>:<raw body>"))
// with <ts> from X-Slack-Request-Timestamp.
type slackVerifier struct {
	keys []key
	tol  time.Duration
}

func (v *slackVerifier) Verify(h http.Header, body []byte, now time.Time) (Result, error) {
	tsText, ts, err := timestampHeader(h, slackTSHeader)
	if err != nil {
		return Result{}, err
	}
	sigText, err := header(h, slackSigHeader)
	if err != nil {
		return Result{}, err
	}
	sig, err := parseSlackSignature(sigText)
	if err != nil {
		return Result{}, malformed(slackSigHeader, err.Error())
	}
	id, ok := match(v.keys, [][]byte{sig}, []byte(slackVersion+":"+tsText+":"), body)
	if !ok {
		return Result{}, badSignature()
	}
	t := time.Unix(ts, 0)
	if err := checkWindow(t, now, v.tol); err != nil {
		return Result{}, err
	}
	return Result{SecretID: id, Timestamp: t}, nil
}

// parseSlackSignature parses "v0=<64 hex digits>".
func parseSlackSignature(s string) ([]byte, error) {
	rest, ok := strings.CutPrefix(trim(s), slackVersion+"=")
	if !ok {
		return nil, errors.New("want v0=<hex>")
	}
	sig, err := parseHexSHA256(rest)
	if err != nil {
		return nil, errors.New("want v0= followed by 64 hex digits")
	}
	return sig, nil
}
