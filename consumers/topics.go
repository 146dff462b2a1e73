package consumers

import (
	"time"

	"github.com/gatehouse/gatehouse/schemas"
)

// topicRole places a consumed topic on a provider's ladder.
type topicRole struct {
	provider string
	base     string // the provider's main topic
	level    int    // 0 for the main topic, n for <base>.retry.<n>
}

// layout lists every topic of the consumed providers:
//
//	<topic>            the provider's events, written by the relay
//	<topic>.retry.<n>  records waiting for attempt n+1, n = 1..len(retry_delays)
//	<topic>.dlq        records that failed permanently or ran out of retries
type layout struct {
	roles  map[string]topicRole
	delays []time.Duration
}

func newLayout(providerTopics map[string]string, delays []time.Duration) layout {
	l := layout{roles: map[string]topicRole{}, delays: delays}
	for p, t := range providerTopics {
		l.roles[t] = topicRole{provider: p, base: t}
		for n := 1; n <= len(delays); n++ {
			l.roles[schemas.RetryTopic(t, n)] = topicRole{provider: p, base: t, level: n}
		}
	}
	return l
}

// consumed returns the main and retry topics.
func (l layout) consumed() []string {
	out := make([]string, 0, len(l.roles))
	for t := range l.roles {
		out = append(out, t)
	}
	return out
}

// all returns consumed topics plus the dead-letter topics.
func (l layout) all() []string {
	out := l.consumed()
	for t, r := range l.roles {
		if r.level == 0 {
			out = append(out, schemas.DeadLetterTopic(t))
		}
	}
	return out
}
