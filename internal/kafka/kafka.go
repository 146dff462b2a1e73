// Package kafka holds the Kafka plumbing shared by the relay and the
// consumers: client options (seed brokers, slog logging, Prometheus metrics),
// topic creation that never changes an existing topic's partition count, and
// an embedded in-process broker for `gatehouse dev`.
package kafka

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	"github.com/twmb/franz-go/plugin/kprom"
	"github.com/twmb/franz-go/plugin/kslog"

	"github.com/gatehouse/gatehouse/internal/settings"
)

// ClientConfig is what Options needs to build a client's base options.
type ClientConfig struct {
	// Brokers are the seed brokers. Required.
	Brokers []string
	// ClientID is sent to the brokers. Default "gatehouse".
	ClientID string
	// Logger receives franz-go's log lines (at its level); nil disables them.
	Logger *slog.Logger
	// Registerer, when set, receives the client's metrics as
	// gatehouse_kafka_<Name>_* (kprom), so several clients can share one registry.
	Registerer prometheus.Registerer
	// Name distinguishes the metrics of several clients: "relay", "consumer"…
	// Default "client".
	Name string
}

// Options returns the base kgo options of a client: seeds, client id, slog
// logger and kprom metrics. Append producer or consumer options to them.
// It returns an error when no broker is given.
func Options(c ClientConfig) ([]kgo.Opt, error) {
	if len(c.Brokers) == 0 {
		return nil, errors.New("kafka: no brokers configured")
	}
	if c.ClientID == "" {
		c.ClientID = "gatehouse"
	}
	if c.Name == "" {
		c.Name = "client"
	}
	opts := []kgo.Opt{kgo.SeedBrokers(c.Brokers...), kgo.ClientID(c.ClientID)}
	if c.Logger != nil {
		opts = append(opts, kgo.WithLogger(quieter{kslog.New(c.Logger.With("kafka_client", c.Name))}))
	}
	if c.Registerer != nil {
		m := kprom.NewMetrics("gatehouse", kprom.Registerer(c.Registerer),
			kprom.Subsystem("kafka_"+strings.ReplaceAll(c.Name, "-", "_")))
		opts = append(opts, kgo.WithHooks(m))
	}
	return opts, nil
}

// TopicSpec is how gatehouse creates a topic that does not exist yet.
type TopicSpec struct {
	// Partitions of a new topic. Default 6. Never applied to an existing topic:
	// adding partitions changes which partition a key maps to and so breaks
	// per-key ordering for consumers.
	Partitions int32
	// ReplicationFactor of a new topic. Default 1.
	ReplicationFactor int16
	// Configs are topic configs of a new topic (e.g. retention.ms).
	Configs map[string]string
}

// Mismatch reports an existing topic whose partition count differs from the
// configured one; EnsureTopics leaves such a topic alone.
type Mismatch struct {
	Topic      string
	Existing   int
	Configured int32
}

// EnsureTopics creates every topic of names that does not exist with spec and
// leaves existing topics untouched. It returns the existing topics whose
// partition count differs from spec (logging a warning for each) and an error
// when a topic can neither be found nor created.
func EnsureTopics(ctx context.Context, adm *kadm.Client, log *slog.Logger, spec TopicSpec, names ...string) ([]Mismatch, error) {
	if spec.Partitions <= 0 {
		spec.Partitions = 6
	}
	if spec.ReplicationFactor <= 0 {
		spec.ReplicationFactor = 1
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	names = uniq(names)
	if len(names) == 0 {
		return nil, nil
	}
	details, err := adm.ListTopics(ctx, names...)
	if err != nil {
		return nil, fmt.Errorf("list topics: %w", err)
	}
	var missing []string
	var mism []Mismatch
	for _, n := range names {
		d, ok := details[n]
		if !ok || errors.Is(d.Err, kerr.UnknownTopicOrPartition) {
			missing = append(missing, n)
			continue
		}
		if d.Err != nil {
			return nil, fmt.Errorf("describe topic %s: %w", n, d.Err)
		}
		if len(d.Partitions) != int(spec.Partitions) {
			mism = append(mism, Mismatch{Topic: n, Existing: len(d.Partitions), Configured: spec.Partitions})
			log.Warn("existing topic has a different partition count than configured; leaving it unchanged (changing it would reorder keys)",
				"topic", n, "partitions", len(d.Partitions), "configured", spec.Partitions)
		}
	}
	if len(missing) == 0 {
		return mism, nil
	}
	var cfgs map[string]*string
	if len(spec.Configs) > 0 {
		cfgs = map[string]*string{}
		for k, v := range spec.Configs {
			cfgs[k] = kadm.StringPtr(v)
		}
	}
	resp, err := adm.CreateTopics(ctx, spec.Partitions, spec.ReplicationFactor, cfgs, missing...)
	if err != nil {
		return nil, fmt.Errorf("create topics: %w", err)
	}
	for _, n := range missing {
		r, ok := resp[n]
		switch {
		case !ok:
			return nil, fmt.Errorf("create topic %s: missing from response", n)
		case r.Err == nil:
			log.Info("topic created", "topic", n, "partitions", spec.Partitions, "replication_factor", spec.ReplicationFactor)
		case errors.Is(r.Err, kerr.TopicAlreadyExists):
			// Created concurrently by another instance: fine.
		default:
			return nil, fmt.Errorf("create topic %s: %w", n, r.Err)
		}
	}
	return mism, nil
}

func uniq(in []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range in {
		if s != "" && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}

// Embedded is an in-process Kafka-compatible broker (franz-go's kfake) for
// `gatehouse dev` and fast unit tests; it keeps everything in memory.
type Embedded struct {
	c *kfake.Cluster
}

// StartEmbedded starts an embedded single-broker cluster listening on
// 127.0.0.1 at port (0 picks a free port).
func StartEmbedded(port int) (*Embedded, error) {
	opts := []kfake.Opt{kfake.NumBrokers(1)}
	if port != 0 {
		opts = append(opts, kfake.Ports(port))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		return nil, fmt.Errorf("start embedded kafka: %w", err)
	}
	return &Embedded{c: c}, nil
}

// Brokers returns the embedded broker's address.
func (e *Embedded) Brokers() []string { return e.c.ListenAddrs() }

// Close stops the embedded broker; its data is lost.
func (e *Embedded) Close() { e.c.Close() }

// Security is how a client reaches the brokers: TLS (nil: plaintext) and
// SASL (Mechanism PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512; "" for none).
// SecurityOf builds it from the kafka section's tls and sasl.
type Security struct {
	TLS                 *tls.Config
	Mechanism, Username string
	Password            []byte
}

// SecurityOf is the kafka section's kafka.tls and kafka.sasl, resolved
// (settings.Kafka.ResolveSecrets), as a client takes them.
func SecurityOf(k *settings.Kafka) Security {
	return Security{TLS: k.TLSConfig(), Mechanism: k.SASL.Mechanism, Username: k.SASL.Username, Password: k.SASLPassword()}
}

// SecurityOpts returns the client options of s: a TLS dialer and a SASL
// mechanism; none for a plaintext cluster. Every client gatehouse builds
// appends them.
func SecurityOpts(s Security) []kgo.Opt {
	var opts []kgo.Opt
	if s.TLS != nil {
		opts = append(opts, kgo.DialTLSConfig(s.TLS.Clone()))
	}
	user, pass := s.Username, string(s.Password)
	switch s.Mechanism {
	case "PLAIN":
		opts = append(opts, kgo.SASL(plain.Auth{User: user, Pass: pass}.AsMechanism()))
	case "SCRAM-SHA-256":
		opts = append(opts, kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha256Mechanism()))
	case "SCRAM-SHA-512":
		opts = append(opts, kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha512Mechanism()))
	}
	return opts
}

// quieter passes franz-go's log lines on with INFO demoted to DEBUG: the
// client's routine lines (connections, metadata, group joins) would
// otherwise outnumber gatehouse's own at the default level. Warnings and
// errors (a broker unreachable, a failed commit) keep their level.
type quieter struct{ kgo.Logger }

func (q quieter) Log(level kgo.LogLevel, msg string, keyvals ...any) {
	if level == kgo.LogLevelInfo {
		level = kgo.LogLevelDebug
	}
	q.Logger.Log(level, msg, keyvals...)
}
