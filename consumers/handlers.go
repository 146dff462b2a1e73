package consumers

import (
	"strings"

	"github.com/gatehouse/gatehouse/consumers/event"
)

// Registry maps (provider, event type) to an event.Handler. A pattern is an exact
// type ("invoice.paid"), a prefix ending in ".*" ("invoice.*") or "*".
type Registry struct {
	m map[string]map[string]event.Handler
	// ordered are the forwards ordered per object, by provider and
	// destination (RegisterProvider): the drain of parked keys sends
	// through them.
	ordered map[string]map[string]orderedForwarder
}

// NewRegistry returns an empty Registry.
func NewRegistry() *Registry { return &Registry{m: map[string]map[string]event.Handler{}} }

// registerOrdered records fw, ordered per object, as provider's forward to
// its destination (the first one registered wins, as in a delivery).
func (r *Registry) registerOrdered(provider string, fw orderedForwarder) {
	if r.ordered == nil {
		r.ordered = map[string]map[string]orderedForwarder{}
	}
	if r.ordered[provider] == nil {
		r.ordered[provider] = map[string]orderedForwarder{}
	}
	if _, ok := r.ordered[provider][fw.Destination()]; !ok {
		r.ordered[provider][fw.Destination()] = fw
	}
}

// Ordered reports whether a forward destination is ordered per object.
func (r *Registry) Ordered() bool { return len(r.ordered) > 0 }

// orderedTo is provider's forward ordered per object to dest; nil: none.
func (r *Registry) orderedTo(provider, dest string) orderedForwarder {
	return r.ordered[provider][dest]
}

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
