package providers

import "github.com/gatehouse/gatehouse/schemas"

// Fetch defaults of the catalogue providers whose REST APIs are not one
// GET per object id: Bitbucket (event keys with a colon and repositories
// named by UUID), Lemon Squeezy (JSON:API), Calendly (absolute object URIs
// in the payload) and Discord (bot tokens). Linear and Slack, whose APIs
// are not REST, are in fetchcat_rpc.go; moreAPIs in fetchcat.go joins them.

// bitbucketRules read pull requests, issues and commits from Bitbucket
// Cloud's REST API 2.0 (api_url https://api.bitbucket.org/2.0). The
// repository is named by its workspace's and its own UUID ("{…}", which
// the API takes wherever a slug goes), so a renamed repository still
// resolves. Pull requests and issues carry updated_on; a commit never
// changes, its version is its date.
func bitbucketRules() []Fetch {
	const repo = "/repositories/{data.repository.workspace.uuid}/{data.repository.uuid}"
	return []Fetch{
		{Types: types("pullrequest:created", "pullrequest:updated", "pullrequest:approved", "pullrequest:unapproved",
			"pullrequest:fulfilled", "pullrequest:rejected", "pullrequest:changes_request_created",
			"pullrequest:changes_request_removed", "pullrequest:comment_created", "pullrequest:comment_updated",
			"pullrequest:comment_deleted", "pullrequest:comment_resolved", "pullrequest:comment_reopened"),
			Object: "pullrequest", Key: "pullrequest/{data.repository.uuid}/{data.pullrequest.id}",
			URL: repo + "/pullrequests/{data.pullrequest.id}", Version: versions("updated_on")},
		{Types: types("issue:created", "issue:updated", "issue:comment_created"), Object: "issue",
			Key: "issue/{data.repository.uuid}/{data.issue.id}", URL: repo + "/issues/{data.issue.id}", Version: versions("updated_on")},
		{Types: types("repo:push"), Object: "commit", Key: "commit/{data.repository.uuid}/{data.push.changes.0.new.target.hash}",
			URL: repo + "/commit/{data.push.changes.0.new.target.hash}", Version: versions("date")},
		{Types: types("repo:commit_comment_created"), Object: "commit", Key: "commit/{data.repository.uuid}/{data.commit.hash}",
			URL: repo + "/commit/{data.commit.hash}", Version: versions("date")},
		skip("no default rule for this event key (repo:fork, repo:updated, repo:commit_status_*, a push that only deletes a branch…): " +
			"add a fetch rule, forward it, or read the topic"),
	}
}

// lemonSqueezyRules read the object the event's data names (JSON:API:
// data.type and data.id) from https://api.lemonsqueezy.com/v1; the answer's
// data is the resource, its attributes.updated_at the version.
func lemonSqueezyRules() []Fetch {
	var out []Fetch
	for _, o := range []struct{ typ, object string }{
		{"orders", "order"}, {"subscriptions", "subscription"},
		{"subscription-invoices", "subscription_invoice"}, {"license-keys", "license_key"},
	} {
		out = append(out, Fetch{Types: types("*"), When: schemas.Conditions{"data.data.type": schemas.Equals(o.typ)}, Object: o.object,
			Key: o.typ + "/{data.data.id}", URL: "/v1/" + o.typ + "/{data.data.id}", Answer: "data",
			Version: versions("attributes.updated_at")})
	}
	return append(out, skip("the event's data is none of orders, subscriptions, subscription-invoices, license-keys "+
		"(affiliates, customers…): add a fetch rule, forward it, or read the topic"))
}

// calendlyRules read the object the payload's uri names; Calendly's
// webhooks carry the absolute URI (https://api.calendly.com/…), which is
// requested only when it is an api_url address.
func calendlyRules() []Fetch {
	return []Fetch{
		{Types: types("invitee.created", "invitee.canceled"), Object: "invitee", URLFrom: "data.payload.uri",
			Answer: "resource", Version: versions("updated_at")},
		{Types: types("routing_form_submission.created"), Object: "routing_form_submission", URLFrom: "data.payload.uri",
			Answer: "resource", Version: versions("updated_at")},
		skip("no default rule for this event (invitee_no_show.*: the payload's uri is not the no-show's): " +
			"add a fetch rule, forward it, or read the topic"),
	}
}

// discordRules read, with a bot token, what a Webhook Event names from
// the REST API (api_url https://discord.com/api/v10). Discord's objects
// carry no version: the fetch time is the version.
func discordRules() []Fetch {
	fetched := versions(VersionFetched)
	return []Fetch{
		{Types: types("event.ENTITLEMENT_CREATE", "event.ENTITLEMENT_UPDATE"), Object: "entitlement",
			Key: "entitlement/{data.event.data.id}", URL: "/applications/{data.application_id}/entitlements/{data.event.data.id}", Version: fetched},
		{Types: types("event.APPLICATION_AUTHORIZED"), When: schemas.Conditions{"data.event.data.integration_type": schemas.Equals("0")},
			Object: "guild", Key: "guild/{data.event.data.guild.id}", URL: "/guilds/{data.event.data.guild.id}", Version: fetched},
		{Types: types("event.APPLICATION_AUTHORIZED", "event.APPLICATION_DEAUTHORIZED"), Object: "user",
			Key: "user/{data.event.data.user.id}", URL: "/users/{data.event.data.user.id}", Version: fetched},
		{Types: types("interaction.*"), Skip: "an interaction is a command, completed through its token within 15 minutes: " +
			"forward it to the service that answers it"},
		skip("no default rule for this event (ENTITLEMENT_DELETE, QUEST_USER_ENROLLMENT, LOBBY_MESSAGE_*, GAME_DIRECT_MESSAGE_*: " +
			"the event carries the object and a bot cannot read lobby or game messages back): forward it or read the topic"),
	}
}
