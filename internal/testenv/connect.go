package testenv

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Connect is a Kafka Connect worker in standalone mode with Debezium's
// PostgreSQL connector on its class path (jars from
// deploy/local/connect-fetch.sh), running one connector.
type Connect struct {
	REST string // http://127.0.0.1:port
	Name string // the connector's name
	Log  string // the worker's log file
}

// StartConnect starts a standalone worker against brokers with the given
// connector properties (which must hold "name") and waits until the
// connector and its task are RUNNING. The worker is killed when the test
// ends. Strings converters are used for keys, values and headers, so
// records carry exactly the text Debezium reads from PostgreSQL.
func StartConnect(t testing.TB, brokers []string, connector map[string]string) *Connect {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(root, "deploy", "local", "connect-fetch.sh")
	out, err := exec.CommandContext(ctx, "bash", script).Output()
	if err != nil {
		t.Fatalf("%s: %v", script, err)
	}
	fields := strings.Fields(string(out))
	if len(fields) == 0 {
		t.Fatalf("%s printed no libs directory", script)
	}
	libs := fields[len(fields)-1]
	kafkaLibsDir, err := kafkaLibs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	c := &Connect{REST: "http://127.0.0.1:" + strconv.Itoa(port), Name: connector["name"], Log: filepath.Join(dir, "connect.log")}
	worker := map[string]string{
		"bootstrap.servers":                 strings.Join(brokers, ","),
		"listeners":                         c.REST,
		"key.converter":                     "org.apache.kafka.connect.storage.StringConverter",
		"value.converter":                   "org.apache.kafka.connect.storage.StringConverter",
		"header.converter":                  "org.apache.kafka.connect.storage.SimpleHeaderConverter",
		"offset.storage.file.filename":      filepath.Join(dir, "offsets"),
		"offset.flush.interval.ms":          "1000",
		"producer.linger.ms":                "0",
		"task.shutdown.graceful.timeout.ms": "2000",
	}
	wp, cp := filepath.Join(dir, "worker.properties"), filepath.Join(dir, "connector.properties")
	if err := writeProps(wp, worker); err != nil {
		t.Fatal(err)
	}
	if err := writeProps(cp, connector); err != nil {
		t.Fatal(err)
	}
	logf, err := os.Create(c.Log)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("java", append(append([]string{}, kafkaJavaOpts...),
		"-Dlog4j2.configurationFile="+filepath.Join(filepath.Dir(kafkaLibsDir), "log4j2.xml"),
		"-Dgatehouse.kafka.loglevel=WARN",
		"-cp", filepath.Join(libs, "*"),
		"org.apache.kafka.connect.cli.ConnectStandalone", wp, cp)...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	done := make(chan struct{})
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // Pdeathsig follows the forking thread
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
		t.Fatalf("start kafka connect: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	deadline := time.Now().Add(3 * time.Minute)
	for {
		state, err := c.status()
		if state == "RUNNING" {
			return c
		}
		select {
		case <-done:
			t.Fatalf("kafka connect exited during start-up\n--- %s ---\n%s", c.Log, tailFile(c.Log))
		default:
		}
		if strings.HasPrefix(state, "FAILED") || time.Now().After(deadline) {
			t.Fatalf("connector %s: %s %v\n--- %s ---\n%s", c.Name, state, err, c.Log, tailFile(c.Log))
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// status returns "RUNNING" once the connector and every task run, else
// the states seen (a FAILED state with its trace).
func (c *Connect) status() (string, error) {
	resp, err := http.Get(c.REST + "/connectors/" + c.Name + "/status")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var st struct {
		Connector struct{ State, Trace string }   `json:"connector"`
		Tasks     []struct{ State, Trace string } `json:"tasks"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return "", err
	}
	if st.Connector.State == "FAILED" {
		return "FAILED connector: " + st.Connector.Trace, nil
	}
	if st.Connector.State != "RUNNING" || len(st.Tasks) == 0 {
		return st.Connector.State, nil
	}
	for _, task := range st.Tasks {
		if task.State == "FAILED" {
			return "FAILED task: " + task.Trace, nil
		}
		if task.State != "RUNNING" {
			return task.State, nil
		}
	}
	return "RUNNING", nil
}

func writeProps(path string, m map[string]string) error {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b bytes.Buffer
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%s\n", k, m[k])
	}
	return os.WriteFile(path, b.Bytes(), 0o600)
}
