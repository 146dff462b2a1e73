package providers

import "github.com/gatehouse/gatehouse/internal/settings"

// Reconcile is how gatehouse can compare a provider's own record of what it
// sent with what the inbox stored, and close the difference
// (ingest/reconcile): Way is ReconcileBackfill (the provider lists its
// events: each missing one is read through the API and stored), or
// ReconcileRedeliver (the provider lists its deliveries: each failed or
// unstored one is sent again, signed, through the receiver), or "" with
// Reason saying why the provider cannot be reconciled.
type Reconcile struct {
	Way string
	// List is the provider's record the pass reads, and Redeliver the call
	// that sends a delivery again (ReconcileRedeliver).
	List, Redeliver string
	// Events is the event list a backfill reads (ReconcileBackfill), in
	// the declarative form an hmac definition may give too
	// (providers.<name>.reconcile.list).
	Events *settings.EventList
	// Reason says why the provider is not reconciled (Way "").
	Reason string
	// Source is the provider's documentation of its record.
	Source string
}

// Ways of Reconcile.Way.
const (
	ReconcileBackfill  = "backfill"
	ReconcileRedeliver = "redeliver"
)

// Describe is one line for `gatehouse providers` and docs/PROVIDERS.md.
func (r Reconcile) Describe() string {
	switch r.Way {
	case ReconcileBackfill:
		return "backfill from " + r.List + " (" + r.Source + ")"
	case ReconcileRedeliver:
		return "redeliver: " + r.List + ", then " + r.Redeliver + " (" + r.Source + ")"
	}
	return "none: " + r.Reason
}

// Reasons shared by several schemes of reconciles.
const (
	noRecord    = "the provider documents no API listing the webhook events or deliveries it sent"
	svixSender  = "deliveries are listed and recovered by Svix's API with the sending application's key, which a receiving endpoint does not hold"
	notYetLog   = "not implemented yet: the provider's API documents "
	userDefined = "not implemented yet: an hmac definition declares no event list"
)

// reconciles holds each catalogue scheme's reconciliation (Kind.Reconcile;
// `gatehouse providers` prints it). Stripe and GitHub are implemented by
// ingest/reconcile; a scheme whose provider documents a record gatehouse
// does not read yet says so.
var reconciles = map[string]Reconcile{
	"stripe": {Way: ReconcileBackfill,
		List: "GET /v1/events?created[gte]=&created[lte]=&starting_after= (has_more)",
		Events: &settings.EventList{Path: "/v1/events", Items: "data", ID: "id", Time: "created",
			From: "created[gte]", To: "created[lte]", Limit: "limit", Cursor: "starting_after", More: "has_more"},
		Source: "https://docs.stripe.com/api/events/list"},
	"github": {Way: ReconcileRedeliver,
		List:      "GET /repos/{owner}/{repo}/hooks/{hook_id}/deliveries, /orgs/{org}/hooks/{hook_id}/deliveries or /app/hook/deliveries (cursor)",
		Redeliver: "POST …/deliveries/{delivery_id}/attempts",
		Source:    "https://docs.github.com/en/webhooks/using-webhooks/handling-failed-webhook-deliveries"},
	"reference":         {Reason: "the reference provider (SPEC.md) documents no event list"},
	"hmac":              {Reason: userDefined},
	"slack":             {Reason: noRecord},
	"standard-webhooks": {Reason: svixSender},
	"clerk":             {Reason: svixSender},
	"shopify":           {Reason: noRecord + " (failed deliveries are visible only in the Partner Dashboard)"},
	"resend":            {Reason: noRecord},
	"gitlab":            {Reason: notYetLog + "a hook's events (GET /projects/:id/hooks/:hook_id/events) and their resend"},
	"bitbucket":         {Reason: noRecord + " (the request history is in the repository's settings only)"},
	"discord":           {Reason: "interactions must be answered within 3 seconds; a late one cannot be answered"},
	"twilio":            {Reason: "status callbacks are not events of a log; the resources' own state is fetched instead"},
	"sendgrid":          {Reason: noRecord},
	"mailgun":           {Reason: notYetLog + "an event list (GET /v3/{domain}/events, kept for days)"},
	"postmark":          {Reason: notYetLog + "message and bounce lists, not a webhook event log"},
	"square":            {Reason: notYetLog + "an event list (POST /v2/events, kept 28 days)"},
	"paddle":            {Reason: notYetLog + "an event list and notification replays (GET /events, POST /notifications/{id}/replay)"},
	"lemonsqueezy":      {Reason: noRecord},
	"zoom":              {Reason: noRecord},
	"twitch":            {Reason: noRecord + " (EventSub lists subscriptions, not messages)"},
	"meta":              {Reason: noRecord},
	"dropbox":           {Reason: "notifications carry no event id; the app reads changes with its own list_folder cursor"},
	"linear":            {Reason: noRecord},
	"intercom":          {Reason: noRecord},
	"hubspot":           {Reason: noRecord},
	"typeform":          {Reason: noRecord},
	"calendly":          {Reason: noRecord},
}
