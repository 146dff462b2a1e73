package helm

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"helm.sh/helm/v4/pkg/action"
	"sigs.k8s.io/yaml"

	"github.com/gatehouse/gatehouse/internal/config"
	"github.com/gatehouse/gatehouse/internal/version"
)

const chartDir = "gatehouse"

// valueSets are the chart's defaults and each example values file.
func valueSets(t *testing.T) map[string][]string {
	t.Helper()
	sets := map[string][]string{"defaults": nil}
	examples, _ := filepath.Glob(filepath.Join(chartDir, "examples", "*.yaml"))
	if len(examples) == 0 {
		t.Fatal("no example values in gatehouse/examples")
	}
	for _, f := range examples {
		sets[filepath.Base(f)] = []string{f}
	}
	return sets
}

// TestRender renders the chart with its defaults and each example (a
// strict decode of every object into the API types), checks the
// invariants, and parses the ConfigMap with gatehouse's own parser.
func TestRender(t *testing.T) {
	for name, files := range valueSets(t) {
		t.Run(name, func(t *testing.T) {
			r, err := Render(chartDir, files, nil)
			if err != nil {
				t.Fatal(err)
			}
			o := r.Objects
			for _, err := range Check(o, Expect{MonitoringNamespace: "monitoring", RelayReplicas: 2}) {
				t.Error(err)
			}
			cfg := parseConfig(t, o.ConfigMaps["gatehouse-config"].Data["gatehouse.yaml"])
			if mig := o.ConfigMaps["gatehouse-migrate-config"]; mig == nil || mig.Data["gatehouse.yaml"] != o.ConfigMaps["gatehouse-config"].Data["gatehouse.yaml"] {
				t.Error("the migration's configuration differs from the stages'")
			}
			consume := o.Deployments["gatehouse-consume"]
			if r := *consume.Spec.Replicas; r > cfg.Kafka.Partitions {
				t.Errorf("consume: %d replicas for %d partitions", r, cfg.Kafka.Partitions)
			}
			grace := consume.Spec.Template.Spec.TerminationGracePeriodSeconds
			if grace == nil || float64(*grace) <= cfg.Consumers.DrainTimeout.Seconds() {
				t.Errorf("consume: terminationGracePeriodSeconds %v must exceed consumers.drain_timeout %v", grace, cfg.Consumers.DrainTimeout)
			}
			if len(o.ServiceMonitors) != 1 || len(o.PrometheusRules) != 1 {
				t.Errorf("monitoring on by default: %d ServiceMonitors, %d PrometheusRules", len(o.ServiceMonitors), len(o.PrometheusRules))
			}
			if !strings.Contains(r.YAML(), "image: "+map[bool]string{true: "gatehouse:" + version.Release, false: "registry.example.com/gatehouse:" + version.Release}[name == "defaults"]) {
				t.Error("the image is not the release's")
			}
		})
	}
}

// parseConfig parses the rendered gatehouse.yaml with config.Parse, each
// file: reference read from a temporary file standing in for the Secret's
// key, each env: reference from a stand-in variable.
func parseConfig(t *testing.T, yml string) *config.Config {
	t.Helper()
	if yml == "" {
		t.Fatal("no gatehouse.yaml in the ConfigMap")
	}
	dir := t.TempDir()
	env := map[string]string{}
	for _, m := range regexp.MustCompile(`\b(file|env):([^\s"']+)`).FindAllStringSubmatch(yml, -1) {
		if m[1] == "env" {
			env[m[2]] = "postgres://u@db/gatehouse"
			continue
		}
		p := filepath.Join(dir, m[2])
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("postgres://u@db/gatehouse\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	yml = strings.ReplaceAll(yml, "file:/", "file:"+dir+"/")
	cfg, err := config.Parse([]byte(yml), func(k string) string { return env[k] })
	if err != nil {
		t.Fatalf("the ConfigMap's gatehouse.yaml: %v\n%s", err, yml)
	}
	if err := cfg.RequireDatabase(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestLint: the SDK's lint action, strict (warnings fail), with the
// defaults and each example.
func TestLint(t *testing.T) {
	for name, files := range valueSets(t) {
		vals := map[string]any{}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if err := yaml.Unmarshal(b, &vals); err != nil {
				t.Fatal(err)
			}
		}
		l := action.NewLint()
		l.Strict = true
		l.Namespace = Namespace
		res := l.Run([]string{chartDir}, vals)
		for _, err := range res.Errors {
			t.Errorf("%s: helm lint: %v", name, err)
		}
		if res.TotalChartsLinted != 1 {
			t.Errorf("%s: %d charts linted", name, res.TotalChartsLinted)
		}
	}
}

// TestSchemaRefusesBadValues: `helm install` refuses a misspelled key of
// gatehouse's configuration, a secret written into values, and a
// misspelled chart value, each naming the key; rendering refuses a
// loopback admin listener, a secret reference no Secret provides and more
// consumers than partitions.
func TestSchemaRefusesBadValues(t *testing.T) {
	for name, c := range map[string]struct {
		set  map[string]any
		want string
	}{
		"misspelled config key":  {map[string]any{"config": map[string]any{"ingest": map[string]any{"max_unverified_bytez": 1}}}, "max_unverified_bytez"},
		"unknown config section": {map[string]any{"config": map[string]any{"relai": map[string]any{"mode": "poll"}}}, "relai"},
		"secret in values":       {map[string]any{"config": map[string]any{"database_url": "postgres://u:hunter2@db/gatehouse"}}, "database_url"},
		"misspelled chart value": {map[string]any{"serve": map[string]any{"replicaz": 3}}, "replicaz"},
		"three relays":           {map[string]any{"relay": map[string]any{"replicas": 3}}, "replicas"},
		"loopback admin":         {map[string]any{"config": map[string]any{"admin_listen": "127.0.0.1:9090"}}, "loopback"},
		"unmounted secret file":  {map[string]any{"config": map[string]any{"database_url": "file:/etc/other/database-url"}}, "file:/etc/other/database-url"},
		"unset secret env":       {map[string]any{"config": map[string]any{"database_url": "env:DATABASE_URL"}}, "env:DATABASE_URL"},
		"consumers > partitions": {map[string]any{"consume": map[string]any{"replicas": 7}}, "exceeds config.kafka.partitions"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Render(chartDir, nil, c.set)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("want an error naming %q, got %v", c.want, err)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("the error shows the secret: %v", err)
			}
		})
	}
	// The same from a values file, as `helm install -f` reads it.
	_, err := Render(chartDir, []string{filepath.Join("testdata", "misspelled-key.yaml")}, nil)
	if err == nil || !strings.Contains(err.Error(), "max_unverified_bytez") || !strings.Contains(err.Error(), "/config/ingest") {
		t.Errorf("a values file with a misspelled config key: want a schema error naming it, got %v", err)
	}
	// A secret from secretEnv is accepted.
	r, err := Render(chartDir, nil, map[string]any{
		"config":    map[string]any{"database_url": "env:DATABASE_URL"},
		"secretEnv": []any{map[string]any{"name": "DATABASE_URL", "secretName": "db", "key": "url"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range Check(r.Objects, Expect{MonitoringNamespace: "monitoring", RelayReplicas: 2}) {
		t.Error(err)
	}
}

// TestSwitches: the monitoring objects and the NetworkPolicy can be
// switched off; the relay is not rendered when another CDC reads the outbox.
func TestSwitches(t *testing.T) {
	off := map[string]any{"enabled": false}
	r, err := Render(chartDir, nil, map[string]any{
		"monitoring":    map[string]any{"serviceMonitor": off, "prometheusRule": off, "dashboard": off},
		"networkPolicy": off,
	})
	if err != nil {
		t.Fatal(err)
	}
	o := r.Objects
	if len(o.ServiceMonitors)+len(o.PrometheusRules)+len(o.NetworkPolicies) > 0 || o.ConfigMaps["gatehouse-dashboard"] != nil {
		t.Errorf("switched off, yet rendered: %d ServiceMonitors, %d PrometheusRules, %d NetworkPolicies, dashboard %v",
			len(o.ServiceMonitors), len(o.PrometheusRules), len(o.NetworkPolicies), o.ConfigMaps["gatehouse-dashboard"] != nil)
	}
	for _, err := range Check(o, Expect{RelayReplicas: 2}) {
		t.Error(err)
	}
	r, err = Render(chartDir, nil, map[string]any{"config": map[string]any{"relay": map[string]any{"mode": "external"}}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Objects.Deployments["gatehouse-relay"] != nil {
		t.Error("relay.mode external: the relay is rendered")
	}
}

// TestMonitoringFromTheTestedFiles: the PrometheusRule's groups are those
// of deploy/prometheus/*.rules.yml (the files promtool tests), and the
// dashboard ConfigMap holds deploy/grafana/gatehouse.json byte for byte.
func TestMonitoringFromTheTestedFiles(t *testing.T) {
	r, err := Render(chartDir, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var want []monitoringv1.RuleGroup
	files, _ := filepath.Glob(filepath.Join("..", "prometheus", "*.rules.yml"))
	if len(files) == 0 {
		t.Fatal("no deploy/prometheus/*.rules.yml")
	}
	for _, f := range files { // Glob sorts, as the chart's .Files.Glob does
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Groups []monitoringv1.RuleGroup `json:"groups"`
		}
		if err := yaml.UnmarshalStrict(b, &doc); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		want = append(want, doc.Groups...)
	}
	pr := r.Objects.PrometheusRules["gatehouse"]
	if pr == nil {
		t.Fatal("no PrometheusRule gatehouse")
	}
	if !reflect.DeepEqual(pr.Spec.Groups, want) {
		got, _ := yaml.Marshal(pr.Spec.Groups)
		w, _ := yaml.Marshal(want)
		t.Errorf("the PrometheusRule differs from deploy/prometheus/*.rules.yml (run `%s`)\ngot:\n%s\nwant:\n%s", Regenerate, got, w)
	}
	n := 0
	for _, g := range want {
		n += len(g.Rules)
	}
	if n < 10 {
		t.Errorf("only %d rules", n)
	}
	dash, err := os.ReadFile(filepath.Join("..", "grafana", "gatehouse.json"))
	if err != nil {
		t.Fatal(err)
	}
	cm := r.Objects.ConfigMaps["gatehouse-dashboard"]
	if cm == nil || strings.TrimSpace(cm.Data["gatehouse.json"]) != strings.TrimSpace(string(dash)) {
		t.Error("the dashboard ConfigMap differs from deploy/grafana/gatehouse.json")
	}
}

// TestGeneratedFilesAreCurrent: the chart's copies of the rules and the
// dashboard and deploy/k8s/gatehouse.yaml are what helmgen writes now.
func TestGeneratedFilesAreCurrent(t *testing.T) {
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	files, err := Generated(root)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join(root, name))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s is stale or missing (%v): run `%s` and commit the result", name, err, Regenerate)
		}
	}
	extra, _ := filepath.Glob(filepath.Join(root, Chart, "files", "*", "*"))
	for _, f := range extra {
		rel, _ := filepath.Rel(root, f)
		if _, ok := files[rel]; !ok {
			t.Errorf("%s is not generated from deploy/: remove it (run `%s`)", rel, Regenerate)
		}
	}
}

// TestChartVersionIsTheRelease: Chart.yaml's version and appVersion are
// gatehouse's release.
func TestChartVersionIsTheRelease(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(chartDir, "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Version    string `json:"version"`
		AppVersion string `json:"appVersion"`
	}
	if err := yaml.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	if c.Version != version.Release || c.AppVersion != version.Release {
		t.Errorf("Chart.yaml: version %q, appVersion %q; gatehouse's release is %q", c.Version, c.AppVersion, version.Release)
	}
}

// TestLargeNumbersReachTheConfig: a values file's large integers reach
// gatehouse's parser as the integers written (not 6.7108864e+07).
func TestLargeNumbersReachTheConfig(t *testing.T) {
	r, err := Render(chartDir, []string{filepath.Join("testdata", "large-numbers.yaml")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := parseConfig(t, r.Objects.ConfigMaps["gatehouse-config"].Data["gatehouse.yaml"])
	if cfg.Ingest.MaxUnverifiedBytes != 67108864 || cfg.Providers["stripe"].MaxBodyBytes != 2097152 {
		t.Errorf("max_unverified_bytes %d, max_body_bytes %d", cfg.Ingest.MaxUnverifiedBytes, cfg.Providers["stripe"].MaxBodyBytes)
	}
}
