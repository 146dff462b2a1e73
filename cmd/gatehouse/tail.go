package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gatehouse/gatehouse/internal/config"
	"github.com/gatehouse/gatehouse/internal/kafka"
)

// tailLine is one printed record.
type tailLine struct {
	Topic     string            `json:"topic"`
	Partition int32             `json:"partition"`
	Offset    int64             `json:"offset"`
	Timestamp time.Time         `json:"timestamp"`
	Key       string            `json:"key"`
	Headers   map[string]string `json:"headers"`
	Value     json.RawMessage   `json:"value"`
}

func runTail(ctx context.Context, e env, args []string) error {
	fs, cfgPath := newFlags("tail", e)
	topic := fs.String("topic", "", "topic to read (required), e.g. gatehouse.webhooks.demo")
	brokers := fs.String("brokers", "", "comma-separated brokers (default: kafka.brokers, else the embedded broker of gatehouse dev, 127.0.0.1:9092)")
	fromStart := fs.Bool("from-beginning", false, "read the topic from its first record instead of only new ones")
	count := fs.Int("count", 0, "exit after this many records (0: run until interrupted)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *topic == "" {
		return errors.New("tail: --topic is required")
	}
	explicit := false
	fs.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "config" })
	// Only the kafka section's secrets are used (SASL).
	cfg, err := config.LoadFor(*cfgPath, !explicit, e.getenv, func(path string) bool { return strings.HasPrefix(path, "kafka.") })
	if err != nil {
		return err
	}
	seeds := cfg.Kafka.Brokers
	if *brokers != "" {
		seeds = strings.Split(*brokers, ",")
	}
	if len(seeds) == 0 {
		seeds = []string{"127.0.0.1:9092"}
	}
	opts, err := kafka.Options(kafka.ClientConfig{Brokers: seeds, ClientID: cfg.Kafka.ClientID, Name: "tail"})
	if err != nil {
		return err
	}
	offset := kgo.NewOffset().AtEnd()
	if *fromStart {
		offset = kgo.NewOffset().AtStart()
	}
	opts = append(opts, kgo.ConsumeTopics(*topic), kgo.ConsumeResetOffset(offset))
	opts = append(opts, kafka.SecurityOpts(kafka.SecurityOf(&cfg.Kafka))...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return fmt.Errorf("kafka client: %w", err)
	}
	defer cl.Close()
	// Fail within seconds, naming the brokers, instead of waiting silently.
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	err = cl.Ping(pctx)
	cancel()
	if err != nil {
		return fmt.Errorf("tail: no kafka broker of %s answers: %w", strings.Join(seeds, ","), err)
	}
	enc := json.NewEncoder(e.stdout)
	seen := 0
	for {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return nil
		}
		for _, fe := range fetches.Errors() {
			fmt.Fprintf(e.stderr, "tail: %s[%d]: %v\n", fe.Topic, fe.Partition, fe.Err)
		}
		var werr error
		fetches.EachRecord(func(r *kgo.Record) {
			if werr != nil || (*count > 0 && seen >= *count) {
				return
			}
			line := tailLine{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Timestamp: r.Timestamp,
				Key: string(r.Key), Headers: map[string]string{}, Value: r.Value}
			if !json.Valid(r.Value) {
				b, _ := json.Marshal(string(r.Value))
				line.Value = b
			}
			for _, h := range r.Headers {
				line.Headers[h.Key] = string(h.Value)
			}
			werr = enc.Encode(line)
			seen++
		})
		if werr != nil {
			return fmt.Errorf("tail: write: %w", werr)
		}
		if *count > 0 && seen >= *count {
			return nil
		}
	}
}
