package settings

import (
	"strconv"
	"time"
)

// GitHub hook kinds of Reconcile.Hook.
const (
	HookRepository   = "repository"
	HookOrganization = "organization"
	HookApp          = "app"
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
	// Hook is the kind of GitHub hook whose deliveries are listed:
	// repository (needs owner, repo and hook_id), organization (org and
	// hook_id) or app (the GitHub App's hook; api_key is then the App's
	// JWT). Required for scheme github.
	Hook string `yaml:"hook"`
	// Owner, Repo, Org and HookID name the GitHub hook.
	Owner  string `yaml:"owner"`
	Repo   string `yaml:"repo"`
	Org    string `yaml:"org"`
	HookID int64  `yaml:"hook_id"`
	// List declares the provider's event list, so a scheme the catalogue
	// cannot reconcile (hmac) is backfilled from it; it replaces the
	// catalogue's list of a backfilled scheme. Optional.
	List *EventList `yaml:"list"`
}

// ApplyDefaults fills the zero settings with their defaults.
func (r *Reconcile) ApplyDefaults() {
	setDefault(&r.Interval, 15*time.Minute)
	setDefault(&r.Overlap, time.Hour)
	setDefault(&r.MaxEvents, 10000)
}

// Validate returns the first setting that is out of range, naming its key
// under prefix ("providers.gh.reconcile"); way is the catalogue's way for
// the provider's scheme ("" : it cannot be reconciled), redeliver the way
// that needs a hook.
func (r *Reconcile) Validate(prefix, way, redeliver string) error {
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

// DeliveriesPath is the path of the GitHub hook's deliveries list
// ("/repos/o/r/hooks/1/deliveries"); "" when Hook is not a GitHub hook kind.
func (r *Reconcile) DeliveriesPath() string {
	id := strconv.FormatInt(r.HookID, 10)
	switch r.Hook {
	case HookRepository:
		return "/repos/" + r.Owner + "/" + r.Repo + "/hooks/" + id + "/deliveries"
	case HookOrganization:
		return "/orgs/" + r.Org + "/hooks/" + id + "/deliveries"
	case HookApp:
		return "/app/hook/deliveries"
	}
	return ""
}

// EventList declares a provider's list of the events it sent, for
// backfill: the catalogue's (Stripe's GET /v1/events), or one a scheme
// hmac provider declares (providers.<name>.reconcile.list). Each item of
// the list must be the event exactly as its webhook's body carries it, so
// the receiver's fields (event_id, event_type, created_at) read the same
// id from both; paths are dotted paths into the answer and its items.
type EventList struct {
	// Path is the list's path below api_url, called with GET ("/v1/events").
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
}

// Validate names the first required field of l that is missing, under
// prefix.
func (l *EventList) Validate(prefix string) error {
	for _, f := range []struct{ key, v string }{{"path", l.Path}, {"items", l.Items}, {"id", l.ID}, {"time", l.Time},
		{"cursor", l.Cursor}, {"more", l.More}} {
		if f.v == "" {
			return errorf("%s.%s: required", prefix, f.key)
		}
	}
	if l.Path[0] != '/' {
		return errorf("%s.path: %q must start with /", prefix, l.Path)
	}
	return nil
}
