package providers

import "time"

// Redelivery is how long a provider keeps redelivering one event after the
// first attempt, as the provider documents it. The dedupe window of an
// endpoint must be at least Window, or a late retry would be recorded as a
// new event. Window 0 means the provider documents no automatic retry.
type Redelivery struct {
	Window time.Duration
	// Text summarises the schedule; Source is where it is documented.
	Text, Source string
}

// redeliveries holds each catalogue scheme's documented redelivery window
// (Kind.Redelivery; `gatehouse providers` prints it). The figures are the providers' own
// documentation as of 2025; Source names the page.
var redeliveries = map[string]Redelivery{
	"reference": {0, "not specified (SPEC.md: retry counts and intervals not shown)", "SPEC.md"},
	"hmac":      {0, "as the provider of the hmac definition documents it: set dedupe_window to cover it", "your provider's documentation"},
	"stripe": {72 * time.Hour, "live mode: up to 3 days with exponential back-off",
		"https://docs.stripe.com/webhooks#automatic-retries"},
	"github": {72 * time.Hour, "no automatic retry; deliveries of the past 3 days can be redelivered by hand or API",
		"https://docs.github.com/en/webhooks/testing-and-troubleshooting-webhooks/redelivering-webhooks"},
	"slack": {10 * time.Minute, "3 retries: at once, after 1 minute, after 5 minutes",
		"https://api.slack.com/apis/events-api#retries"},
	"standard-webhooks": {28 * time.Hour, "Svix schedule: at once, 5s, 5m, 30m, 2h, 5h, 10h, 10h (about 27.6 hours)",
		"https://docs.svix.com/retries"},
	"shopify": {4 * time.Hour, "8 retries over 4 hours",
		"https://shopify.dev/docs/apps/build/webhooks/troubleshooting-webhooks"},
	"clerk": {28 * time.Hour, "delivered by Svix: at once, 5s, 5m, 30m, 2h, 5h, 10h, 10h",
		"https://clerk.com/docs/webhooks/overview"},
	"resend": {18 * time.Hour, "5s, 5m, 30m, 2h, 5h, 10h (about 17.6 hours)",
		"https://resend.com/docs/dashboard/webhooks/introduction"},
	"gitlab": {0, "no automatic retry documented (failing hooks are disabled); a request can be resent by hand",
		"https://docs.gitlab.com/user/project/integrations/webhooks/"},
	"bitbucket": {0, "no automatic retry documented; failed requests are listed in the webhook's history",
		"https://support.atlassian.com/bitbucket-cloud/docs/manage-webhooks/"},
	"discord": {0, "interactions are not retried (answer within 3 seconds)",
		"https://discord.com/developers/docs/interactions/receiving-and-responding"},
	"twilio": {0, "no retry unless the URL sets connection overrides (#rc=, at most 5 attempts within seconds)",
		"https://www.twilio.com/docs/usage/webhooks/webhooks-connection-overrides"},
	"sendgrid": {24 * time.Hour, "retried for up to 24 hours",
		"https://www.twilio.com/docs/sendgrid/for-developers/tracking-events/getting-started-event-webhook"},
	"mailgun": {8 * time.Hour, "retried with growing intervals for up to 8 hours",
		"https://documentation.mailgun.com/docs/mailgun/user-manual/webhooks/webhooks"},
	"postmark": {11 * time.Hour, "retried 10 times: 1, 5, 10, 10, 10, 15, 30 minutes, 1, 2, 6 hours",
		"https://postmarkapp.com/developer/webhooks/webhooks-overview"},
	"square": {24 * time.Hour, "retried for up to 24 hours",
		"https://developer.squareup.com/docs/webhooks/overview"},
	"paddle": {72 * time.Hour, "live: 60 retries over 3 days (sandbox: 3 retries)",
		"https://developer.paddle.com/webhooks/overview"},
	"lemonsqueezy": {10 * time.Minute, "3 retries with exponential back-off (5s, 25s, 125s)",
		"https://docs.lemonsqueezy.com/help/webhooks"},
	"zoom": {2 * time.Hour, "3 retries: after 5 minutes, 30 minutes and 90 minutes",
		"https://developers.zoom.us/docs/api/webhooks/"},
	"twitch": {10 * time.Minute, "retried while the subscription lives; messages older than 10 minutes are to be rejected",
		"https://dev.twitch.tv/docs/eventsub/handling-webhook-events/"},
	"meta": {36 * time.Hour, "retried at once, then with decreasing frequency over 36 hours",
		"https://developers.facebook.com/docs/graph-api/webhooks/getting-started"},
	"dropbox": {0, "no retry schedule documented; notifications carry no event id (a digest of the body is the id)",
		"https://www.dropbox.com/developers/reference/webhooks"},
	"linear": {7 * time.Hour, "3 retries: after 1 minute, 1 hour and 6 hours",
		"https://linear.app/developers/webhooks"},
	"intercom": {0, "one retry after a minute, then the notification is dropped",
		"https://developers.intercom.com/docs/webhooks"},
	"hubspot": {24 * time.Hour, "up to 10 retries spread over 24 hours",
		"https://developers.hubspot.com/docs/api/webhooks"},
	"typeform": {24 * time.Hour, "retried with back-off; deliveries failing for 24 hours disable the webhook",
		"https://www.typeform.com/developers/webhooks/"},
	"calendly": {24 * time.Hour, "retried with exponential back-off for up to 24 hours",
		"https://developer.calendly.com/api-docs/webhooks"},
}
