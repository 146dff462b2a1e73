package config

import (
	"strings"
	"testing"
)

// providers.<name>.reconcile: enabled needs a scheme the catalogue can
// reconcile (or a declared list), an API, and for GitHub and GitLab the
// hook (for GitLab a dedupe window covering its 7 days of events); a
// declared list needs its fields and, for an hmac definition, an event id
// read from the body.
func TestReconcileSettingsValidated(t *testing.T) {
	base := "providers:\n  p:\n    secrets: [{id: s1, value: x}]\n    api_url: https://api.example.com\n    api_key: k\n"
	list := "      list: {path: /events, items: data, id: id, time: created, cursor: after, more: has_more}\n"
	hmac := "    hmac: {algorithm: sha256, header: X-Sig, encoding: hex, content: \"{body}\"}\n    event_type: [{path: type}]\n"
	for _, tc := range []struct{ name, yaml, want string }{
		{"stripe", base + "    scheme: stripe\n    reconcile: {enabled: true}\n", ""},
		{"no api", "providers:\n  p:\n    scheme: stripe\n    secrets: [{id: s1, value: x}]\n    reconcile: {enabled: true}\n", "set api_url and api_key"},
		{"shopify", base + "    scheme: shopify\n    reconcile: {enabled: true}\n", "cannot be reconciled"},
		{"github no hook", base + "    scheme: github\n    reconcile: {enabled: true}\n", "reconcile.hook"},
		{"github repo", base + "    scheme: github\n    reconcile: {enabled: true, hook: repository, owner: o, repo: r}\n", "needs owner, repo and hook_id"},
		{"github app", base + "    scheme: github\n    reconcile: {enabled: true, hook: app}\n", ""},
		{"github list", base + "    scheme: github\n    reconcile:\n      enabled: true\n      hook: app\n" + list, "reconciled by redelivery"},
		{"hmac list", base + "    scheme: hmac\n" + hmac + "    event_id: [{path: id}]\n    reconcile:\n      enabled: true\n" + list, ""},
		{"hmac header id", base + "    scheme: hmac\n" + hmac + "    event_id: [{header: X-Id}]\n    reconcile:\n      enabled: true\n" + list, "event_id must be read from the body"},
		{"hmac no list", base + "    scheme: hmac\n" + hmac + "    event_id: [{path: id}]\n    reconcile: {enabled: true}\n", "cannot be reconciled"},
		{"gitlab no hook", base + "    scheme: gitlab\n    dedupe_window: 192h\n    reconcile: {enabled: true}\n", "reconcile.hook"},
		{"gitlab github hook", base + "    scheme: gitlab\n    dedupe_window: 192h\n    reconcile: {enabled: true, hook: repository, owner: o, repo: r, hook_id: 1}\n", "is not project or group"},
		{"gitlab project no id", base + "    scheme: gitlab\n    dedupe_window: 192h\n    reconcile: {enabled: true, hook: project, project: g/p}\n", "needs project and hook_id"},
		{"gitlab group no group", base + "    scheme: gitlab\n    dedupe_window: 192h\n    reconcile: {enabled: true, hook: group, hook_id: 3}\n", "needs group and hook_id"},
		{"gitlab project", base + "    scheme: gitlab\n    dedupe_window: 192h\n    reconcile: {enabled: true, hook: project, project: g/p, hook_id: 3}\n", ""},
		{"gitlab group", base + "    scheme: gitlab\n    dedupe_window: 200h\n    reconcile: {enabled: true, hook: group, group: \"42\", hook_id: 3}\n", ""},
		{"gitlab short dedupe window", base + "    scheme: gitlab\n    dedupe_window: 168h\n    reconcile: {enabled: true, hook: project, project: g/p, hook_id: 3}\n", "providers.p.dedupe_window: 168h0m0s is shorter than 192h0m0s"},
		{"gitlab default dedupe window", base + "    scheme: gitlab\n    reconcile: {enabled: true, hook: project, project: g/p, hook_id: 3}\n", "providers.p.dedupe_window"},
		{"gitlab short window, off", base + "    scheme: gitlab\n    dedupe_window: 168h\n", ""},
		{"github gitlab hook", base + "    scheme: github\n    reconcile: {enabled: true, hook: project, project: g/p, hook_id: 3}\n", "is not repository, organization or app"},
		{"list incomplete", base + "    scheme: stripe\n    reconcile:\n      list: {path: /events}\n", "reconcile.list.items: required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.yaml), func(string) string { return "" })
			if tc.want == "" && err != nil {
				t.Fatalf("refused: %v", err)
			}
			if tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}
