package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gatehouse/gatehouse/schemas"
)

// replayErased forces a replay of the erased event evt_er_1 and reads the
// topic: its record (the erasure marker) is keyed pay_er, the object's id,
// in the partition of pay_er's records published after the erasure
// (after), with the event's ce_time, as the receiver published it.
func replayErased(t *testing.T, dbURL, cfgPath string, brokers []string, topic string, after []*kgo.Record) {
	t.Helper()
	partition := int32(-1)
	for _, r := range after {
		if string(r.Key) == "pay_er" {
			partition = r.Partition
		}
	}
	ends := endOffsets(t, brokers, topic)
	if out, err := gatehouse(t, dbURL, "replay", "--config", cfgPath, "--provider", "demo", "--event-id", "evt_er_1", "--force").CombinedOutput(); err != nil {
		t.Fatalf("replay of the erased evt_er_1: %v %s", err, out)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: ends}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	deadline := time.Now().Add(45 * time.Second)
	for time.Now().Before(deadline) {
		pctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		var got *kgo.Record
		cl.PollFetches(pctx).EachRecord(func(r *kgo.Record) {
			if schemas.Headers(r)[schemas.HeaderID] == "evt_er_1" {
				got = r
			}
		})
		cancel()
		if got == nil {
			continue
		}
		h := schemas.Headers(got)
		if _, ok := schemas.ErasedPayload(got.Value); !ok || string(got.Key) != "pay_er" || got.Partition != partition ||
			h[schemas.HeaderTime] != "2026-01-01T00:00:00Z" {
			t.Errorf("the replayed erased event: key %q partition %d (pay_er's: %d), ce_time %q, value %s; want the object's key, partition and the event's ce_time",
				got.Key, got.Partition, partition, h[schemas.HeaderTime], got.Value)
		}
		return
	}
	t.Fatal("the replayed erased event did not reach the topic")
}

// eraseTeamSecret signs the deliveries to the erasure test's destinations.
const eraseTeamSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// eraseTeam is a team's service for TestEraseEndToEnd: it verifies every
// delivery with the official Standard Webhooks library, refuses with 422
// a body holding refuseIf (when not ""), its answer quoting quote, and
// keeps the others' bodies by webhook-id.
type eraseTeam struct {
	url              string
	refused, invalid atomic.Int64
	mu               sync.Mutex
	bodies           map[string][]byte
}

func newEraseTeam(t *testing.T, refuseIf, quote string) *eraseTeam {
	t.Helper()
	wh, err := standardwebhooks.NewWebhook(eraseTeamSecret)
	if err != nil {
		t.Fatal(err)
	}
	team := &eraseTeam{bodies: map[string][]byte{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if wh.Verify(body, r.Header) != nil {
			team.invalid.Add(1)
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		if refuseIf != "" && bytes.Contains(body, []byte(refuseIf)) {
			team.refused.Add(1)
			http.Error(w, "invalid contact "+quote, http.StatusUnprocessableEntity)
			return
		}
		team.mu.Lock()
		team.bodies[r.Header.Get("webhook-id")] = body
		team.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	team.url = srv.URL + "/hooks"
	return team
}

// received is the body last delivered with webhook-id id (nil: none).
func (e *eraseTeam) received(id string) []byte {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.bodies[id]
}
