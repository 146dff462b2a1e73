package providers

import "strings"

// String says, for people, where a value comes from: "header X, else body
// path y".
func (fs Fields) String() string {
	parts := make([]string, len(fs))
	for i, f := range fs {
		parts[i] = f.String()
	}
	return strings.Join(parts, ", else ")
}

func (f Field) String() string {
	switch {
	case f.Header != "":
		return "header " + f.Header
	case f.Path != "":
		return "body " + f.Path
	case f.Value != "":
		return `"` + f.Value + `"`
	case f.Digest:
		return "sha256:<hex SHA-256 of the body>"
	case len(f.Join) > 0:
		parts := make([]string, len(f.Join))
		for i, j := range f.Join {
			parts[i] = j.String()
		}
		return strings.Join(parts, ` + "." + `)
	}
	return ""
}

// IDSource says where the event id of k comes from.
func (k Kind) IDSource() string {
	switch k.Envelope {
	case EnvelopeFields:
		return k.EventID.String()
	case EnvelopeGitHub:
		return "header X-GitHub-Hook-ID + \":\" + header X-GitHub-Delivery"
	case EnvelopeShopify:
		return "header X-Shopify-Webhook-Id"
	case EnvelopeSlack:
		return "body event_id"
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
	case EnvelopeGitHub:
		return `header X-GitHub-Event + "." + body action`
	case EnvelopeShopify:
		return `header X-Shopify-Topic ("/" as ".")`
	case EnvelopeSlack:
		return "body event.type, else body type"
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
