package consumers

import (
	"strings"

	"github.com/gatehouse/gatehouse/consumers/event"
)

// Registry maps (provider, event type) to an event.Handler. A pattern is an exact
// type ("invoice.paid"), a prefix ending in ".*" ("invoice.*") or "*".
type Registry struct {
	m map[string]map[string]event.Handler
}

// NewRegistry returns an empty Registry.
func NewRegistry() *Registry { return &Registry{m: map[string]map[string]event.Handler{}} }

// Register adds h for provider and pattern, replacing an earlier one.
func (r *Registry) Register(provider, pattern string, h event.Handler) {
	if r.m[provider] == nil {
		r.m[provider] = map[string]event.Handler{}
	}
	r.m[provider][pattern] = h
}

// Lookup returns the handler of an event type: the exact match, else the
// longest matching prefix pattern, else "*"; nil when none matches.
func (r *Registry) Lookup(provider, typ string) event.Handler {
	hs := r.m[provider]
	if h, ok := hs[typ]; ok {
		return h
	}
	for t := typ; ; {
		i := strings.LastIndexByte(t, '.')
		if i < 0 {
			break
		}
		t = t[:i]
		if h, ok := hs[t+".*"]; ok {
			return h
		}
	}
	return hs["*"]
}
