package settings

import (
	"net/url"
	"strconv"
	"time"

	"github.com/gatehouse/gatehouse/schemas/providers"
)

// GitHub hook kinds of Reconcile.Hook.
const (
	HookRepository   = "repository"
	HookOrganization = "organization"
	HookApp          = "app"
)

// GitLab hook kinds of Reconcile.Hook.
const (
	HookProject = "project"
	HookGroup   = "group"
)

// GitLabHistory is how long GitLab keeps a hook's events
// (GET …/hooks/:hook_id/events lists those of the past 7 days), and
// GitLabDedupeWindow the dedupe window a reconciled gitlab provider needs:
// GitLab's events carry no time, so a pass cannot bound what it resends
// by its window, and the dedupe window must cover every event GitLab may
// list, with a day's margin, for a resent event never to be stored twice.
const (
	GitLabHistory      = 7 * 24 * time.Hour
	GitLabDedupeWindow = GitLabHistory + 24*time.Hour
)

// Reconcile configures the reconciliation of one provider
// (providers.<name>.reconcile): a periodic pass comparing the provider's own
// record of what it sent with the inbox and closing the difference, by
// backfill or redelivery as the catalogue declares for its scheme
// (`gatehouse providers`, docs/PROVIDERS.md).
type Reconcile struct {
	// Enabled runs the pass periodically in serve (one instance at a time).
	// It needs api_url and api_key, and a scheme the catalogue can
	// reconcile. Default false.
	Enabled bool `yaml:"enabled"`
	// Interval is the time between two passes. Default 15m.
	Interval time.Duration `yaml:"interval"`
	// Overlap is how far each pass's window reaches back before the end of
	// the previous one, so an event the provider recorded late is still
	// seen. Default 1h.
	Overlap time.Duration `yaml:"overlap"`
	// MaxEvents bounds the provider's events or deliveries one pass reads;
	// the next pass resumes from the durable cursor. Default 10000.
	MaxEvents int `yaml:"max_events"`
	// Hook is the kind of hook whose deliveries are listed. For scheme
	// github: repository (needs owner, repo and hook_id), organization
	// (org and hook_id) or app (the GitHub App's hook; api_key is then the
	// App's JWT). For scheme gitlab: project (needs project and hook_id)
	// or group (group and hook_id). Required for both.
	Hook string `yaml:"hook"`
	// Owner, Repo, Org and HookID name the GitHub hook.
	Owner  string `yaml:"owner"`
	Repo   string `yaml:"repo"`
	Org    string `yaml:"org"`
	HookID int64  `yaml:"hook_id"`
	// Project and Group name the GitLab hook's project or group: its
	// numeric id or its full path ("my-group/my-project"), which is
	// URL-encoded in the API's paths.
	Project string `yaml:"project"`
	Group   string `yaml:"group"`
	// List declares the provider's event list, so a scheme the catalogue
	// cannot reconcile (hmac) is backfilled from it; it replaces the
	// catalogue's list of a backfilled scheme. Optional.
	List *providers.EventList `yaml:"list"`
}

// ApplyDefaults fills the zero settings with their defaults.
func (r *Reconcile) ApplyDefaults() {
	setDefault(&r.Interval, 15*time.Minute)
	setDefault(&r.Overlap, time.Hour)
	setDefault(&r.MaxEvents, 10000)
}

// Validate returns the first setting that is out of range, naming its key
// under prefix ("providers.gh.reconcile"); scheme is the provider's
// scheme, way the catalogue's way for it ("" : it cannot be reconciled),
// redeliver the way that needs a hook.
func (r *Reconcile) Validate(prefix, scheme, way, redeliver string) error {
	if r.List != nil {
		if err := r.List.Validate(prefix + ".list"); err != nil {
			return err
		}
		if way == redeliver {
			return errorf("%s.list: the scheme is reconciled by redelivery, not from an event list", prefix)
		}
		way = "backfill"
	}
	if !r.Enabled {
		return nil
	}
	if way == "" {
		return errorf("%s.enabled: the scheme cannot be reconciled (gatehouse providers says why)", prefix)
	}
	if r.Interval <= 0 || r.Overlap < 0 || r.MaxEvents <= 0 {
		return errorf("%s: interval and max_events must be positive, overlap not negative", prefix)
	}
	if way != redeliver {
		return nil
	}
	if scheme == "gitlab" {
		return r.validateGitLab(prefix)
	}
	switch r.Hook {
	case HookRepository:
		if r.Owner == "" || r.Repo == "" || r.HookID <= 0 {
			return errorf("%s: hook repository needs owner, repo and hook_id", prefix)
		}
	case HookOrganization:
		if r.Org == "" || r.HookID <= 0 {
			return errorf("%s: hook organization needs org and hook_id", prefix)
		}
	case HookApp:
	default:
		return errorf("%s.hook: %q is not repository, organization or app", prefix, r.Hook)
	}
	return nil
}

// validateGitLab checks the GitLab hook (scheme gitlab).
func (r *Reconcile) validateGitLab(prefix string) error {
	switch r.Hook {
	case HookProject:
		if r.Project == "" || r.HookID <= 0 {
			return errorf("%s: hook project needs project and hook_id", prefix)
		}
	case HookGroup:
		if r.Group == "" || r.HookID <= 0 {
			return errorf("%s: hook group needs group and hook_id", prefix)
		}
	default:
		return errorf("%s.hook: %q is not project or group", prefix, r.Hook)
	}
	return nil
}

// DeliveriesPath is the path of the hook's deliveries list: GitHub's
// ("/repos/o/r/hooks/1/deliveries") or GitLab's hook events
// ("/api/v4/projects/my-group%2Fmy-project/hooks/1/events", the project
// or group URL-encoded); "" when Hook is not a hook kind.
func (r *Reconcile) DeliveriesPath() string {
	id := strconv.FormatInt(r.HookID, 10)
	switch r.Hook {
	case HookProject:
		return "/api/v4/projects/" + url.PathEscape(r.Project) + "/hooks/" + id + "/events"
	case HookGroup:
		return "/api/v4/groups/" + url.PathEscape(r.Group) + "/hooks/" + id + "/events"
	case HookRepository:
		return "/repos/" + r.Owner + "/" + r.Repo + "/hooks/" + id + "/deliveries"
	case HookOrganization:
		return "/orgs/" + r.Org + "/hooks/" + id + "/deliveries"
	case HookApp:
		return "/app/hook/deliveries"
	}
	return ""
}
