package providers

// Fetch defaults of the catalogue providers whose APIs are not REST:
// Linear (GraphQL) and Slack (Web API methods answering 200 with
// "ok": false). The REST ones that are not one GET per object id are in
// fetchcat_rest.go.

// Linear's GraphQL documents: one object by id, with updatedAt.
const (
	linearIssue = `query Issue($id: String!) { issue(id: $id) { id identifier title description priority estimate dueDate url ` +
		`createdAt updatedAt completedAt canceledAt archivedAt state { id name type } team { id key } assignee { id name } } }`
	linearComment = `query Comment($id: String!) { comment(id: $id) { id body url createdAt updatedAt editedAt archivedAt ` +
		`issue { id identifier } user { id name } } }`
	linearProject = `query Project($id: String!) { project(id: $id) { id name description url progress startDate targetDate ` +
		`createdAt updatedAt completedAt canceledAt archivedAt } }`
)

// linearRules query Linear's GraphQL API (api_url https://api.linear.app,
// POST /graphql) for the issue, comment or project an event is about.
// Linear answers a rate-limited query with the error code RATELIMITED: it
// is retried; any other error (an unknown id among them) is permanent.
func linearRules() []Fetch {
	gql := func(object, doc string, typs ...string) Fetch {
		return Fetch{Types: typs, Object: object, Key: object + "/{data.data.id}", URL: "/graphql", GraphQL: doc,
			Variables: map[string]string{"id": "{data.data.id}"}, Answer: "data." + object, Version: versions("updatedAt"),
			AnswerError: "errors.0.extensions.code", RetryErrors: []string{"RATELIMITED"}}
	}
	return []Fetch{
		gql("issue", linearIssue, "Issue.create", "Issue.update"),
		gql("comment", linearComment, "Comment.create", "Comment.update"),
		gql("project", linearProject, "Project.create", "Project.update"),
		skip("no default rule for this event (a remove carries the object's last state; IssueLabel, Reaction, Cycle…): " +
			"add a fetch rule, forward it, or read the topic"),
	}
}

// slackRules read the conversation or user an Events API event names with
// the Web API (api_url https://slack.com/api, a bot token): a 200 answer
// with "ok": false carries the error in "error". Conversations and users
// carry "updated"; the fetch time stands in when it is absent.
func slackRules() []Fetch {
	retry := []string{"internal_error", "fatal_error", "service_unavailable", "request_timeout", "ratelimited"}
	conv := func(id string, typs ...string) Fetch {
		return Fetch{Types: typs, Object: "channel", Key: "{data.team_id}/channel/{" + id + "}", URL: "/conversations.info",
			Query: map[string]string{"channel": "{" + id + "}"}, Answer: "channel", Version: versions("updated", VersionFetched),
			AnswerError: "error", RetryErrors: retry}
	}
	return []Fetch{
		conv("data.event.channel.id", "channel_created", "channel_rename", "group_rename"),
		conv("data.event.channel", "channel_archive", "channel_unarchive", "group_archive", "group_unarchive",
			"member_joined_channel", "member_left_channel", "channel_shared", "channel_unshared"),
		{Types: types("user_change", "team_join", "user_profile_changed"), Object: "user", Key: "{data.team_id}/user/{data.event.user.id}",
			URL: "/users.info", Query: map[string]string{"user": "{data.event.user.id}"}, Answer: "user",
			Version: versions("updated", VersionFetched), AnswerError: "error", RetryErrors: retry},
		skip("no default rule for this event: a message or reaction event carries the message (conversations.history allows " +
			"apps outside the Marketplace one request a minute), deletions name nothing left to read; forward it or read the topic"),
	}
}
