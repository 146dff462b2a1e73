package fetch

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/gatehouse/gatehouse/consumers/event"
)

// answer is one API answer: the body, its headers and when the request
// was sent.
type answer struct {
	body   json.RawMessage
	header http.Header
	at     time.Time
}

// coalesce runs send once per key in the batch whose memo is m
// (event.Batch): every other call for key, concurrent or later, gets its
// answer and counts as coalesced. With m nil (APIClient.Get, outside a
// batch) send runs every time.
func coalesce(m *event.Memo, key string, coalesced interface{ Inc() }, send func() (answer, error)) (answer, error) {
	if m == nil {
		return send()
	}
	v, err, shared := m.Do(key, func() (any, error) { return send() })
	if shared {
		coalesced.Inc()
	}
	a, _ := v.(answer)
	return a, err
}
