package testenv

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

var kafkaShared struct {
	once  sync.Once
	k     *Kafka
	err   error
	start time.Duration
}

// KafkaForTest returns broker addresses for a test: the list in
// GATEHOUSE_TEST_KAFKA_BROKERS when set, otherwise a broker private to this
// test binary, started on first use and stopped by KafkaCleanup. It fails the
// test, never skips, when no broker can be had.
func KafkaForTest(t testing.TB) []string {
	t.Helper()
	if v := os.Getenv(KafkaBrokersEnv); v != "" {
		return strings.Split(v, ",")
	}
	kafkaShared.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		begin := time.Now()
		kafkaShared.k, kafkaShared.err = StartKafka(ctx, "")
		kafkaShared.start = time.Since(begin)
	})
	if kafkaShared.err != nil {
		t.Fatalf("start kafka: %v", kafkaShared.err)
	}
	t.Logf("kafka %v (started in %v)", kafkaShared.k.Brokers, kafkaShared.start.Round(time.Millisecond))
	return kafkaShared.k.Brokers
}

// PrivateKafka starts a broker dedicated to this test (for restart and crash
// tests) and stops it, removing its data, when the test ends.
func PrivateKafka(t testing.TB) *Kafka {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	k, err := StartKafka(ctx, t.TempDir())
	if err != nil {
		t.Fatalf("start private kafka: %v", err)
	}
	t.Cleanup(func() {
		if err := k.Stop(); err != nil {
			t.Errorf("stop private kafka: %v", err)
		}
	})
	return k
}

// KafkaCleanup stops the broker KafkaForTest started, if any, and removes its
// data. Call it from TestMain after m.Run.
func KafkaCleanup() {
	k := kafkaShared.k
	if k == nil {
		return
	}
	_ = k.Stop()
	if k.ownsDir {
		_ = os.RemoveAll(k.Dir)
	}
}
