package ingest

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"

	"github.com/gatehouse/gatehouse/schemas/providers"

	"github.com/tidwall/gjson"

	"github.com/gatehouse/gatehouse/ingest/signature"
)

// maxChallenge bounds a challenge echoed back to a provider.
const maxChallenge = 1024

// answerHandshake answers a provider's signed verification request, after
// its signature was verified, instead of storing it. It reports whether r
// was one (and the status it answered).
func answerHandshake(w http.ResponseWriter, h http.Header, ep *endpoint, body []byte, res signature.Result) (int, bool) {
	switch ep.kind.Handshake {
	case providers.HandshakeSlack:
		if gjson.GetBytes(body, "type").Str != "url_verification" {
			return 0, false
		}
		return writeJSON(w, map[string]string{"challenge": gjson.GetBytes(body, "challenge").Str}), true
	case providers.HandshakeZoom:
		// endpoint.url_validation: encryptedToken = hex(HMAC-SHA256(secret, plainToken)).
		if gjson.GetBytes(body, "event").Str != "endpoint.url_validation" {
			return 0, false
		}
		plain := gjson.GetBytes(body, "payload.plainToken").Str
		if plain == "" || len(plain) > maxChallenge {
			return 0, false
		}
		m := hmac.New(sha256.New, ep.secret(res.SecretID))
		m.Write([]byte(plain))
		return writeJSON(w, map[string]string{"plainToken": plain, "encryptedToken": hex.EncodeToString(m.Sum(nil))}), true
	case providers.HandshakeTwitch:
		if h.Get("Twitch-Eventsub-Message-Type") != "webhook_callback_verification" {
			return 0, false
		}
		c := gjson.GetBytes(body, "challenge").Str
		if c == "" || len(c) > maxChallenge {
			return 0, false
		}
		return writeText(w, c), true
	case providers.HandshakeDiscord:
		t := gjson.GetBytes(body, "type")
		switch {
		case t.Raw == "1" && !gjson.GetBytes(body, "event").Exists(): // interaction PING
			return writeJSON(w, map[string]int{"type": 1}), true
		case t.Raw == "0" && gjson.GetBytes(body, "version").Exists(): // Webhook Events PING
			w.WriteHeader(http.StatusNoContent)
			return http.StatusNoContent, true
		}
	}
	return 0, false
}

// serveGetHandshake answers the unsigned GET some providers send to check
// an endpoint: Meta's hub.challenge (only with the configured
// hub.verify_token, compared in constant time) and Dropbox's challenge.
// The echoed challenge is plain text that no browser may sniff as markup.
func serveGetHandshake(w http.ResponseWriter, req *http.Request, ep *endpoint) int {
	q := req.URL.Query()
	switch ep.kind.GetHandshake {
	case providers.HandshakeMeta:
		c := q.Get("hub.challenge")
		if q.Get("hub.mode") != "subscribe" || c == "" || len(c) > maxChallenge {
			http.Error(w, "want hub.mode=subscribe, hub.verify_token and hub.challenge", http.StatusBadRequest)
			return http.StatusBadRequest
		}
		got := sha256.Sum256([]byte(q.Get("hub.verify_token")))
		want := sha256.Sum256(ep.p.VerifyToken)
		if !hmac.Equal(got[:], want[:]) {
			http.Error(w, "hub.verify_token does not match", http.StatusForbidden)
			return http.StatusForbidden
		}
		return writeText(w, c)
	case providers.HandshakeDropbox:
		c := q.Get("challenge")
		if c == "" || len(c) > maxChallenge {
			http.Error(w, "want a challenge parameter", http.StatusBadRequest)
			return http.StatusBadRequest
		}
		return writeText(w, c)
	}
	return 0
}

func writeJSON(w http.ResponseWriter, v any) int {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
	return http.StatusOK
}

func writeText(w http.ResponseWriter, s string) int {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	_, _ = w.Write([]byte(s))
	return http.StatusOK
}

// acknowledge answers a committed delivery: 204, except a Discord
// interaction, which needs an interaction response within three seconds.
// gatehouse defers it, which is what processing later means in Discord's
// terms: a command or modal submission gets {"type":5} (the user sees
// "thinking…"), a message component {"type":6}; the consumer then edits
// the response through the interaction's token within fifteen minutes.
func acknowledge(w http.ResponseWriter, k providers.Kind, body []byte) int {
	if k.Handshake == providers.HandshakeDiscord && !gjson.GetBytes(body, "event").Exists() {
		switch gjson.GetBytes(body, "type").Raw {
		case "2", "5": // APPLICATION_COMMAND, MODAL_SUBMIT
			return writeJSON(w, map[string]int{"type": 5})
		case "3": // MESSAGE_COMPONENT
			return writeJSON(w, map[string]int{"type": 6})
		}
	}
	w.WriteHeader(http.StatusNoContent)
	return http.StatusNoContent
}
