package consumers

import (
	"context"
	"encoding/json"
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
	body json.RawMessage
	at   time.Time
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

func (m *fetchMemo) do(key string, coalesced prometheus.Counter, fetch func() (json.RawMessage, time.Time, error)) (json.RawMessage, time.Time, error) {
	m.mu.Lock()
	if c, ok := m.calls[key]; ok {
		m.mu.Unlock()
		<-c.done
		coalesced.Inc()
		return c.body, c.at, c.err
	}
	c := &memoCall{done: make(chan struct{})}
	m.calls[key] = c
	m.mu.Unlock()
	c.body, c.at, c.err = fetch()
	close(c.done)
	return c.body, c.at, c.err
}
