package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// KafkaBrokersEnv names a comma-separated broker list of an already running
// Kafka that KafkaForTest uses instead of starting a private broker.
const KafkaBrokersEnv = "GATEHOUSE_TEST_KAFKA_BROKERS"

// KafkaLibsEnv, when set, names a directory of Kafka jars to use instead of
// running deploy/local/kafka-fetch.sh.
const KafkaLibsEnv = "GATEHOUSE_KAFKA_LIBS"

// KafkaLogLevelEnv sets the broker's log4j root level (default WARN); the
// log is Dir/broker.log.
const KafkaLogLevelEnv = "GATEHOUSE_KAFKA_LOGLEVEL"

func kafkaLogLevel() string {
	if v := os.Getenv(KafkaLogLevelEnv); v != "" {
		return v
	}
	return "WARN"
}

// KafkaJavaOptsEnv, when set, replaces the broker's default JVM options.
const KafkaJavaOptsEnv = "GATEHOUSE_KAFKA_JAVA_OPTS"

const (
	kafkaReadyTimeout = 60 * time.Second
	kafkaStopTimeout  = 20 * time.Second
)

// kafkaJavaOpts favour start-up time on small machines: C1 only, serial GC,
// a small heap, class-data sharing.
var kafkaJavaOpts = []string{
	"-Xmx512m", "-Xms256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
	"-Xshare:auto", "-Djava.awt.headless=true", "-Djava.net.preferIPv4Stack=true",
}

// Kafka is a running single-node KRaft broker (combined broker+controller).
type Kafka struct {
	Brokers []string // "127.0.0.1:port" of the PLAINTEXT listener
	Dir     string   // config, data (Dir/data) and log (Dir/broker.log)

	libs           string
	log4j          string
	brokerPort     int
	controllerPort int
	ownsDir        bool // Dir was created by StartKafka; KafkaCleanup removes it

	// A node of a KafkaCluster (zero for a single broker): its node.id,
	// the cluster id shared by the nodes, the static voter set, and the
	// replication of internal topics and new topics.
	node      int
	clusterID string
	voters    string
	replicas  int
	// extraProps are appended to server.properties; extraListeners to
	// listeners (and advertised.listeners).
	extraProps     []string
	extraListeners []string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited
}

// StartKafka starts a fresh private broker: KRaft, one node acting as broker
// and controller, random free ports, a random cluster id and data under dir
// (a new temporary directory when dir is ""). It fetches the jars with
// deploy/local/kafka-fetch.sh when needed and returns once the broker answers
// a metadata request, or an error carrying the tail of the broker log.
func StartKafka(ctx context.Context, dir string) (*Kafka, error) {
	libs, err := kafkaLibs(ctx)
	if err != nil {
		return nil, err
	}
	k := &Kafka{libs: libs, log4j: filepath.Join(filepath.Dir(libs), "log4j2.xml")}
	if dir == "" {
		if dir, err = os.MkdirTemp("", "gatehouse-kafka-"); err != nil {
			return nil, fmt.Errorf("kafka temp dir: %w", err)
		}
		k.ownsDir = true
	}
	k.Dir = dir
	// Another process may bind one of the chosen ports before the broker
	// does; start again on new ports (and fresh storage) when that happens.
	for attempt := 1; ; attempt++ {
		err = k.startOnFreePorts(ctx)
		if err == nil || attempt == 3 || !strings.Contains(err.Error(), "Address already in use") {
			break
		}
		if rmErr := os.RemoveAll(k.dataDir()); rmErr != nil {
			return nil, fmt.Errorf("kafka data dir: %w", rmErr)
		}
	}
	if err != nil {
		return nil, err
	}
	return k, nil
}

func (k *Kafka) startOnFreePorts(ctx context.Context) (err error) {
	if k.brokerPort, err = freePort(); err != nil {
		return err
	}
	if k.controllerPort, err = freePort(); err != nil {
		return err
	}
	k.Brokers = []string{"127.0.0.1:" + strconv.Itoa(k.brokerPort)}
	if err := k.writeConfig(); err != nil {
		return err
	}
	if err := k.format(ctx); err != nil {
		return err
	}
	return k.start(ctx)
}

// Stop shuts the broker down with SIGTERM, then SIGKILL after a grace period,
// and waits for it to exit. Stopping a stopped broker is a no-op.
func (k *Kafka) Stop() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.stopLocked(syscall.SIGTERM)
}

// Kill ends the broker with SIGKILL (a crash) and waits for it to exit.
func (k *Kafka) Kill() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.stopLocked(syscall.SIGKILL)
}

// Restart stops the broker if it is running and starts it again on the same
// ports with the same data directory.
func (k *Kafka) Restart(ctx context.Context) error {
	if err := k.Stop(); err != nil {
		return err
	}
	return k.start(ctx)
}

func (k *Kafka) stopLocked(sig syscall.Signal) error {
	if k.cmd == nil {
		return nil
	}
	defer func() { k.cmd = nil }()
	select {
	case <-k.done:
		return nil
	default:
	}
	if err := k.cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("signal kafka: %w", err)
	}
	select {
	case <-k.done:
		return nil
	case <-time.After(kafkaStopTimeout):
	}
	if err := k.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("kill kafka: %w", err)
	}
	<-k.done
	return nil
}

func (k *Kafka) logPath() string   { return filepath.Join(k.Dir, "broker.log") }
func (k *Kafka) dataDir() string   { return filepath.Join(k.Dir, "data") }
func (k *Kafka) propsPath() string { return filepath.Join(k.Dir, "server.properties") }

func (k *Kafka) nodeID() int {
	if k.node == 0 {
		return 1
	}
	return k.node
}

func (k *Kafka) writeConfig() error {
	b, c := strconv.Itoa(k.brokerPort), strconv.Itoa(k.controllerPort)
	voters := k.voters
	if voters == "" {
		voters = "1@127.0.0.1:" + c
	}
	rf, isr := 1, 1
	if k.replicas > 1 {
		rf, isr = k.replicas, 2
	}
	r, i := strconv.Itoa(rf), strconv.Itoa(isr)
	listeners := append([]string{"PLAINTEXT://127.0.0.1:" + b}, k.extraListeners...)
	props := strings.Join(append([]string{
		"process.roles=broker,controller",
		"node.id=" + strconv.Itoa(k.nodeID()),
		"controller.quorum.voters=" + voters,
		"listeners=" + strings.Join(listeners, ",") + ",CONTROLLER://127.0.0.1:" + c,
		"advertised.listeners=" + strings.Join(listeners, ","),
		"controller.listener.names=CONTROLLER",
		"inter.broker.listener.name=PLAINTEXT",
		"log.dirs=" + k.dataDir(),
		"auto.create.topics.enable=false",
		"num.partitions=1",
		"default.replication.factor=" + r,
		"min.insync.replicas=" + i,
		"offsets.topic.replication.factor=" + r,
		"offsets.topic.num.partitions=1",
		"transaction.state.log.replication.factor=" + r,
		"transaction.state.log.min.isr=" + i,
		"transaction.state.log.num.partitions=1",
		"share.coordinator.state.topic.replication.factor=" + r,
		"share.coordinator.state.topic.min.isr=" + i,
		"group.initial.rebalance.delay.ms=0",
		// A restarted broker must wait for its previous incarnation's session
		// to expire before it can register again (after a crash): keep that
		// short so crash/restart tests stay fast.
		"broker.session.timeout.ms=3000",
		"broker.heartbeat.interval.ms=500",
		"num.network.threads=2",
		"num.io.threads=2",
		"num.recovery.threads.per.data.dir=1",
		"background.threads=2",
		"log.cleaner.enable=true",
		"log.cleaner.threads=1",
		"log.cleaner.dedupe.buffer.size=2097152",
	}, k.extraProps...), "\n") + "\n"
	if !strings.Contains(props, "listener.security.protocol.map=") {
		props += "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT\n"
	}
	if err := os.MkdirAll(k.Dir, 0o755); err != nil {
		return fmt.Errorf("kafka dir: %w", err)
	}
	if err := os.WriteFile(k.propsPath(), []byte(props), 0o644); err != nil {
		return fmt.Errorf("write server.properties: %w", err)
	}
	return nil
}

// start launches the JVM and waits until the broker answers metadata.
func (k *Kafka) start(ctx context.Context) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.cmd != nil {
		return errors.New("kafka: already running")
	}
	logf, err := os.OpenFile(k.logPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("kafka log: %w", err)
	}
	opts := kafkaJavaOpts
	if v := os.Getenv(KafkaJavaOptsEnv); v != "" {
		opts = strings.Fields(v)
	}
	args := append(append([]string{}, opts...),
		"-Dlog4j2.configurationFile="+k.log4j,
		"-Dgatehouse.kafka.loglevel="+kafkaLogLevel(),
		"-cp", filepath.Join(k.libs, "*"),
		"kafka.Kafka", k.propsPath())
	cmd := exec.Command("java", args...)
	cmd.Dir = k.Dir
	cmd.Stdout, cmd.Stderr = logf, logf
	// The broker dies with the thread that started it, so a crashed or
	// killed test binary never leaves a JVM behind.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	done := make(chan struct{})
	started := make(chan error, 1)
	go func() {
		// Pdeathsig fires when the forking OS thread exits: keep it alive,
		// locked to this goroutine, for as long as the JVM runs.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		defer logf.Close()
		if err := cmd.Start(); err != nil {
			started <- err
			close(done)
			return
		}
		started <- nil
		_ = cmd.Wait()
		close(done)
	}()
	if err := <-started; err != nil {
		return fmt.Errorf("start kafka: %w", err)
	}
	k.cmd, k.done = cmd, done
	if err := k.waitReady(ctx); err != nil {
		_ = k.stopLocked(syscall.SIGKILL)
		return fmt.Errorf("%w\n--- broker log tail (%s) ---\n%s", err, k.logPath(), k.logTail())
	}
	return nil
}

func (k *Kafka) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, kafkaReadyTimeout)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.Brokers...), kgo.DialTimeout(time.Second),
		kgo.RetryTimeout(time.Second), kgo.RequestRetries(0))
	if err != nil {
		return fmt.Errorf("kafka ready client: %w", err)
	}
	defer cl.Close()
	var lastErr error
	for {
		select {
		case <-k.done:
			return fmt.Errorf("kafka exited during start-up: %s", k.cmd.ProcessState)
		default:
		}
		rctx, rcancel := context.WithTimeout(ctx, 2*time.Second)
		resp, err := kmsg.NewPtrMetadataRequest().RequestWith(rctx, cl)
		rcancel()
		if err == nil && len(resp.Brokers) > 0 {
			return nil
		}
		if err != nil {
			lastErr = err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kafka not ready at %s: %w (last error: %v)", k.Brokers[0], ctx.Err(), lastErr)
		case <-k.done:
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (k *Kafka) logTail() string {
	b, err := os.ReadFile(k.logPath())
	if err != nil {
		return fmt.Sprintf("(read broker log: %v)", err)
	}
	return lastLines(b, 40)
}
