package signature

import (
	"encoding/hex"
	"errors"
	"strings"
	"time"
)

const (
	githubSigHeader      = "X-Hub-Signature-256"
	githubDeliveryHeader = "X-Github-Delivery"
	githubHookIDHeader   = "X-Github-Hook-Id"
	githubSigPrefix      = "sha256="
)

// githubVerifier implements GitHub's scheme:
// X-Hub-Signature-256: sha256=hex(HMAC-SHA256(secret, raw body)). There is
// no timestamp, so GitHub deliveries cannot be protected against replay by
// this package; deduplication by EventID is the receiver's defence. The
// delivery and hook id headers are not covered by the signature.
type githubVerifier struct {
	keys []key
}

func (v *githubVerifier) Verify(r *Request, _ time.Time) (Result, error) {
	h, body := r.Header, r.Body
	sigText, err := header(h, githubSigHeader)
	if err != nil {
		return Result{}, err
	}
	delivery, err := eventIDHeader(h, githubDeliveryHeader)
	if err != nil {
		return Result{}, err
	}
	eventID := delivery
	if len(h.Values(githubHookIDHeader)) > 0 {
		hook, err := header(h, githubHookIDHeader)
		switch {
		case errors.Is(err, ErrMissingHeader):
			// blank hook id: treat as absent
		case err != nil:
			return Result{}, err
		case !validEventID(hook) || strings.Contains(hook, ":"):
			return Result{}, malformed(githubHookIDHeader, "hook id must be visible ASCII without ':'")
		default:
			eventID = hook + ":" + delivery
		}
	}
	if len(eventID) > maxEventIDLen {
		return Result{}, malformed(githubDeliveryHeader, "event id too long")
	}
	sig, err := parseGitHubSignature(sigText)
	if err != nil {
		return Result{}, malformed(githubSigHeader, err.Error())
	}
	id, ok := match(v.keys, [][]byte{sig}, body)
	if !ok {
		return Result{}, badSignature()
	}
	return Result{SecretID: id, EventID: eventID}, nil
}

// parseGitHubSignature parses "sha256=<64 hex digits>".
func parseGitHubSignature(s string) ([]byte, error) {
	rest, ok := strings.CutPrefix(trim(s), githubSigPrefix)
	if !ok {
		return nil, errors.New("want sha256=<hex>")
	}
	sig, err := parseHexSHA256(rest)
	if err != nil {
		return nil, errors.New("want sha256= followed by 64 hex digits")
	}
	return sig, nil
}

func githubScheme(Config) (scheme, error) {
	return scheme{
		key: rawKey,
		verifier: func(keys []key, _ time.Duration) (Verifier, error) {
			return &githubVerifier{keys: keys}, nil
		},
		sign: func(secret []byte, r *Request, _ time.Time, eventID string) error {
			if !validEventID(eventID) {
				return errors.New("event id must be 1 to 255 visible ASCII characters")
			}
			delivery := eventID
			if hook, d, ok := strings.Cut(eventID, ":"); ok {
				if hook == "" || d == "" {
					return errors.New("event id must be <hook id>:<delivery> or <delivery>")
				}
				r.Header.Set(githubHookIDHeader, hook)
				delivery = d
			}
			r.Header.Set(githubDeliveryHeader, delivery)
			r.Header.Set(githubSigHeader, githubSigPrefix+hex.EncodeToString(macSHA256(secret, r.Body)))
			return nil
		},
		describe: Description{
			Headers: []string{githubSigHeader, githubDeliveryHeader, githubHookIDHeader},
			Content: "HMAC-SHA256 hex of {body} in X-Hub-Signature-256 after \"sha256=\"",
		},
	}, nil
}
