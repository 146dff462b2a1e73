package kafka

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gatehouse/gatehouse/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func admin(t *testing.T, brokers []string) *kadm.Client {
	t.Helper()
	opts, err := Options(ClientConfig{Brokers: brokers, Name: "test-admin"})
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

// EnsureTopics against the real broker: missing topics are created with the
// spec; an existing topic with another partition count is reported and left
// exactly as it was.
func TestEnsureTopicsNeverRepartitions(t *testing.T) {
	adm := admin(t, testenv.KafkaForTest(t))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	suffix := time.Now().Format("150405.000000")
	a, b := "kafka-test.a."+suffix, "kafka-test.b."+suffix
	if mism, err := EnsureTopics(ctx, adm, nil, TopicSpec{Partitions: 3, Configs: map[string]string{"retention.ms": "3600000"}}, a); err != nil || len(mism) != 0 {
		t.Fatalf("create: %v %v", mism, err)
	}
	mism, err := EnsureTopics(ctx, adm, nil, TopicSpec{Partitions: 6}, a, b, a)
	if err != nil {
		t.Fatal(err)
	}
	if len(mism) != 1 || mism[0].Topic != a || mism[0].Existing != 3 || mism[0].Configured != 6 {
		t.Fatalf("mismatches %+v, want %s existing 3 configured 6", mism, a)
	}
	// A just-created topic's partitions show up in metadata shortly after.
	var details kadm.TopicDetails
	for {
		if details, err = adm.ListTopics(ctx, a, b); err != nil {
			t.Fatal(err)
		}
		if len(details[b].Partitions) > 0 || ctx.Err() != nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if n := len(details[a].Partitions); n != 3 {
		t.Fatalf("%s has %d partitions after EnsureTopics; it must stay 3", a, n)
	}
	if n := len(details[b].Partitions); n != 6 {
		t.Fatalf("%s has %d partitions, want 6", b, n)
	}
	cfgs, err := adm.DescribeTopicConfigs(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	c, err := cfgs.On(a, nil)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, kv := range c.Configs {
		if kv.Key == "retention.ms" && kv.MaybeValue() == "3600000" {
			found = true
		}
	}
	if !found {
		t.Fatal("retention.ms of the created topic is not 3600000")
	}
}

func TestOptionsRequireBrokers(t *testing.T) {
	if _, err := Options(ClientConfig{}); err == nil {
		t.Fatal("Options without brokers succeeded")
	}
}

// The embedded broker of `gatehouse dev` accepts topic creation and records.
func TestEmbedded(t *testing.T) {
	e, err := StartEmbedded(0)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := EnsureTopics(ctx, admin(t, e.Brokers()), nil, TopicSpec{Partitions: 2}, "dev.topic"); err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.Brokers()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "dev.topic", Key: []byte("k"), Value: []byte("{}")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
}
