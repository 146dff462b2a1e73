package testenv

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// JaegerModule is the pinned Jaeger release: its all-in-one binary (an
// OpenTelemetry Collector distribution) with in-memory storage, an OTLP
// receiver and the query API.
const JaegerModule = "github.com/jaegertracing/jaeger@v1.76.0"

// jaegerBinary downloads the pinned module through the Go proxy and builds
// ./cmd/jaeger into the user cache on first use (goTool; about three
// minutes on a 2-core machine).
func jaegerBinary(ctx context.Context) (string, error) {
	dl := exec.CommandContext(ctx, "go", "mod", "download", "-json", JaegerModule)
	dl.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	dl.Dir = os.TempDir()
	out, err := dl.Output()
	if err != nil {
		var ee *exec.ExitError
		stderr := ""
		if errors.As(err, &ee) {
			stderr = string(ee.Stderr)
		}
		return "", fmt.Errorf("go mod download %s: %w: %s", JaegerModule, err, stderr)
	}
	var mod struct{ Dir, Error string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		return "", fmt.Errorf("go mod download %s: %s", JaegerModule, mod.Error)
	}
	return goTool{name: "jaeger", key: "v1.76.0", dir: mod.Dir, pkg: "./cmd/jaeger",
		env: []string{"GOWORK=off", "GOFLAGS=-mod=mod"}}.build(ctx)
}

// Jaeger is a running Jaeger all-in-one.
type Jaeger struct {
	// OTLP is the OTLP/HTTP traces URL (http://127.0.0.1:port/v1/traces);
	// OTLPBase the same without the path (OTEL_EXPORTER_OTLP_ENDPOINT).
	OTLP, OTLPBase string
	// Query is the base URL of the query API and UI (/api/traces…).
	Query string
	cmd   *exec.Cmd
	log   string
}

const jaegerConfig = `service:
  extensions: [jaeger_storage, jaeger_query, healthcheckv2]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
extensions:
  healthcheckv2:
    use_v2: true
    http:
      endpoint: %q
  jaeger_query:
    storage:
      traces: memstore
    http:
      endpoint: %q
    grpc:
      endpoint: %q
  jaeger_storage:
    backends:
      memstore:
        memory:
          max_traces: 100000
receivers:
  otlp:
    protocols:
      http:
        endpoint: %q
processors:
  batch:
    timeout: 200ms
exporters:
  jaeger_storage_exporter:
    trace_storage: memstore
`

// StartJaeger runs Jaeger on free loopback ports, with its config and log
// in dir, and returns once its query API answers.
func StartJaeger(ctx context.Context, dir string) (*Jaeger, error) {
	bin, err := jaegerBinary(ctx)
	if err != nil {
		return nil, err
	}
	addrs := make([]string, 4)
	for i := range addrs {
		if addrs[i], err = FreeAddr(); err != nil {
			return nil, err
		}
	}
	cfg := filepath.Join(dir, "jaeger.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(jaegerConfig, addrs[0], addrs[1], addrs[2], addrs[3])), 0o644); err != nil {
		return nil, err
	}
	j := &Jaeger{OTLPBase: "http://" + addrs[3], OTLP: "http://" + addrs[3] + "/v1/traces", Query: "http://" + addrs[1],
		log: filepath.Join(dir, "jaeger.log")}
	logf, err := os.Create(j.log)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	j.cmd = exec.Command(bin, "--config", cfg)
	j.cmd.Stdout, j.cmd.Stderr = logf, logf
	j.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := j.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start jaeger: %w", err)
	}
	exited := make(chan struct{})
	go func() { _ = j.cmd.Wait(); close(exited) }()
	deadline := time.Now().Add(time.Minute)
	for {
		resp, err := http.Get(j.Query + "/api/services")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return j, nil
			}
		}
		select {
		case <-exited:
			return nil, fmt.Errorf("jaeger exited:\n%s", tailFile(j.log))
		case <-ctx.Done():
			j.Stop()
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			j.Stop()
			return nil, fmt.Errorf("jaeger not ready after a minute:\n%s", tailFile(j.log))
		}
	}
}

// Pid is the Jaeger process's id (0 before it started).
func (j *Jaeger) Pid() int {
	if j.cmd == nil || j.cmd.Process == nil {
		return 0
	}
	return j.cmd.Process.Pid
}

// Stop ends the Jaeger process.
func (j *Jaeger) Stop() {
	if j.cmd != nil && j.cmd.Process != nil {
		_ = j.cmd.Process.Kill()
	}
}

// PrivateJaeger starts a Jaeger for this test and stops it when the test
// ends; it fails the test, never skips, when Jaeger cannot be had.
func PrivateJaeger(t testing.TB) *Jaeger {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	j, err := StartJaeger(ctx, t.TempDir())
	if err != nil {
		t.Fatalf("start jaeger: %v", err)
	}
	t.Cleanup(j.Stop)
	return j
}

// JaegerSpan is a span as Jaeger's query API returns it.
type JaegerSpan struct {
	TraceID       string `json:"traceID"`
	SpanID        string `json:"spanID"`
	OperationName string `json:"operationName"`
	References    []struct {
		RefType string `json:"refType"` // CHILD_OF or FOLLOWS_FROM (links)
		TraceID string `json:"traceID"`
		SpanID  string `json:"spanID"`
	} `json:"references"`
	StartTime int64 `json:"startTime"` // µs since the epoch
	Duration  int64 `json:"duration"`
	Tags      []struct {
		Key   string `json:"key"`
		Type  string `json:"type"`
		Value any    `json:"value"`
	} `json:"tags"`
	ProcessID string `json:"processID"`
	Service   string `json:"-"` // filled from the trace's processes
}

// Tag returns the value of a span tag as text, "" when absent.
func (s JaegerSpan) Tag(key string) string {
	for _, t := range s.Tags {
		if t.Key == key {
			return fmt.Sprint(t.Value)
		}
	}
	return ""
}

// Traces returns the traces Jaeger holds for service (at most limit), each
// as its spans with Service filled in.
func (j *Jaeger) Traces(service string, limit int) (map[string][]JaegerSpan, error) {
	q := url.Values{"service": {service}, "limit": {fmt.Sprint(limit)}, "lookback": {"1h"}}
	return j.get("/api/traces?" + q.Encode())
}

// Trace returns one trace's spans (an empty map when Jaeger has none).
func (j *Jaeger) Trace(traceID string) ([]JaegerSpan, error) {
	m, err := j.get("/api/traces/" + traceID)
	if err != nil {
		return nil, err
	}
	return m[traceID], nil
}

func (j *Jaeger) get(path string) (map[string][]JaegerSpan, error) {
	resp, err := http.Get(j.Query + path)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return map[string][]JaegerSpan{}, nil
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("jaeger %s: status %d", path, resp.StatusCode)
	}
	var body struct {
		Data []struct {
			TraceID   string                                  `json:"traceID"`
			Spans     []JaegerSpan                            `json:"spans"`
			Processes map[string]struct{ ServiceName string } `json:"processes"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, fmt.Errorf("jaeger %s: %w", path, err)
	}
	out := map[string][]JaegerSpan{}
	for _, t := range body.Data {
		for _, s := range t.Spans {
			s.Service = t.Processes[s.ProcessID].ServiceName
			out[t.TraceID] = append(out[t.TraceID], s)
		}
	}
	return out, nil
}
