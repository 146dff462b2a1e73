package probe

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/gatehouse/gatehouse/internal/testenv"
)

func TestProbe(t *testing.T) {
	ctx := context.Background()
	b := time.Now()
	k, err := testenv.StartKafka(ctx, "/tmp/kf/probe/b")
	if err != nil { t.Fatal(err) }
	t.Logf("start %v", time.Since(b))
	cl, _ := kgo.NewClient(kgo.SeedBrokers(k.Brokers...), kgo.DefaultProduceTopic("x"))
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, "x"); err != nil { t.Fatal(err) }
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil { t.Fatal(err) }
	cl.Close()
	b = time.Now()
	if err := k.Stop(); err != nil { t.Fatal(err) }
	t.Logf("stop %v", time.Since(b))
	b = time.Now()
	if err := k.Restart(ctx); err != nil { t.Fatal(err) }
	t.Logf("start2 %v", time.Since(b))
	k.Kill()
	b = time.Now()
	if err := k.Restart(ctx); err != nil { t.Fatal(err) }
	t.Logf("start after kill %v", time.Since(b))
	b = time.Now()
	k.Stop()
	t.Logf("stop %v", time.Since(b))
}
