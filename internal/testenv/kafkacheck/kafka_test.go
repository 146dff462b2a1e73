// Package kafkacheck proves that testenv's real Kafka broker works end to end.
package kafkacheck

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gatehouse/gatehouse/internal/testenv"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testenv.KafkaCleanup()
	os.Exit(code)
}

func TestKafkaProduceConsume(t *testing.T) {
	brokers := testenv.KafkaForTest(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	topic := fmt.Sprintf("kafkacheck-%d", time.Now().UnixNano())
	createTopic(ctx, t, brokers, topic)

	produce(ctx, t, brokers, topic, "a", "b", "c")
	got := consume(ctx, t, brokers, topic, 3)
	want := []string{"a", "b", "c"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("consumed %q, want %q", got, want)
	}
}

func TestKafkaRestart(t *testing.T) {
	begin := time.Now()
	k := testenv.PrivateKafka(t)
	t.Logf("private broker started in %v", time.Since(begin).Round(time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	topic := "kafkacheck-restart"
	createTopic(ctx, t, k.Brokers, topic)
	produce(ctx, t, k.Brokers, topic, "before")

	begin = time.Now()
	if err := k.Restart(ctx); err != nil {
		t.Fatalf("restart: %v", err)
	}
	t.Logf("restart took %v", time.Since(begin).Round(time.Millisecond))

	produce(ctx, t, k.Brokers, topic, "after")
	got := consume(ctx, t, k.Brokers, topic, 2)
	if want := []string{"before", "after"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("consumed %q, want %q", got, want)
	}

	// A crash (SIGKILL) loses nothing acknowledged with acks=all either.
	if err := k.Kill(); err != nil {
		t.Fatalf("kill: %v", err)
	}
	begin = time.Now()
	if err := k.Restart(ctx); err != nil {
		t.Fatalf("restart after kill: %v", err)
	}
	t.Logf("restart after kill took %v", time.Since(begin).Round(time.Millisecond))
	begin = time.Now()
	got = consume(ctx, t, k.Brokers, topic, 2)
	if want := []string{"before", "after"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after crash consumed %q, want %q", got, want)
	}
	t.Logf("consume after crash took %v", time.Since(begin).Round(time.Millisecond))
}

func createTopic(ctx context.Context, t *testing.T, brokers []string, topic string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatalf("admin client: %v", err)
	}
	defer cl.Close()
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, topic)
	if err != nil {
		t.Fatalf("create topic: %v", err)
	}
	if resp.Err != nil {
		t.Fatalf("create topic %s: %v", topic, resp.Err)
	}
}

func produce(ctx context.Context, t *testing.T, brokers []string, topic string, values ...string) {
	t.Helper()
	// Idempotent producer (franz-go's default) with acks=all.
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		t.Fatalf("producer: %v", err)
	}
	defer cl.Close()
	recs := make([]*kgo.Record, len(values))
	for i, v := range values {
		recs[i] = &kgo.Record{Key: []byte("k"), Value: []byte(v)}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
}

func consume(ctx context.Context, t *testing.T, brokers []string, topic string, n int) []string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatalf("consumer: %v", err)
	}
	defer cl.Close()
	var got []string
	for len(got) < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consume: %v after %q", err, got)
		}
		fs.EachError(func(topic string, p int32, err error) {
			t.Errorf("fetch %s/%d: %v", topic, p, err)
		})
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	return got
}
