package main

import (
	"crypto/rand"
	"encoding/hex"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
)

// sendShape is how one scheme's provider delivers an event: a default
// event type and object id, the event id's form, and a body of the
// provider's own shape. The event's id, type, creation time and object id
// are then placed where the catalogue reads them (build), so a shape only
// holds what makes the delivery look like the provider's.
type sendShape struct {
	typ, object string
	id          func() string
	body        func(now time.Time) map[string]any
}

func evtID() string { return "evt_" + randHex(8) }

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func randDigits(n int) string {
	v, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	s := v.String()
	for len(s) < n {
		s += "7"
	}
	return s[:n]
}

type obj = map[string]any

// sendShapes are the catalogue's schemes' deliveries, by scheme name.
// A scheme without one (reference, hmac) gets an envelope of its own
// fields only.
var sendShapes = map[string]sendShape{
	"reference": {typ: "payment.succeeded", object: "pay_123", body: func(time.Time) obj { return obj{"data": obj{}} }},
	"stripe": {typ: "payment_intent.succeeded", object: "pi_3MtwBwLkdIwHu7ix28a3tqPa", body: func(now time.Time) obj {
		return obj{"object": "event", "api_version": "2024-06-20", "created": now.Unix(), "livemode": false,
			"data": obj{"object": obj{"object": "payment_intent", "amount": 2000, "currency": "usd"}}}
	}},
	"github": {typ: "push", object: "octo-org/octo-repo", id: func() string { return randDigits(9) + ":" + uuid.NewString() }, body: func(time.Time) obj {
		return obj{"ref": "refs/heads/main", "repository": obj{"id": 1296269, "name": "octo-repo"}, "sender": obj{"login": "octocat"}}
	}},
	"slack": {typ: "app_mention", id: func() string { return "Ev" + strings.ToUpper(randHex(5)) }, body: func(now time.Time) obj {
		return obj{"type": "event_callback", "team_id": "T0001", "api_app_id": "A0001", "event_time": now.Unix(),
			"event": obj{"user": "U0001", "text": "hello", "channel": "C0001", "event_ts": strconv.FormatInt(now.Unix(), 10)}}
	}},
	"standard-webhooks": {typ: "invoice.paid", id: func() string { return "msg_" + randHex(12) }, body: func(now time.Time) obj {
		return obj{"timestamp": now.Format(time.RFC3339), "data": obj{"amount": 2000}}
	}},
	"shopify": {typ: "orders.create", id: uuid.NewString, body: func(now time.Time) obj {
		return obj{"id": 820982911946154508, "email": "jon@example.com", "total_price": "10.00", "created_at": now.Format(time.RFC3339)}
	}},
	"clerk": {typ: "user.created", object: "user_29w83sxmDNGwOuEthce5gg56FcC", id: func() string { return "msg_" + randHex(12) }, body: func(now time.Time) obj {
		return obj{"object": "event", "timestamp": now.UnixMilli(), "data": obj{"object": "user", "first_name": "Example"}}
	}},
	"resend": {typ: "email.sent", object: "56761188-7520-42d8-8898-ff6fc54ce618", id: func() string { return "msg_" + randHex(12) }, body: func(now time.Time) obj {
		return obj{"created_at": now.Format(time.RFC3339), "data": obj{"from": "Acme <onboarding@resend.dev>", "subject": "Sending this example"}}
	}},
	"gitlab": {typ: "push", object: "mike/diaspora", id: uuid.NewString, body: func(time.Time) obj {
		return obj{"event_name": "push", "ref": "refs/heads/master", "project": obj{"id": 15, "name": "Diaspora"}}
	}},
	"bitbucket": {typ: "repo:push", object: "team_name/repo_name", id: uuid.NewString, body: func(time.Time) obj {
		return obj{"actor": obj{"display_name": "Example"}, "repository": obj{"name": "repo_name"}, "push": obj{"changes": []any{}}}
	}},
	"discord": {typ: "event.APPLICATION_AUTHORIZED", body: func(now time.Time) obj {
		return obj{"version": 1, "application_id": "1234567890", "event": obj{"timestamp": now.Format(time.RFC3339), "data": obj{"user": obj{"id": "53908232506183680"}}}}
	}},
	"twilio": {typ: "message.delivered", object: "SM" + "1f0e1b0c2d3e4f5061728394a5b6c7d8", id: func() string { return randHex(16) }, body: func(time.Time) obj {
		return obj{"AccountSid": "AC0123456789abcdef0123456789abcdef", "From": "+15005550006", "To": "+15005550009", "ApiVersion": "2010-04-01"}
	}},
	"sendgrid": {typ: "delivered", object: "14c5d75ce93.dfd.64b469.filter0001.16648.5515E0B88.0", id: func() string { return randHex(11) }, body: func(now time.Time) obj {
		return obj{"email": "example@test.com", "timestamp": now.Unix(), "smtp-id": "<14c5d75ce93.dfd.64b469@ismtpd-555>", "response": "250 OK"}
	}},
	"mailgun": {typ: "delivered", object: "20130503182626.18666.16540@example.com", id: func() string { return randHex(11) }, body: func(now time.Time) obj {
		return obj{"event-data": obj{"timestamp": float64(now.UnixMilli()) / 1000, "recipient": "alice@example.com", "message": obj{"headers": obj{"to": "Alice <alice@example.com>"}}}}
	}},
	"postmark": {typ: "Delivery", object: "883953f4-6105-42a2-a16a-77a8eac79483", body: func(time.Time) obj {
		return obj{"ServerID": 23, "MessageStream": "outbound", "Recipient": "john@example.com", "Tag": "welcome-email"}
	}},
	"square": {typ: "payment.updated", object: "KkAkhdMsgzn59SM8A89WgKwekxLZY", id: uuid.NewString, body: func(time.Time) obj {
		return obj{"merchant_id": "6SSW7HV8K2ST5", "data": obj{"type": "payment", "object": obj{"payment": obj{"status": "COMPLETED"}}}}
	}},
	"paddle": {typ: "transaction.completed", object: "txn_01h04vsc0qhwtsbsxh3422wjs4", id: func() string { return "evt_01" + randHex(12) }, body: func(time.Time) obj {
		return obj{"notification_id": "ntf_01" + randHex(12), "data": obj{"status": "completed", "currency_code": "USD"}}
	}},
	"lemonsqueezy": {typ: "order_created", object: "1", body: func(now time.Time) obj {
		return obj{"meta": obj{"test_mode": true}, "data": obj{"type": "orders", "attributes": obj{"status": "paid", "created_at": now.Format(time.RFC3339)}}}
	}},
	"zoom": {typ: "meeting.started", object: "1234567890", body: func(now time.Time) obj {
		return obj{"event_ts": now.UnixMilli(), "payload": obj{"account_id": "AAAAAABBBB", "object": obj{"topic": "Standup"}}}
	}},
	"twitch": {typ: "channel.follow.notification", object: "f1c2a387-161a-49f9-a165-0f21d7a4e1c4", id: uuid.NewString, body: func(now time.Time) obj {
		return obj{"subscription": obj{"type": "channel.follow", "version": "2", "status": "enabled"}, "event": obj{"user_login": "cool_user", "followed_at": now.Format(time.RFC3339)}}
	}},
	"meta": {typ: "page.feed", object: "0", body: func(now time.Time) obj {
		return obj{"entry": []any{obj{"time": now.Unix(), "changes": []any{obj{"value": obj{"item": "post"}}}}}}
	}},
	"dropbox": {typ: "list_folder", body: func(time.Time) obj {
		return obj{"list_folder": obj{"accounts": []any{"dbid:AAH4f99T0taONIb-OurWxbNQ6ywGRopQngc"}}, "delta": obj{"users": []any{12345678}}}
	}},
	"linear": {typ: "Issue.create", object: "2174add1-f7c8-44e3-bbf3-2d60b5ea8bc9", id: uuid.NewString, body: func(time.Time) obj {
		return obj{"organizationId": "b0b4d7a1", "url": "https://linear.app/issue/LIN-1", "data": obj{"title": "Example"}}
	}},
	"intercom": {typ: "conversation.user.created", object: "147", id: func() string { return "notif_" + uuid.NewString() }, body: func(now time.Time) obj {
		return obj{"type": "notification_event", "app_id": "a86dr8yl", "created_at": now.Unix(), "data": obj{"type": "notification_event_data", "item": obj{"type": "conversation"}}}
	}},
	"hubspot": {typ: "contact.creation", object: "123", id: func() string { return randDigits(6) + "." + randDigits(9) }, body: func(now time.Time) obj {
		return obj{"portalId": 62515, "appId": 1160452, "attemptNumber": 0, "changeSource": "CRM", "occurredAt": now.UnixMilli()}
	}},
	"typeform": {typ: "form_response", object: "lT4Z3j", id: func() string { return "01" + strings.ToUpper(randHex(12)) }, body: func(now time.Time) obj {
		return obj{"form_response": obj{"token": "a3a12ec67a1365927098a606107fac15", "submitted_at": now.Format(time.RFC3339)}}
	}},
	"calendly": {typ: "invitee.created", object: "https://api.calendly.com/scheduled_events/GBGBDCAADAEDCRZ2/invitees/AAAAAAAAAAAAAAAA", body: func(now time.Time) obj {
		return obj{"created_by": "https://api.calendly.com/users/AAAAAAAAAAAAAAAA", "payload": obj{"email": "test@example.com", "status": "active"}}
	}},
}
