package inbox

import (
	"github.com/tidwall/gjson"

	"github.com/gatehouse/gatehouse/schemas"
)

// AggregateID is the subject object's id of an envelope (the outbox
// aggregateid and Kafka key): the first of paths (a provider's
// aggregate_id_path) that holds a string or number. The receiver and Replay
// both use it, so a replayed event keeps its key.
func AggregateID(root gjson.Result, paths []string) (string, bool) {
	for _, path := range paths {
		if v, ok := schemas.LookupPath(root, path); ok {
			return v, true
		}
	}
	return "", false
}
