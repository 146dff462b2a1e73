package testenv

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// KafkaCluster is a running multi-node KRaft cluster on loopback: every node
// is a combined broker+controller (its own JVM, ports and data directory),
// the voters are all nodes, and internal topics and new topics get
// replication factor len(Nodes) with min.insync.replicas 2.
type KafkaCluster struct {
	Nodes []*Kafka
	Dir   string
}

// StartKafkaCluster starts n nodes (n ≥ 3 for a quorum that survives a
// node) under dir and returns once every node answers metadata with all
// brokers registered, or an error carrying the failing node's log tail.
func StartKafkaCluster(ctx context.Context, dir string, n int) (*KafkaCluster, error) {
	if n < 3 {
		return nil, fmt.Errorf("kafka cluster: %d nodes, want at least 3", n)
	}
	libs, err := kafkaLibs(ctx)
	if err != nil {
		return nil, err
	}
	c := &KafkaCluster{Dir: dir}
	clusterID := kafkaUUID()
	var voters []string
	for i := 1; i <= n; i++ {
		k := &Kafka{libs: libs, log4j: filepath.Join(filepath.Dir(libs), "log4j2.xml"), node: i,
			clusterID: clusterID, replicas: n, Dir: filepath.Join(dir, "node"+strconv.Itoa(i))}
		if k.brokerPort, err = freePort(); err != nil {
			return nil, err
		}
		if k.controllerPort, err = freePort(); err != nil {
			return nil, err
		}
		k.Brokers = []string{"127.0.0.1:" + strconv.Itoa(k.brokerPort)}
		voters = append(voters, fmt.Sprintf("%d@127.0.0.1:%d", i, k.controllerPort))
		c.Nodes = append(c.Nodes, k)
	}
	for _, k := range c.Nodes {
		k.voters = strings.Join(voters, ",")
		if err := k.writeConfig(); err != nil {
			return nil, err
		}
		if err := k.format(ctx); err != nil {
			return nil, err
		}
	}
	// A node answers metadata only once a quorum has formed: start all
	// nodes at once, then wait for each.
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, k := range c.Nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = k.start(ctx)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		c.Stop()
		return nil, fmt.Errorf("kafka cluster: %w", err)
	}
	if err := c.WaitBrokers(ctx, n); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

// Brokers returns the PLAINTEXT addresses of every node (seed brokers).
func (c *KafkaCluster) Brokers() []string {
	var out []string
	for _, k := range c.Nodes {
		out = append(out, k.Brokers...)
	}
	return out
}

// Node returns the node with node.id id (1-based).
func (c *KafkaCluster) Node(id int32) *Kafka { return c.Nodes[id-1] }

// Stop stops every node.
func (c *KafkaCluster) Stop() {
	for _, k := range c.Nodes {
		_ = k.Stop()
	}
}

// admin returns an admin client over the seeds of the running nodes.
func (c *KafkaCluster) admin() (*kadm.Client, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Brokers()...), kgo.DialTimeout(time.Second), kgo.RequestTimeoutOverhead(2*time.Second))
	if err != nil {
		return nil, err
	}
	return kadm.NewClient(cl), nil
}

// WaitBrokers waits until the cluster's metadata lists want brokers.
func (c *KafkaCluster) WaitBrokers(ctx context.Context, want int) error {
	return c.poll(ctx, 90*time.Second, func(adm *kadm.Client, rctx context.Context) (bool, error) {
		m, err := adm.BrokerMetadata(rctx)
		if err != nil {
			return false, err
		}
		return len(m.Brokers) == want, nil
	})
}

// Leader returns the node id of the leader of topic's partition.
func (c *KafkaCluster) Leader(ctx context.Context, topic string, partition int32) (int32, error) {
	var leader int32 = -1
	err := c.poll(ctx, 30*time.Second, func(adm *kadm.Client, rctx context.Context) (bool, error) {
		td, err := adm.ListTopics(rctx, topic)
		if err != nil {
			return false, err
		}
		p, ok := td[topic].Partitions[partition]
		if !ok || p.Leader < 0 {
			return false, fmt.Errorf("partition %s/%d has no leader", topic, partition)
		}
		leader = p.Leader
		return true, nil
	})
	return leader, err
}

// WaitISR waits until topic's every partition has want in-sync replicas.
func (c *KafkaCluster) WaitISR(ctx context.Context, topic string, want int) error {
	return c.poll(ctx, 90*time.Second, func(adm *kadm.Client, rctx context.Context) (bool, error) {
		td, err := adm.ListTopics(rctx, topic)
		if err != nil {
			return false, err
		}
		d := td[topic]
		if d.Err != nil || len(d.Partitions) == 0 {
			return false, fmt.Errorf("describe %s: %v", topic, d.Err)
		}
		for _, p := range d.Partitions {
			if len(p.ISR) != want {
				return false, fmt.Errorf("%s/%d: isr %v, want %d replicas", topic, p.Partition, p.ISR, want)
			}
		}
		return true, nil
	})
}

// poll runs f until it reports done, ctx ends, or limit passes.
func (c *KafkaCluster) poll(ctx context.Context, limit time.Duration, f func(*kadm.Client, context.Context) (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	adm, err := c.admin()
	if err != nil {
		return err
	}
	defer adm.Close()
	var last error
	for {
		rctx, rcancel := context.WithTimeout(ctx, 3*time.Second)
		ok, err := f(adm, rctx)
		rcancel()
		if ok {
			return nil
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("kafka cluster: %w (last: %v)", ctx.Err(), last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// PrivateKafkaCluster starts a three-node cluster for one test and stops it
// when the test ends.
func PrivateKafkaCluster(t testing.TB) *KafkaCluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	begin := time.Now()
	c, err := StartKafkaCluster(ctx, t.TempDir(), 3)
	if err != nil {
		t.Fatalf("start kafka cluster: %v", err)
	}
	t.Logf("kafka cluster %v (started in %v)", c.Brokers(), time.Since(begin).Round(time.Millisecond))
	t.Cleanup(c.Stop)
	return c
}
