package config

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/gatehouse/gatehouse/schemas"
)

// kafkaTopic is Kafka's rule for a topic name: ASCII letters, digits, '.',
// '_' and '-', at most 249 characters, neither "." nor "..".
var kafkaTopic = regexp.MustCompile(`^[a-zA-Z0-9._-]{1,249}$`)

// validateTopics checks every provider's topic, and the retry and
// dead-letter topics derived from it (retries of them), as Kafka would
// when creating them, and that no two providers' topics meet: not the same
// topic, not one provider's topic equal to another's <topic>.retry.<n> or
// <topic>.dlq, and not two names Kafka itself refuses side by side because
// they differ only in '.' against '_' (their metric names collide).
func validateTopics(providers map[string]*Provider, retries int) error {
	names := make([]string, 0, len(providers))
	for name, p := range providers {
		if p != nil {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	owner := map[string]string{} // normalised topic → "providers.<name>.topic (<role>)"
	for _, name := range names {
		t := providers[name].Topic
		if t == "." || t == ".." || !kafkaTopic.MatchString(t) {
			return fmt.Errorf("config: providers.%s.topic: %q is not a Kafka topic name (letters, digits, '.', '_', '-'; at most 249 characters)", name, t)
		}
		derived := []string{t, schemas.DeadLetterTopic(t)}
		for n := 1; n <= retries; n++ {
			derived = append(derived, schemas.RetryTopic(t, n))
		}
		for i, d := range derived {
			if len(d) > 249 {
				return fmt.Errorf("config: providers.%s.topic: %q is too long: its retry and dead-letter topics (%s) exceed Kafka's 249 characters", name, t, d)
			}
			role := "topic"
			if i > 0 {
				role = "topic " + d
			}
			key := strings.ReplaceAll(d, ".", "_")
			if prev, ok := owner[key]; ok {
				return fmt.Errorf("config: providers.%s.topic: %s collides with %s: each provider needs topics of its own", name, role, prev)
			}
			owner[key] = fmt.Sprintf("providers.%s.%s", name, role)
		}
	}
	// A topic equal to another's retry topic beyond the configured ladder
	// would collide once the ladder grows: refuse <other>.retry.<n> for any n.
	for _, a := range names {
		for _, b := range names {
			ta, tb := providers[a].Topic, providers[b].Topic
			if a != b && strings.HasPrefix(ta, tb+".retry.") && digits(strings.TrimPrefix(ta, tb+".retry.")) {
				return fmt.Errorf("config: providers.%s.topic: %q is a retry topic of providers.%s", a, ta, b)
			}
		}
	}
	return nil
}

func digits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
