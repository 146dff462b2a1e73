package consumers

import "net/http"

// restProviderCases are the catalogue's other providers whose object API
// is one REST GET per object id (TestProviderFetchRulesAgainstDocumentedExamples
// runs them; those whose API is not are apiProviderCases): each object in
// the shape of its API reference's example answer, abridged.
func restProviderCases() map[string]providerCase {
	const whsec = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	gitlab := func(id, kind, action string, iid, gid int) delivery {
		return delivery{id: id, header: http.Header{"Idempotency-Key": {id}},
			body: `{"object_kind":"` + kind + `","project":{"id":5,"path_with_namespace":"gitlabhq/gitlab-test"},"object_attributes":{"id":` +
				itoa(int32(gid)) + `,"iid":` + itoa(int32(iid)) + `,"action":"` + action + `","updated_at":"2013-12-03T17:23:34Z"}}`}
	}
	return map[string]providerCase{
		"gitlab": {
			yaml: "    api_url: %s\n    api_key: glpat-test\n",
			auth: func(r *http.Request) bool { return r.Header.Get("PRIVATE-TOKEN") == "glpat-test" },
			objects: map[string]string{
				"/api/v4/projects/5/issues/23":        `{"id":301,"iid":23,"project_id":5,"title":"Consequatur vero maxime deserunt laboriosam est voluptas dolorem.","state":"opened","created_at":"2016-01-04T15:31:51.081Z","updated_at":"2016-01-04T15:31:51.081Z"}`,
				"/api/v4/projects/5/merge_requests/1": `{"id":1001,"iid":1,"project_id":5,"title":"test1","state":"merged","created_at":"2017-04-29T08:46:00Z","updated_at":"2017-04-29T08:46:00Z"}`,
			},
			sends: []delivery{gitlab("gl-issue", "issue", "open", 23, 301), gitlab("gl-mr", "merge_request", "merge", 1, 1001), gitlab("gl-gone", "issue", "update", 404, 404)},
			want: map[string]wantObject{
				"issue/301":          {"issue", "2016-01-04T15:31:51.081Z", `"state": "opened"`},
				"merge_request/1001": {"merge_request", "2017-04-29T08:46:00Z", `"state": "merged"`},
			},
			dead: 1,
		},
		"intercom": {
			yaml: "    api_url: %s\n    api_key: icm-test\n    api_version: \"2.11\"\n",
			auth: func(r *http.Request) bool {
				return r.Header.Get("Authorization") == "Bearer icm-test" && r.Header.Get("Intercom-Version") == "2.11"
			},
			objects: map[string]string{
				"/conversations/123":                 `{"type":"conversation","id":"123","created_at":1539897198,"updated_at":1539897200,"state":"open"}`,
				"/contacts/6329bd9ffe4e2e91dac76188": `{"type":"contact","id":"6329bd9ffe4e2e91dac76188","role":"user","email":"joe@example.com","created_at":1663679903,"updated_at":1663679905}`,
			},
			sends: []delivery{
				{id: "notif_1", body: `{"type":"notification_event","id":"notif_1","topic":"conversation.user.replied","created_at":1539897201,"data":{"item":{"type":"conversation","id":"123"}}}`},
				{id: "notif_2", body: `{"type":"notification_event","id":"notif_2","topic":"contact.user.updated","created_at":1663679906,"data":{"item":{"type":"contact","id":"6329bd9ffe4e2e91dac76188"}}}`},
				{id: "notif_3", body: `{"type":"notification_event","id":"notif_3","topic":"conversation.admin.closed","created_at":1539897201,"data":{"item":{"type":"conversation","id":"missing"}}}`},
			},
			want: map[string]wantObject{
				"conversation/123":                 {"conversation", "1539897200", `"state": "open"`},
				"contact/6329bd9ffe4e2e91dac76188": {"contact", "1663679905", `joe@example.com`},
			},
			dead: 1,
		},
		"clerk": {
			secret: whsec,
			yaml:   "    api_url: %s\n    api_key: sk_test_clerk\n",
			auth:   bearer("sk_test_clerk"),
			objects: map[string]string{
				"/v1/users/user_29w83sxmDNGwOuEthce5gg56FcC": `{"id":"user_29w83sxmDNGwOuEthce5gg56FcC","object":"user","first_name":"Example","created_at":1654012591514,"updated_at":1654012591835}`,
			},
			sends: []delivery{
				{id: "msg_clerk_1", body: `{"data":{"id":"user_29w83sxmDNGwOuEthce5gg56FcC","object":"user","first_name":"from the webhook"},"object":"event","type":"user.updated","timestamp":1654012591835}`},
				{id: "msg_clerk_2", body: `{"data":{"id":"user_missing","object":"user"},"object":"event","type":"user.updated","timestamp":1654012591835}`},
			},
			want: map[string]wantObject{"user_29w83sxmDNGwOuEthce5gg56FcC": {"user", "1654012591835", `"first_name": "Example"`}},
			dead: 1,
		},
		"resend": {
			secret: whsec,
			yaml:   "    api_url: %s\n    api_key: re_test\n",
			auth:   bearer("re_test"),
			objects: map[string]string{
				"/emails/4ef9a417-02e9-4d39-ad75-9611e0fcc33c": `{"object":"email","id":"4ef9a417-02e9-4d39-ad75-9611e0fcc33c","to":["delivered@resend.dev"],"from":"Acme <onboarding@resend.dev>","created_at":"2023-04-03 22:13:42.674981+00","subject":"Hello World","last_event":"delivered"}`,
			},
			sends: []delivery{
				{id: "msg_re_1", body: `{"type":"email.delivered","created_at":"2023-04-03T22:13:45.000Z","data":{"email_id":"4ef9a417-02e9-4d39-ad75-9611e0fcc33c","created_at":"2023-04-03T22:13:42.674981Z"}}`},
				{id: "msg_re_2", body: `{"type":"email.bounced","created_at":"2023-04-03T22:13:45.000Z","data":{"email_id":"moved-away"}}`},
			},
			want: map[string]wantObject{"4ef9a417-02e9-4d39-ad75-9611e0fcc33c": {"email", "fetched", `"last_event": "delivered"`}},
			dead: 1,
		},
		"zoom": {
			yaml: "    api_url: %s\n    api_key: zoom-oauth-token\n",
			auth: bearer("zoom-oauth-token"),
			objects: map[string]string{
				"/v2/meetings/1234567890": `{"id":1234567890,"uuid":"4444AAAiAAAAAiAiAiiAii==","topic":"My Meeting","status":"started","start_time":"2019-07-15T23:24:52Z"}`,
			},
			sends: []delivery{
				{id: "zoom-1", body: `{"event":"meeting.started","event_ts":1626230691572,"payload":{"account_id":"AAAAAABBBB","object":{"id":"1234567890","uuid":"4444AAAiAAAAAiAiAiiAii==","topic":"My Meeting"}}}`},
				{id: "zoom-2", body: `{"event":"meeting.ended","event_ts":1626230691573,"payload":{"account_id":"AAAAAABBBB","object":{"id":"999","uuid":"gone=="}}}`},
			},
			want: map[string]wantObject{"meeting/1234567890": {"meeting", "fetched", `"status": "started"`}},
			dead: 1,
		},
		"typeform": {
			yaml: "    api_url: %s\n    api_key: tfp_test\n",
			auth: bearer("tfp_test"),
			objects: map[string]string{
				"/forms/lT4Z3j/responses": `{"total_items":1,"page_count":1,"items":[{"landing_id":"a3a12ec67a1365927098a606107fac15","token":"a3a12ec67a1365927098a606107fac15","response_id":"a3a12ec67a1365927098a606107fac15","landed_at":"2018-01-18T18:07:02Z","submitted_at":"2018-01-18T18:17:02Z","answers":[{"type":"text","text":"Lorem ipsum"}]}]}`,
			},
			sends: []delivery{
				{id: "LtWXD3crgy", body: `{"event_id":"LtWXD3crgy","event_type":"form_response","form_response":{"form_id":"lT4Z3j","token":"a3a12ec67a1365927098a606107fac15","submitted_at":"2018-01-18T18:17:02Z"}}`},
				{id: "LtWXD3crgz", body: `{"event_id":"LtWXD3crgz","event_type":"form_response","form_response":{"form_id":"missing","token":"b1","submitted_at":"2018-01-18T18:17:03Z"}}`},
			},
			want: map[string]wantObject{"a3a12ec67a1365927098a606107fac15": {"response", "2018-01-18T18:17:02Z", `Lorem ipsum`}},
			dead: 1,
		},
		"postmark": {
			secret: "user:pass",
			yaml:   "    api_url: %s\n    api_key: server-token\n",
			auth:   func(r *http.Request) bool { return r.Header.Get("X-Postmark-Server-Token") == "server-token" },
			objects: map[string]string{
				"/messages/outbound/883953f4-6105-42a2-a16a-77a8eac79483/details": `{"MessageID":"883953f4-6105-42a2-a16a-77a8eac79483","Status":"Sent","Subject":"Test email","Recipients":["john@example.com"],"MessageEvents":[{"Type":"Delivered"}]}`,
			},
			sends: []delivery{
				{id: "pm-1", body: `{"RecordType":"Delivery","MessageID":"883953f4-6105-42a2-a16a-77a8eac79483","Recipient":"john@example.com","DeliveredAt":"2019-11-05T16:33:54.9070259Z"}`},
				{id: "pm-2", body: `{"RecordType":"Bounce","MessageID":"00000000-0000-0000-0000-000000000000","BouncedAt":"2019-11-05T16:33:54Z"}`},
			},
			want: map[string]wantObject{"883953f4-6105-42a2-a16a-77a8eac79483": {"message", "fetched", `"Status": "Sent"`}},
			dead: 1,
		},
	}
}
