package testenv

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// format is the equivalent of `kafka-storage format -t <random id>` with a
// static voter set: the cluster-independent bootstrap.checkpoint comes from a
// template formatted once per jar cache, meta.properties is written here with
// a fresh cluster id and directory id. That saves one JVM start per broker.
func (k *Kafka) format(ctx context.Context) error {
	tmpl, err := kafkaBootstrapTemplate(ctx, k.libs, k.log4j)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(k.dataDir(), 0o755); err != nil {
		return fmt.Errorf("kafka data dir: %w", err)
	}
	if err := os.WriteFile(filepath.Join(k.dataDir(), "bootstrap.checkpoint"), tmpl, 0o644); err != nil {
		return fmt.Errorf("write bootstrap.checkpoint: %w", err)
	}
	cluster := k.clusterID
	if cluster == "" {
		cluster = kafkaUUID()
	}
	meta := fmt.Sprintf("#\n#written by gatehouse testenv\nnode.id=%d\ndirectory.id=%s\nversion=1\ncluster.id=%s\n",
		k.nodeID(), kafkaUUID(), cluster)
	if err := os.WriteFile(filepath.Join(k.dataDir(), "meta.properties"), []byte(meta), 0o644); err != nil {
		return fmt.Errorf("write meta.properties: %w", err)
	}
	return nil
}

var kafkaTemplate struct {
	sync.Mutex
	data map[string][]byte
}

// kafkaBootstrapTemplate returns bootstrap.checkpoint for the jars in libs,
// running `StorageTool format` once and caching the file next to libs.
func kafkaBootstrapTemplate(ctx context.Context, libs, log4j string) ([]byte, error) {
	kafkaTemplate.Lock()
	defer kafkaTemplate.Unlock()
	if b, ok := kafkaTemplate.data[libs]; ok {
		return b, nil
	}
	cached := filepath.Join(filepath.Dir(libs), "bootstrap.checkpoint")
	if kafkaTemplate.data == nil {
		kafkaTemplate.data = map[string][]byte{}
	}
	if b, err := os.ReadFile(cached); err == nil && len(b) > 0 {
		kafkaTemplate.data[libs] = b
		return b, nil
	}
	tmp, err := os.MkdirTemp("", "gatehouse-kafka-format-")
	if err != nil {
		return nil, fmt.Errorf("kafka format dir: %w", err)
	}
	defer os.RemoveAll(tmp)
	props := "process.roles=broker,controller\nnode.id=1\n" +
		"controller.quorum.voters=1@127.0.0.1:9093\n" +
		"listeners=PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093\n" +
		"controller.listener.names=CONTROLLER\nlog.dirs=" + filepath.Join(tmp, "data") + "\n"
	propsPath := filepath.Join(tmp, "server.properties")
	if err := os.WriteFile(propsPath, []byte(props), 0o644); err != nil {
		return nil, fmt.Errorf("write format properties: %w", err)
	}
	cmd := exec.CommandContext(ctx, "java", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xshare:auto",
		"-Dlog4j2.configurationFile="+log4j, "-cp", filepath.Join(libs, "*"),
		"kafka.tools.StorageTool", "format", "-t", kafkaUUID(), "-c", propsPath)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("kafka storage format: %w: %s", err, lastLines(out, 40))
	}
	b, err := os.ReadFile(filepath.Join(tmp, "data", "bootstrap.checkpoint"))
	if err != nil {
		return nil, fmt.Errorf("read formatted bootstrap.checkpoint: %w", err)
	}
	// Publish atomically: other test binaries may read it concurrently.
	part := cached + ".tmp." + strconv.Itoa(os.Getpid())
	if err := os.WriteFile(part, b, 0o644); err == nil {
		_ = os.Rename(part, cached)
	}
	kafkaTemplate.data[libs] = b
	return b, nil
}

// kafkaLibs returns the directory of Kafka jars, running the fetch script
// (a fast no-op once the cache is complete).
func kafkaLibs(ctx context.Context) (string, error) {
	if v := os.Getenv(KafkaLibsEnv); v != "" {
		return v, nil
	}
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	script := filepath.Join(root, "deploy", "local", "kafka-fetch.sh")
	cmd := exec.CommandContext(ctx, "bash", script)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s: %w: %s", script, err, lastLines(stderr.Bytes(), 40))
	}
	fields := strings.Fields(string(out))
	if len(fields) == 0 {
		return "", fmt.Errorf("%s printed no libs directory", script)
	}
	return fields[len(fields)-1], nil
}

// kafkaUUID returns a random Kafka Uuid in its base64url string form.
func kafkaUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}
