package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gatehouse/gatehouse/internal/kafka"
	"github.com/gatehouse/gatehouse/internal/testenv"
)

// bench holds what every run shares.
type bench struct {
	o        *options
	log      io.Writer
	dir      string
	pg       *testenv.PG
	k        *testenv.Kafka
	dbURL    string
	pool     *pgxpool.Pool
	adm      *kadm.Client
	pgVer    string
	kVer     string
	runSeq   int
	profiled bool // the -cpuprofile profile was taken
}

func setup(ctx context.Context, o *options, log io.Writer) (*bench, error) {
	b := &bench{o: o, log: log}
	var err error
	if b.dir = o.pgDir; b.dir == "" {
		if b.dir, err = os.MkdirTemp("", "relaybench-"); err != nil {
			return nil, err
		}
	}
	fmt.Fprintf(log, "relaybench: starting PostgreSQL (fsync on) in %s\n", b.dir)
	if b.pg, err = testenv.StartPG(ctx, b.dir, false); err != nil {
		return nil, fmt.Errorf("start postgres: %w", err)
	}
	fmt.Fprintln(log, "relaybench: starting Kafka")
	if b.k, err = testenv.StartKafka(ctx, ""); err != nil {
		b.close()
		return nil, fmt.Errorf("start kafka: %w", err)
	}
	if b.dbURL, err = testenv.CreateDatabase(ctx, b.pg.AdminURL(), true); err != nil {
		b.close()
		return nil, err
	}
	if b.pool, err = pgxpool.New(ctx, b.dbURL); err != nil {
		b.close()
		return nil, err
	}
	_ = b.pool.QueryRow(ctx, `SHOW server_version`).Scan(&b.pgVer)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.k.Brokers...))
	if err != nil {
		b.close()
		return nil, err
	}
	b.adm = kadm.NewClient(cl)
	b.kVer = kafkaVersion()
	return b, nil
}

func (b *bench) close() {
	if b.adm != nil {
		b.adm.Close()
	}
	if b.pool != nil {
		b.pool.Close()
	}
	if b.k != nil {
		_ = b.k.Stop()
		_ = os.RemoveAll(b.k.Dir)
	}
	if b.pg != nil {
		_ = b.pg.Stop(false)
	}
	if b.o.pgDir == "" && b.dir != "" {
		_ = os.RemoveAll(b.dir)
	}
}

// newTopic creates a fresh topic for one run.
func (b *bench) newTopic(ctx context.Context, name string) (string, error) {
	b.runSeq++
	topic := fmt.Sprintf("bench.%02d.%s", b.runSeq, name)
	_, err := kafka.EnsureTopics(ctx, b.adm, slog.New(slog.DiscardHandler),
		kafka.TopicSpec{Partitions: int32(b.o.partitions), ReplicationFactor: 1}, topic)
	return topic, err
}

func kafkaVersion() string {
	out, err := exec.Command("bash", "-c", `ls "$(bash deploy/local/kafka-fetch.sh | tail -1)" | grep -m1 -o '^kafka-clients-[0-9.]*' | sed 's/kafka-clients-//; s/\.$//'`).Output()
	if err != nil {
		return "4.x"
	}
	if v := strings.TrimSpace(string(out)); v != "" {
		return v
	}
	return "4.x"
}

func (b *bench) logf(format string, args ...any) {
	fmt.Fprintf(b.log, "relaybench: "+format+"\n", args...)
}

var _ = time.Second
