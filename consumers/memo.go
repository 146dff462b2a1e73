package consumers

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// fetchMemo coalesces the fetches of one batch: the first call for a key
// runs, every other call for it, concurrent or later, gets its answer.
type fetchMemo struct {
	mu    sync.Mutex
	calls map[string]*memoCall
}

type memoCall struct {
	done chan struct{}
	ans  answer
	err  error
}

type memoKey struct{}

// withFetchMemo returns ctx carrying a new batch memo.
func withFetchMemo(ctx context.Context) context.Context {
	return context.WithValue(ctx, memoKey{}, &fetchMemo{calls: map[string]*memoCall{}})
}

func memoFrom(ctx context.Context) *fetchMemo {
	m, _ := ctx.Value(memoKey{}).(*fetchMemo)
	return m
}

func (m *fetchMemo) do(key string, coalesced prometheus.Counter, fetch func() (answer, error)) (answer, error) {
	m.mu.Lock()
	if c, ok := m.calls[key]; ok {
		m.mu.Unlock()
		<-c.done
		coalesced.Inc()
		return c.ans, c.err
	}
	c := &memoCall{done: make(chan struct{})}
	m.calls[key] = c
	m.mu.Unlock()
	c.ans, c.err = fetch()
	close(c.done)
	return c.ans, c.err
}

// answer is one API answer: the body, its headers and when the request
// was sent.
type answer struct {
	body   json.RawMessage
	header http.Header
	at     time.Time
}
