package signature

import (
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Sign produces the signature headers a provider using cfg.Scheme would send
// for body at time now, signed with secret (in the same form as
// Config.Secrets[i].Value: the whole "whsec_…" string for stripe,
// "whsec_<base64>" or bare base64 for standard-webhooks, raw bytes
// otherwise). cfg.Secrets and cfg.Tolerance are not used. It is meant for
// tests, the curl command printed by `make run` and benchmarks.
//
// eventID is required by the schemes that carry an event id in headers and
// ignored by the others (reference, stripe, slack carry it in the body):
//   - github: "<hook id>:<delivery GUID>" sets X-GitHub-Hook-ID and
//     X-GitHub-Delivery; without ':' only X-GitHub-Delivery is set;
//   - shopify: X-Shopify-Webhook-Id;
//   - standard-webhooks: webhook-id (which is also signed).
//
// Whatever Sign produces, Verify of a verifier holding secret accepts at
// time now and reports eventID as Result.EventID where the scheme has one.
// Only signature-related headers are set (no Content-Type).
func Sign(cfg Config, secret []byte, body []byte, now time.Time, eventID string) (http.Header, error) {
	if err := checkShape(cfg); err != nil {
		return nil, err
	}
	k, err := keyBytes(cfg.Scheme, secret)
	if err != nil {
		return nil, fmt.Errorf("signature: sign %q: %w", cfg.Scheme, err)
	}
	needsID := cfg.Scheme == schemeGitHub || cfg.Scheme == schemeShopify || cfg.Scheme == schemeStandardWebhooks
	if needsID && !validEventID(eventID) {
		return nil, fmt.Errorf("signature: sign %q: event id must be 1 to 255 visible ASCII characters", cfg.Scheme)
	}
	if now.Unix() < 0 {
		return nil, errors.New("signature: sign: time before the Unix epoch")
	}
	ts := strconv.FormatInt(now.Unix(), 10)
	h := make(http.Header)
	switch cfg.Scheme {
	case schemeReference:
		h.Set(cfg.TimestampHeader, ts)
		h.Set(cfg.SignatureHeader, hex.EncodeToString(macSHA256(k, []byte(ts+"."), body)))
	case schemeStripe:
		sh := stripeSigHeader{timestamp: now.Unix(), v1: [][]byte{macSHA256(k, []byte(ts+"."), body)}}
		h.Set(stripeHeader, sh.String())
	case schemeGitHub:
		delivery := eventID
		if hook, d, ok := strings.Cut(eventID, ":"); ok {
			if hook == "" || d == "" {
				return nil, errors.New("signature: sign \"github\": event id must be <hook id>:<delivery> or <delivery>")
			}
			h.Set(githubHookIDHeader, hook)
			delivery = d
		}
		h.Set(githubDeliveryHeader, delivery)
		h.Set(githubSigHeader, githubSigPrefix+hex.EncodeToString(macSHA256(k, body)))
	case schemeSlack:
		h.Set(slackTSHeader, ts)
		h.Set(slackSigHeader, slackVersion+"="+hex.EncodeToString(macSHA256(k, []byte(slackVersion+":"+ts+":"), body)))
	case schemeStandardWebhooks:
		h.Set(standardIDHeader, eventID)
		h.Set(standardTSHeader, ts)
		h.Set(standardSigHeader, formatStandardSignatures([][]byte{macSHA256(k, []byte(eventID+"."+ts+"."), body)}))
	case schemeShopify:
		h.Set(shopifyIDHeader, eventID)
		h.Set(shopifySigHeader, base64.StdEncoding.EncodeToString(macSHA256(k, body)))
	}
	return h, nil
}
