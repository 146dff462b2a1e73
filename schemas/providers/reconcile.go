package providers

import "fmt"

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
	Events *EventList
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
	userDefined = "an hmac definition is backfilled only from the event list it declares (providers.<name>.reconcile.list)"
)

// reconciles holds each catalogue scheme's reconciliation (Kind.Reconcile;
// `gatehouse providers` prints it). Stripe, Paddle, Square and Mailgun
// (backfill), GitHub and GitLab (redelivery) are implemented by ingest/reconcile; a scheme whose
// provider documents a record gatehouse does not read yet says so and
// why.
var reconciles = map[string]Reconcile{
	"stripe": {Way: ReconcileBackfill,
		List: "GET /v1/events?created[gte]=&created[lte]=&starting_after= (has_more)",
		Events: &EventList{Path: "/v1/events", Items: "data", ID: "id", Time: "created",
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
	"gitlab": {Way: ReconcileRedeliver,
		List: "GET /api/v4/projects/:id/hooks/:hook_id/events or /api/v4/groups/:id/hooks/:hook_id/events " +
			"(the past 7 days, page and X-Next-Page; no time per event: dedupe_window ≥ 192h)",
		Redeliver: "POST …/events/:hook_event_id/resend (five a minute for each hook)",
		Source:    "https://docs.gitlab.com/api/project_webhooks/"},
	"bitbucket": {Reason: noRecord + " (the request history is in the repository's settings only)"},
	"discord":   {Reason: "interactions must be answered within 3 seconds; a late one cannot be answered"},
	"twilio":    {Reason: "status callbacks are not events of a log; the resources' own state is fetched instead"},
	"sendgrid":  {Reason: noRecord},
	"mailgun": {Way: ReconcileBackfill,
		List: "GET /v3/{domain}/events?begin=&end=&ascending=no&limit= (paging.next), api_url ending in /v3/{domain}, api_key api:<key>",
		Events: &EventList{Path: "/events", Items: "items", ID: "id", Time: "timestamp", From: "end", To: "begin",
			Limit: "limit", Next: "paging.next", Wrap: "event-data", Auth: AuthBasic, Query: map[string]string{"ascending": "no"}},
		Source: "https://documentation.mailgun.com/docs/mailgun/api-reference/openapi-final/tag/Events/"},
	"postmark": {Reason: "the API lists messages (GET /messages/outbound) and bounces (GET /bounces), not the webhook events it sent: " +
		"no item is a webhook's body with its id, and the webhook deliveries themselves are not listed"},
	"square": {Way: ReconcileBackfill,
		List: "POST /v2/events {query: {filter: {created_at: {start_at, end_at}}, sort: {field: DEFAULT, order: DESC}}, limit, cursor} (cursor)",
		Events: &EventList{Method: "POST", Path: "/v2/events", Items: "events", ID: "event_id", Time: "created_at",
			From: "query.filter.created_at.start_at", To: "query.filter.created_at.end_at", TimeFormat: "rfc3339",
			Limit: "limit", Cursor: "cursor", Next: "cursor",
			Query: map[string]string{"query.sort.field": "DEFAULT", "query.sort.order": "DESC"}},
		Source: "https://developer.squareup.com/reference/square/events-api/search-events"},
	"paddle": {Way: ReconcileBackfill,
		List: "GET /events?order_by=id[DESC]&per_page=&after= (meta.pagination.has_more)",
		Events: &EventList{Path: "/events", Items: "data", ID: "event_id", Time: "occurred_at", Limit: "per_page",
			Cursor: "after", More: "meta.pagination.has_more", Query: map[string]string{"order_by": "id[DESC]"}},
		Source: "https://developer.paddle.com/api-reference/events/list-events"},
	"lemonsqueezy": {Reason: noRecord},
	"zoom":         {Reason: noRecord},
	"twitch":       {Reason: noRecord + " (EventSub lists subscriptions, not messages)"},
	"meta":         {Reason: noRecord},
	"dropbox":      {Reason: "notifications carry no event id; the app reads changes with its own list_folder cursor"},
	"linear":       {Reason: noRecord},
	"intercom":     {Reason: noRecord},
	"hubspot":      {Reason: noRecord},
	"typeform":     {Reason: noRecord},
	"calendly":     {Reason: noRecord},
}

// EventList declares a provider's list of the events it sent, for
// backfill: the catalogue's (Stripe's GET /v1/events), or one a scheme
// hmac provider declares (providers.<name>.reconcile.list). Each item of
// the list must be the event exactly as its webhook's body carries it, so
// the receiver's fields (event_id, event_type, created_at) read the same
// id from both; paths are dotted paths into the answer and its items.
type EventList struct {
	// Path is the list's path below api_url, called with Method
	// ("/v1/events").
	Path string `yaml:"path"`
	// Items is the path of the array of events in the answer ("data").
	Items string `yaml:"items"`
	// ID is the path of an item's event id ("id").
	ID string `yaml:"id"`
	// Time is the path of an item's creation time, Unix seconds or RFC
	// 3339 ("created"); the list must give the newest first.
	Time string `yaml:"time"`
	// From and To name the query parameters bounding the creation time, in
	// Unix seconds, inclusive ("created[gte]", "created[lte]"); optional:
	// without them the pass stops at the first item older than its window.
	From string `yaml:"from"`
	To   string `yaml:"to"`
	// Limit names the page size parameter, given 100 ("limit"); optional.
	Limit string `yaml:"limit"`
	// Cursor names the parameter that takes the last item's id to ask for
	// the next page ("starting_after"); More is the path of the answer's
	// boolean saying that a next page exists ("has_more").
	Cursor string `yaml:"cursor"`
	More   string `yaml:"more"`
	// Query holds parameters sent as they are with every page, such as
	// the order that puts the newest first ({"order_by": "id[DESC]"},
	// Paddle's); optional.
	Query map[string]string `yaml:"query"`
	// Method is GET (the default) or POST: a POST list (a search, such as
	// Square's POST /v2/events) takes every parameter above in a JSON
	// body instead of the query string, each name a dotted path into it
	// ("query.filter.created_at.start_at"), the page size a number.
	Method string `yaml:"method"`
	// Next, when set, is the path of the answer's cursor for the next page
	// (Square's "cursor"), sent in Cursor; the last page has none, and
	// More is then not read. Without it the cursor is the last item's id.
	Next string `yaml:"next"`
	// TimeFormat is how From and To are given: unix (seconds, the
	// default) or rfc3339.
	TimeFormat string `yaml:"time_format"`
	// Without Cursor, the value at Next is the next page's URL (Mailgun's
	// paging.next), called as it is; it must be on api_url's host. With
	// Next, an empty page ends the list too.
	//
	// Wrap, when set, is the key under which each item is put to make its
	// webhook's body (Mailgun's event-data: the list's items are what the
	// webhook carries under it); optional.
	Wrap string `yaml:"wrap"`
	// Auth is how api_key is sent: bearer (the default) or basic (the key
	// is "user:password", Mailgun's "api:<key>").
	Auth string `yaml:"auth"`
}

// Validate names the first required field of l that is missing, under
// prefix.
func (l *EventList) Validate(prefix string) error {
	more, cursor := l.More, l.Cursor
	if l.Next != "" {
		more = l.Next // the cursor in the answer says whether a page follows
		if cursor == "" {
			cursor = l.Next // the answer gives the next page's URL
		}
	}
	for _, f := range []struct{ key, v string }{{"path", l.Path}, {"items", l.Items}, {"id", l.ID}, {"time", l.Time},
		{"cursor", cursor}, {"more", more}} {
		if f.v == "" {
			return fmt.Errorf("%s.%s: required", prefix, f.key)
		}
	}
	if l.Path[0] != '/' {
		return fmt.Errorf("%s.path: %q must start with /", prefix, l.Path)
	}
	if l.Method != "" && l.Method != "GET" && l.Method != "POST" {
		return fmt.Errorf("%s.method: %q is not GET or POST", prefix, l.Method)
	}
	if l.TimeFormat != "" && l.TimeFormat != "unix" && l.TimeFormat != "rfc3339" {
		return fmt.Errorf("%s.time_format: %q is not unix or rfc3339", prefix, l.TimeFormat)
	}
	if l.Auth != "" && l.Auth != AuthBearer && l.Auth != AuthBasic {
		return fmt.Errorf("%s.auth: %q is not bearer or basic", prefix, l.Auth)
	}
	return nil
}
