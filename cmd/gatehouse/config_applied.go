package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/gatehouse/gatehouse/ingest"
	"github.com/gatehouse/gatehouse/ingest/inbox"
	"github.com/gatehouse/gatehouse/ingest/signature"
	"github.com/gatehouse/gatehouse/internal/config"
	"github.com/gatehouse/gatehouse/schemas/providers"
	"github.com/gatehouse/gatehouse/wiring"
)

// appliedValues are the values the stages apply for the keys whose
// configuration value is a "use the default" zero, or which the provider's
// scheme does not use (issue 46: `config check` printed replay_guard_ttl:
// 0s and tolerance: 5m for GitHub, which has no signed timestamp and keeps
// its replay guard 72 h). By concrete path, for config.RedactedWith.
func appliedValues(cfg *config.Config) map[string]config.Applied {
	out := map[string]config.Applied{}
	dur := config.FormatDuration
	for name, p := range cfg.Providers {
		if p == nil {
			continue
		}
		at := "providers." + name + "."
		ip := wiring.Provider(p)
		d, _ := signature.Describe(ip.Signature.Scheme, ip.Signature.HMAC)
		timestamped := d.Timestamp != ""
		if timestamped {
			out[at+"tolerance"] = config.Applied{Value: dur(p.Tolerance)}
		} else {
			out[at+"tolerance"] = config.Applied{NotApplied: true,
				Comment: fmt.Sprintf("does not apply: scheme %s signs no timestamp", p.Scheme)}
		}
		guard, ttl, why := replayGuard(ip, timestamped)
		switch {
		case guard == "":
			out[at+"replay_guard_ttl"] = config.Applied{NotApplied: true,
				Comment: fmt.Sprintf("does not apply: scheme %s keeps no replay guard (its event id is signed, or nothing is)", p.Scheme)}
		case p.ReplayGuardTTL > 0:
			out[at+"replay_guard_ttl"] = config.Applied{Value: dur(ttl)}
		default:
			out[at+"replay_guard_ttl"] = config.Applied{Value: dur(ttl), Comment: "default: " + why}
		}
		if p.Search == "" {
			out[at+"search"] = config.Applied{Value: config.SearchScan}
		}
		payload, dedupe := cfg.Retention(name)
		if p.Retention == 0 {
			out[at+"retention"] = config.Applied{Value: dur(payload), Comment: "default: storage.retention"}
		}
		if p.DedupeWindow == 0 {
			out[at+"dedupe_window"] = config.Applied{Value: dur(dedupe), Comment: "default: storage.dedupe_window"}
		}
		if p.ObjectRetention == 0 {
			out[at+"object_retention"] = config.Applied{Value: dur(cfg.ObjectRetention(name)), Comment: "default: storage.object_retention, else the key lifetime"}
		}
	}
	return out
}

// replayGuard is the replay guard the receiver keeps for p and its
// lifetime, as ingest's guardOf decides them: the catalogue's guard (for
// scheme hmac, a content guard when an event id comes from a header the
// definition does not sign as {id}); replay_guard_ttl, else twice the
// tolerance of a scheme with a signed timestamp, else
// inbox.DefaultReplayGuardTTL.
func replayGuard(p *ingest.Provider, timestamped bool) (guard string, ttl time.Duration, why string) {
	guard = p.Kind.Guard
	if h := p.Signature.HMAC; h != nil && unsignedIDHeader(p.Kind.EventID, h) {
		guard = providers.GuardContent
	}
	switch {
	case guard == "":
		return "", 0, ""
	case p.ReplayGuardTTL > 0:
		return guard, p.ReplayGuardTTL, ""
	case timestamped:
		return guard, 2 * p.Signature.Tolerance, "twice the tolerance"
	}
	return guard, inbox.DefaultReplayGuardTTL, "72h for a scheme without a signed timestamp"
}

func unsignedIDHeader(fs providers.Fields, h *providers.HMAC) bool {
	for _, f := range fs {
		if f.Header != "" && (!h.Uses(providers.PartID) || !strings.EqualFold(f.Header, h.IDHeader)) {
			return true
		}
		if unsignedIDHeader(f.Join, h) {
			return true
		}
	}
	return false
}
