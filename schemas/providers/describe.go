package providers

import (
	"fmt"
	"strings"
)

// String says, for people, where a value comes from: "header X, else body
// path y".
func (fs Fields) String() string {
	parts := make([]string, len(fs))
	for i, f := range fs {
		parts[i] = f.String()
	}
	return strings.Join(parts, ", else ")
}

func (f Field) source() string {
	switch {
	case f.Header != "":
		return "header " + f.Header
	case f.Path != "":
		return "body " + f.Path
	case f.Value != "":
		return `"` + f.Value + `"`
	case f.Digest:
		return "sha256:<hex SHA-256 of the body>"
	case f.Signed:
		return signedText
	case len(f.Join) > 0:
		parts := make([]string, len(f.Join))
		for i, j := range f.Join {
			parts[i] = j.String()
		}
		return strings.Join(parts, ` + "." + `)
	}
	return ""
}

// String says where f's value comes from, with its rewrites.
func (f Field) String() string {
	s := f.source()
	for i := 0; i+1 < len(f.Replace); i += 2 {
		s += fmt.Sprintf(" (%q as %q)", f.Replace[i], f.Replace[i+1])
	}
	return s
}

const signedText = "the id the signature scheme reads from its header(s)"

// IDSource says where the event id of k comes from.
func (k Kind) IDSource() string {
	switch k.Envelope {
	case EnvelopeFields:
		if k.SignedID != "" {
			return strings.ReplaceAll(k.EventID.String(), signedText, k.SignedID)
		}
		return k.EventID.String()
	}
	if k.Scheme == "standard-webhooks" {
		return "body id, else header webhook-id (svix-id)"
	}
	return "body id"
}

// TypeSource says where the event type of k comes from.
func (k Kind) TypeSource() string {
	switch k.Envelope {
	case EnvelopeFields:
		return k.EventType.String()
	}
	return "body type"
}

// HandshakeText says which handshake k answers, "" for none.
func (k Kind) HandshakeText() string {
	return map[string]string{
		HandshakeSlack:   "url_verification: the challenge echoed",
		HandshakeZoom:    "endpoint.url_validation: plainToken and its HMAC",
		HandshakeTwitch:  "webhook_callback_verification: the challenge echoed",
		HandshakeDiscord: `PING: {"type":1} (interactions), 204 (Webhook Events)`,
		HandshakeMeta:    "GET hub.challenge when hub.verify_token matches",
		HandshakeDropbox: "GET challenge echoed",
	}[k.Handshake+k.GetHandshake]
}

// KeySource says which value becomes the Kafka key (outbox aggregateid) of
// k's events: the default aggregate_id_path, paths into the stored envelope
// tried in order, then the event id.
func (k Kind) KeySource() string {
	if len(k.AggregateIDPath) == 0 {
		return "the event id (no default path; set aggregate_id_path)"
	}
	return strings.Join(k.AggregateIDPath, ", else ") + ", else the event id"
}

// TimeSource says where the creation time of k's events (ce_time; a
// wrapped envelope's created_at) comes from.
func (k Kind) TimeSource() string {
	const clock = "the receiver's clock"
	switch k.Envelope {
	case EnvelopeFields:
		if len(k.CreatedAt) == 0 {
			return "none sent: " + clock
		}
		return k.CreatedAt.String() + ", else " + clock
	}
	return "body created_at, else body created, else body timestamp"
}

// DedupeText says what k deduplicates on and what that protects against.
func (k Kind) DedupeText() string {
	const inbox = "(provider, event id) in the inbox"
	switch k.Guard {
	case GuardContent:
		return inbox + ", and the SHA-256 of the signed content (query and body) for replay_guard_ttl: the id is not " +
			"signed, so a captured delivery sent again under another id is a duplicate of the first, not a new event"
	case GuardToken:
		return inbox + ", and each signature token accepted once within the replay window: the signature covers only " +
			"timestamp and token, so a captured signature cannot carry other event data (refused, reason replayed)"
	}
	if k.Scheme == "gitlab" || k.Scheme == "postmark" {
		return inbox + "; nothing is signed: the secret and TLS are the only protection"
	}
	return inbox + ": the id is signed (or is the digest of the signed body), so a captured delivery replayed is a duplicate"
}
