package providers

import (
	"sort"

	"github.com/gatehouse/gatehouse/schemas"
)

// Shorthands for the fetch defaults below.
func types(t ...string) []string    { return t }
func versions(v ...string) []string { return v }
func skip(reason string) Fetch      { return Fetch{Types: types("*"), Skip: reason} }

// stripeCollections are the Stripe object types gatehouse projects and
// their API collection (https://docs.stripe.com/api).
var stripeCollections = map[string]string{
	"payment_intent":   "payment_intents",
	"charge":           "charges",
	"invoice":          "invoices",
	"customer":         "customers",
	"subscription":     "subscriptions",
	"refund":           "refunds",
	"checkout.session": "checkout/sessions",
}

// stripeRules reads the object an event's data.object.object names (so
// customer.subscription.updated reads the subscription), else the object
// of the type's prefix. Stripe objects carry no version: the version is
// the fetch time.
func stripeRules() []Fetch {
	objs := make([]string, 0, len(stripeCollections))
	for o := range stripeCollections {
		objs = append(objs, o)
	}
	sort.Strings(objs)
	var out []Fetch
	for _, o := range objs {
		out = append(out, Fetch{Types: types("*"), When: schemas.Conditions{"data.object.object": schemas.Equals(o)}, Object: o,
			URL: "/v1/" + stripeCollections[o] + "/{data.object.id}", Version: versions(VersionFetched)})
	}
	for _, o := range objs {
		out = append(out, Fetch{Types: types(o + ".*"), Object: o,
			URL: "/v1/" + stripeCollections[o] + "/{data.object.id}", Version: versions(VersionFetched)})
	}
	return append(out, skip("the event's data.object is none of "+joinKeys(stripeCollections)))
}

func joinKeys(m map[string]string) string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	s := ""
	for i, k := range ks {
		if i > 0 {
			s += ", "
		}
		s += k
	}
	return s
}

// github reads the object of each event family from the REST API; the key
// is the object's node_id (global across types). Check runs and releases
// carry no updated_at: their version is the fetch time.
func githubRules() []Fetch {
	const repo = "/repos/{data.repository.owner.login}/{data.repository.name}"
	return []Fetch{
		{Types: types("issues.*", "issue_comment.*"), Object: "issue", Key: "{data.issue.node_id}",
			URL: repo + "/issues/{data.issue.number}", Version: versions("updated_at")},
		{Types: types("pull_request.*", "pull_request_review.*", "pull_request_review_comment.*"), Object: "pull_request",
			Key: "{data.pull_request.node_id}", URL: repo + "/pulls/{data.pull_request.number}", Version: versions("updated_at")},
		{Types: types("check_run.*"), Object: "check_run", Key: "{data.check_run.node_id}",
			URL: repo + "/check-runs/{data.check_run.id}", Version: versions(VersionFetched)},
		{Types: types("release.*"), Object: "release", Key: "{data.release.node_id}",
			URL: repo + "/releases/{data.release.id}", Version: versions(VersionFetched)},
		skip("no default rule for this event (push, ping, workflow_run…): add a fetch rule, forward it, or read the topic"),
	}
}

// apis are the catalogue's fetch defaults by scheme. Each cites the API
// reference of its URLs and version fields.
func apis() map[string]API {
	return map[string]API{
		"reference": {Reference: "SPEC.md ({api_url}/v1/<collection>/<id>)", Fetch: []Fetch{
			{Types: types("payment.*"), Object: "payment", URL: "/v1/payments/{data.payment_id}", Version: versions("version", "updated_at")},
			{Types: types("invoice.*"), Object: "invoice", URL: "/v1/invoices/{data.invoice_id}", Version: versions("version", "updated_at")},
			skip("the reference API has objects for payment.* and invoice.* only"),
		}},
		"stripe": {Reference: "https://docs.stripe.com/api", VersionHeader: "Stripe-Version", Fetch: stripeRules()},
		"github": {Reference: "https://docs.github.com/en/rest (issues, pulls, checks/runs, releases)",
			VersionHeader: "X-GitHub-Api-Version", Fetch: githubRules()},
		"shopify": {Reference: "https://shopify.dev/docs/api/admin-rest (order, product, customer: GET …/<id>.json, updated_at)",
			Auth: AuthHeader, AuthHeader: "X-Shopify-Access-Token", Fetch: []Fetch{
				{Types: types("orders.*"), Object: "order", Key: "{data.admin_graphql_api_id}", Answer: "order",
					URL: "/admin/api/{api_version}/orders/{data.id}.json", Version: versions("updated_at")},
				{Types: types("products.*"), Object: "product", Key: "{data.admin_graphql_api_id}", Answer: "product",
					URL: "/admin/api/{api_version}/products/{data.id}.json", Version: versions("updated_at")},
				{Types: types("customers.*"), Object: "customer", Key: "{data.admin_graphql_api_id}", Answer: "customer",
					URL: "/admin/api/{api_version}/customers/{data.id}.json", Version: versions("updated_at")},
				skip("no default rule for this topic: add a fetch rule, forward it, or read the topic"),
			}},
		"square": {Reference: "https://developer.squareup.com/reference/square (payments-api, orders-api, refunds-api)",
			VersionHeader: "Square-Version", Fetch: []Fetch{
				{Types: types("payment.*"), Object: "payment", Answer: "payment", URL: "/v2/payments/{data.data.id}",
					Version: versions("updated_at")},
				{Types: types("order.*"), Object: "order", Answer: "order", URL: "/v2/orders/{data.data.id}",
					Version: versions("version", "updated_at")},
				{Types: types("refund.*"), Object: "refund", Answer: "refund", URL: "/v2/refunds/{data.data.id}",
					Version: versions("updated_at")},
				skip("no default rule for this event: add a fetch rule, forward it, or read the topic"),
			}},
		"paddle": {Reference: "https://developer.paddle.com/api-reference (transactions, subscriptions, customers: data.updated_at)",
			VersionHeader: "Paddle-Version", Fetch: []Fetch{
				{Types: types("transaction.*"), Object: "transaction", Answer: "data", URL: "/transactions/{data.data.id}",
					Version: versions("updated_at")},
				{Types: types("subscription.*"), Object: "subscription", Answer: "data", URL: "/subscriptions/{data.data.id}",
					Version: versions("updated_at")},
				{Types: types("customer.*"), Object: "customer", Answer: "data", URL: "/customers/{data.data.id}",
					Version: versions("updated_at")},
				skip("no default rule for this event: add a fetch rule, forward it, or read the topic"),
			}},
		"hubspot": {Reference: "https://developers.hubspot.com/docs/api/crm/contacts and …/crm/deals (GET /crm/v3/objects/<type>/<id>, updatedAt)",
			Fetch: []Fetch{
				{Types: types("contact.*"), Object: "contact", Key: "contact/{data.objectId}",
					URL: "/crm/v3/objects/contacts/{data.objectId}", Version: versions("updatedAt")},
				{Types: types("deal.*"), Object: "deal", Key: "deal/{data.objectId}",
					URL: "/crm/v3/objects/deals/{data.objectId}", Version: versions("updatedAt")},
				{Types: types("company.*"), Object: "company", Key: "company/{data.objectId}",
					URL: "/crm/v3/objects/companies/{data.objectId}", Version: versions("updatedAt")},
				skip("no default rule for this subscription type: add a fetch rule, forward it, or read the topic"),
			}},
		"twilio": {Reference: "https://www.twilio.com/docs/messaging/api/message-resource and …/voice/api/call-resource (date_updated, RFC 2822)",
			Auth: AuthBasic, Fetch: []Fetch{
				{Types: types("message.*"), Object: "message",
					URL: "/2010-04-01/Accounts/{data.AccountSid}/Messages/{data.MessageSid}.json", Version: versions("date_updated")},
				{Types: types("call.*"), Object: "call",
					URL: "/2010-04-01/Accounts/{data.AccountSid}/Calls/{data.CallSid}.json", Version: versions("date_updated")},
				skip("a request that is neither a message nor a call status callback names no object"),
			}},
		"gitlab": {Reference: "https://docs.gitlab.com/api/issues/ and …/api/merge_requests/ (GET /projects/:id/issues/:iid, updated_at)",
			Auth: AuthHeader, AuthHeader: "PRIVATE-TOKEN", Fetch: []Fetch{
				{Types: types("issue.*", "work_item.*"), Object: "issue", Key: "issue/{data.object_attributes.id}",
					URL: "/api/v4/projects/{data.project.id}/issues/{data.object_attributes.iid}", Version: versions("updated_at")},
				{Types: types("merge_request.*"), Object: "merge_request", Key: "merge_request/{data.object_attributes.id}",
					URL: "/api/v4/projects/{data.project.id}/merge_requests/{data.object_attributes.iid}", Version: versions("updated_at")},
				skip("no default rule for this event (push, pipeline, note…): add a fetch rule, forward it, or read the topic"),
			}},
		"intercom": {Reference: "https://developers.intercom.com/docs/references/rest-api/api.intercom.io/conversations and …/contacts (updated_at, Unix seconds)",
			VersionHeader: "Intercom-Version", Fetch: []Fetch{
				{Types: types("conversation.*"), Object: "conversation", Key: "conversation/{data.data.item.id}",
					URL: "/conversations/{data.data.item.id}", Version: versions("updated_at")},
				{Types: types("contact.*"), Object: "contact", Key: "contact/{data.data.item.id}",
					URL: "/contacts/{data.data.item.id}", Version: versions("updated_at")},
				skip("no default rule for this topic: add a fetch rule, forward it, or read the topic"),
			}},
		"clerk": {Reference: "https://clerk.com/docs/reference/backend-api (GET /v1/users/{user_id}, /v1/organizations/{id}: updated_at, Unix ms)",
			Fetch: []Fetch{
				{Types: types("user.created", "user.updated"), Object: "user", URL: "/v1/users/{data.id}", Version: versions("updated_at")},
				{Types: types("organization.created", "organization.updated"), Object: "organization",
					URL: "/v1/organizations/{data.id}", Version: versions("updated_at")},
				skip("deletions and the other events name no object the API still returns: forward them or read the topic"),
			}},
		"resend": {Reference: "https://resend.com/docs/api-reference/emails/retrieve-email (no version field: the fetch time)",
			Fetch: []Fetch{
				{Types: types("email.*"), Object: "email", URL: "/emails/{data.email_id}", Version: versions(VersionFetched)},
				skip("no default rule for this event (contact.*, domain.*): add a fetch rule, forward it, or read the topic"),
			}},
		"zoom": {Reference: "https://developers.zoom.us/docs/api/meetings/#tag/meetings/GET/meetings/{meetingId} (no version field: the fetch time)",
			Fetch: []Fetch{
				{Types: types("meeting.*"), Object: "meeting", Key: "meeting/{data.payload.object.id}",
					URL: "/v2/meetings/{data.payload.object.id}", Version: versions(VersionFetched)},
				skip("no default rule for this event: add a fetch rule, forward it, or read the topic"),
			}},
		"typeform": {Reference: "https://www.typeform.com/developers/responses/reference/retrieve-responses/ (included_response_ids; submitted_at)",
			Fetch: []Fetch{
				{Types: types("form_response"), Object: "response", Key: "{data.form_response.token}",
					URL: "/forms/{data.form_response.form_id}/responses", Query: map[string]string{"included_response_ids": "{data.form_response.token}"},
					Answer: "items.0", Version: versions("submitted_at")},
				skip("no default rule for this event: add a fetch rule, forward it, or read the topic"),
			}},
		"postmark": {Reference: "https://postmarkapp.com/developer/api/messages-api#outbound-message-details (no version field: the fetch time)",
			Auth: AuthHeader, AuthHeader: "X-Postmark-Server-Token", Fetch: []Fetch{
				{Types: types("Delivery", "Bounce", "SpamComplaint", "Open", "Click", "SubscriptionChange"), Object: "message",
					URL: "/messages/outbound/{data.MessageID}/details", Version: versions(VersionFetched)},
				skip("no default rule for this record type: add a fetch rule, forward it, or read the topic"),
			}},
		"mailgun": {EventOnly: "Mailgun's events are the record of a message's delivery (its Events API lists the same events); " +
			"forward them or read the topic"},
		"dropbox": {EventOnly: "a notification only names accounts: what changed is read with a cursor (files/list_folder/continue), " +
			"state of your own, not an object fetch; forward it to the service that keeps the cursor"},
		"sendgrid": {EventOnly: "SendGrid's Event Webhook is event-only: each event (delivered, open, bounce…) is the record " +
			"itself and no API returns it by id; forward the events or read the topic"},
	}
}

// moreAPIs are the API settings of the providers of fetchcat_rest.go and
// fetchcat_rpc.go; the catalogue adds them to apis.
func moreAPIs() map[string]API {
	return map[string]API{
		"bitbucket": {Reference: "https://developer.atlassian.com/cloud/bitbucket/rest/api-group-pullrequests/ (…/api-group-issue-tracker/, " +
			"…/api-group-commits/: GET /repositories/{workspace}/{repo_slug}/pullrequests/{id}, issues/{id}, commit/{hash}; updated_on, date)",
			Fetch: bitbucketRules()},
		"lemonsqueezy": {Reference: "https://docs.lemonsqueezy.com/api (orders, subscriptions, subscription-invoices, license-keys: " +
			"GET /v1/<type>/<id>, data.attributes.updated_at)", Accept: "application/vnd.api+json", Fetch: lemonSqueezyRules()},
		"calendly": {Reference: "https://developer.calendly.com/api-docs (Get Event Invitee, Get Routing Form Submission: " +
			"resource.updated_at; the webhook's payload.uri is the object's URI)", Fetch: calendlyRules()},
		"linear": {Reference: "https://linear.app/developers/graphql (issue, comment, project queries: updatedAt; " +
			"https://linear.app/developers/rate-limiting)", Auth: AuthHeader, AuthHeader: "Authorization", Fetch: linearRules()},
		"slack": {Reference: "https://docs.slack.dev/reference/methods/conversations.info and …/methods/users.info " +
			"(channel.updated, user.updated)", Fetch: slackRules()},
		"discord": {Reference: "https://discord.com/developers/docs/resources/entitlement#get-entitlement, …/resources/guild#get-guild, " +
			"…/resources/user#get-user (no version field: the fetch time)", Auth: AuthBot, Fetch: discordRules()},
	}
}
